variable "management" {
  description = "The management account, where the hub runs: region, credentials (profile and/or a role to assume), and how the hub's ServiceAccount gets the role (IRSA via the cluster's OIDC provider and/or EKS Pod Identity)."
  type = object({
    region              = string
    profile             = optional(string)
    assume_role_arn     = optional(string)
    oidc_provider_arn   = optional(string)
    enable_pod_identity = optional(bool, false)
    cluster_name        = optional(string)
  })

  validation {
    condition     = var.management.oidc_provider_arn != null || var.management.enable_pod_identity
    error_message = "Set management.oidc_provider_arn (IRSA) and/or management.enable_pod_identity = true."
  }
}

variable "follower_a" {
  description = "First follower account: region and credentials, its EKS cluster, the ExternalId its role requires, and the labels of its MirrorCluster."
  type = object({
    region          = string
    cluster_name    = string
    external_id     = string
    profile         = optional(string)
    assume_role_arn = optional(string)
    labels          = optional(map(string), {})
    # Networking (docs/multicluster.md): the hub's public egress addresses (NAT gateway EIPs,
    # the proxy's), added to the public_access_cidrs output.
    hub_egress_cidrs = optional(list(string), [])
  })
}

variable "follower_b" {
  description = "Second follower account (same shape as follower_a)."
  type = object({
    region          = string
    cluster_name    = string
    external_id     = string
    profile         = optional(string)
    assume_role_arn = optional(string)
    labels          = optional(map(string), {})
    # Networking (docs/multicluster.md): the hub's public egress addresses (NAT gateway EIPs,
    # the proxy's), added to the public_access_cidrs output.
    hub_egress_cidrs = optional(list(string), [])
  })
}

variable "namespace" {
  description = "Namespace of the hub and of every agent (the charts' release namespace)."
  type        = string
  default     = "mirrorhub-system"
}

variable "hub_role_name" {
  description = "Name of the hub role in the management account."
  type        = string
  default     = "mirrorhub-hub"
}

variable "follower_role_name" {
  description = "Name of the follower role, the same in every follower account."
  type        = string
  default     = "mirrorhub-follower"
}

variable "tags" {
  description = "Tags for every resource (provider default_tags)."
  type        = map(string)
  default     = { "app.kubernetes.io/part-of" = "mirrorhub" }
}
