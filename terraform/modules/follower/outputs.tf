output "role_arn" {
  description = "ARN of the follower role: MirrorCluster spec.eks.roleArn, and one of the hub module's follower_role_arns."
  value       = aws_iam_role.this.arn
}

output "role_name" {
  description = "Name of the follower role."
  value       = aws_iam_role.this.name
}

output "external_id" {
  description = "The ExternalId the role requires (MirrorCluster spec.eks.externalId)."
  value       = var.external_id
}

output "cluster_name" {
  description = "Name of the EKS cluster."
  value       = var.cluster_name
}

output "cluster_region" {
  description = "Region of the EKS cluster."
  value       = local.region
}

output "cluster_arn" {
  description = "ARN of the EKS cluster."
  value       = data.aws_eks_cluster.this.arn
}

output "access_entry_arn" {
  description = "ARN of the EKS access entry (null when create_access_entry is false)."
  value       = try(aws_eks_access_entry.hub[0].access_entry_arn, null)
}

output "kubernetes_groups" {
  description = "Kubernetes groups of the hub's identity in this cluster: the agent chart's hubAccess.group."
  value       = var.kubernetes_groups
}

output "mirror_cluster" {
  description = "The MirrorCluster object for this follower (for kubernetes_manifest or your own rendering)."
  value       = local.mirror_cluster
}

output "mirror_cluster_manifest" {
  description = "The MirrorCluster as YAML, ready for kubectl apply -f - in the management cluster."
  value       = yamlencode(local.mirror_cluster)
}

output "aws_auth_map_roles" {
  description = "Legacy: the mapRoles entry (YAML list) for clusters still authenticating with the aws-auth ConfigMap. Merge it into the existing mapRoles; never replace the ConfigMap. It maps to kubernetes_groups only, never system:masters."
  value = yamlencode([{
    # aws-auth matches role ARNs without their path.
    rolearn  = "arn:${local.partition}:iam::${local.account}:role/${aws_iam_role.this.name}"
    username = "mirrorhub-hub:{{SessionName}}"
    groups   = var.kubernetes_groups
  }])
}

output "endpoint_access" {
  description = "How the cluster's API endpoint is reachable: public and/or private, and the publicAccessCidrs it has now (docs/multicluster.md, Networking)."
  value = {
    endpoint            = data.aws_eks_cluster.this.endpoint
    public              = try(local.vpc_config.endpoint_public_access, null)
    private             = try(local.vpc_config.endpoint_private_access, null)
    public_access_cidrs = try(local.vpc_config.public_access_cidrs, [])
  }
}

output "public_access_cidrs" {
  description = "The publicAccessCidrs the cluster needs so the hub reaches its public endpoint: the current ones plus hub_egress_cidrs. Apply with `aws eks update-cluster-config --name <cluster> --resources-vpc-config publicAccessCidrs=<these, comma-separated>`, or in the cluster's own terraform. Empty when hub_egress_cidrs is."
  value       = length(var.hub_egress_cidrs) == 0 ? [] : distinct(concat(try(local.vpc_config.public_access_cidrs, []), var.hub_egress_cidrs))
}
