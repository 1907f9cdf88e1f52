variable "cluster_name" {
  description = "Name of the follower's EKS cluster, in the provider's account and region."
  type        = string
}

variable "hub_ingress_cidrs" {
  description = "IPv4 CIDRs the hub connects from over a private path (VPC peering, Transit Gateway): the hub VPC's pod or node subnets. Each gets an ingress rule for TCP 443 on the cluster security group."
  type        = list(string)

  validation {
    condition     = length(var.hub_ingress_cidrs) > 0 && alltrue([for c in var.hub_ingress_cidrs : can(cidrhost(c, 0)) && !strcontains(c, ":")])
    error_message = "hub_ingress_cidrs must be one or more IPv4 CIDRs (10.20.0.0/16)."
  }
}

variable "tags" {
  description = "Tags for every rule."
  type        = map(string)
  default     = {}
}
