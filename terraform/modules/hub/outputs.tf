output "role_arn" {
  description = "ARN of the hub role: the hub chart's aws.roleArn (IRSA), and the hub_role_arn of every follower module."
  value       = aws_iam_role.this.arn
}

output "role_name" {
  description = "Name of the hub role."
  value       = aws_iam_role.this.name
}

output "role_unique_id" {
  description = "Stable unique id of the hub role (AROA...)."
  value       = aws_iam_role.this.unique_id
}

output "service_account_subject" {
  description = "The Kubernetes subject the role trusts: system:serviceaccount:<namespace>:<service_account>."
  value       = local.subject
}

output "helm_values" {
  description = "Values for the mirrorhub-hub chart: aws.roleArn for IRSA (empty with Pod Identity only, where the association injects the role)."
  value = {
    aws = {
      roleArn = local.irsa ? aws_iam_role.this.arn : ""
    }
    serviceAccount = {
      name = var.service_account
    }
  }
}
