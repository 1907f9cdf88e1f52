output "security_group_id" {
  description = "The cluster security group the rules are on."
  value       = data.aws_eks_cluster.this.vpc_config[0].cluster_security_group_id
}

output "rule_ids" {
  description = "The ingress rules, by CIDR."
  value       = { for c, r in aws_vpc_security_group_ingress_rule.hub : c => r.security_group_rule_id }
}
