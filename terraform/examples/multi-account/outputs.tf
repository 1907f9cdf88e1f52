output "hub_role_arn" {
  description = "The hub role: the hub chart's aws.roleArn."
  value       = module.hub.role_arn
}

output "hub_helm_values" {
  description = "Values file for the mirrorhub-hub chart (helm install ... -f <(terraform output -raw hub_helm_values))."
  value       = yamlencode(module.hub.helm_values)
}

output "agent_helm_values" {
  description = "Values file for the mirrorhub-agent chart in each follower, by follower."
  value = {
    for k, f in { a = module.follower_a, b = module.follower_b } : k => yamlencode({
      clusterName = f.mirror_cluster.metadata.name
      hubAccess   = { enabled = true, group = f.kubernetes_groups[0] }
    })
  }
}

output "follower_role_arns" {
  description = "The follower roles, by follower."
  value       = { a = module.follower_a.role_arn, b = module.follower_b.role_arn }
}

output "external_ids" {
  description = "The ExternalId of each follower role, by follower."
  value       = { a = module.follower_a.external_id, b = module.follower_b.external_id }
}

output "mirror_clusters" {
  description = "The MirrorCluster objects, by follower."
  value       = { a = module.follower_a.mirror_cluster, b = module.follower_b.mirror_cluster }
}

output "mirror_clusters_manifest" {
  description = "Both MirrorClusters as one multi-document YAML for kubectl apply -f - in the management cluster."
  value       = join("---\n", [module.follower_a.mirror_cluster_manifest, module.follower_b.mirror_cluster_manifest])
}

output "aws_auth_map_roles" {
  description = "Legacy aws-auth mapRoles entries, by follower: only for clusters still in CONFIG_MAP mode (see the follower module's README)."
  value       = { a = module.follower_a.aws_auth_map_roles, b = module.follower_b.aws_auth_map_roles }
}

output "public_access_cidrs" {
  description = "By follower: the publicAccessCidrs its cluster needs for the hub (empty without hub_egress_cidrs); apply them with aws eks update-cluster-config (docs/multicluster.md, Networking)."
  value       = { a = module.follower_a.public_access_cidrs, b = module.follower_b.public_access_cidrs }
}

output "endpoint_access" {
  description = "By follower: its API endpoint, public and/or private, and its publicAccessCidrs now."
  value       = { a = module.follower_a.endpoint_access, b = module.follower_b.endpoint_access }
}
