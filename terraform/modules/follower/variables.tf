################################################################################
# Role
################################################################################

variable "name" {
  description = "Name of the follower role (the role the hub assumes in this account)."
  type        = string
  default     = "mirrorhub-follower"

  validation {
    condition     = can(regex("^[\\w+=,.@-]{1,64}$", var.name))
    error_message = "name must be 1-64 characters of letters, digits and +=,.@_-."
  }
}

variable "path" {
  description = "IAM path of the role. Keep \"/\" if the cluster may ever use the aws-auth ConfigMap, which cannot match roles with a path."
  type        = string
  default     = "/"

  validation {
    condition     = can(regex("^/([\\x21-\\x7E]{0,510}/)?$", var.path))
    error_message = "path must start and end with '/' (e.g. \"/\" or \"/mirrorhub/\")."
  }
}

variable "description" {
  description = "Description of the role."
  type        = string
  default     = "mirrorhub follower: assumed by the mirrorhub hub to deliver into the agent namespace"
}

variable "permissions_boundary_arn" {
  description = "ARN of a permissions boundary for the role, if your organisation requires one."
  type        = string
  default     = null
}

variable "max_session_duration" {
  description = "Maximum session duration in seconds. The hub's own credentials are a role session (IRSA, Pod Identity), so AWS caps its sessions at one hour whatever this says."
  type        = number
  default     = 3600

  validation {
    condition     = var.max_session_duration >= 3600 && var.max_session_duration <= 43200
    error_message = "max_session_duration must be between 3600 and 43200 seconds."
  }
}

variable "tags" {
  description = "Tags for every resource this module creates."
  type        = map(string)
  default     = {}
}

################################################################################
# Trust
################################################################################

variable "hub_role_arn" {
  description = "ARN of the hub role (the hub module's role_arn output), the only principal trusted."
  type        = string

  validation {
    condition     = can(regex("^arn:aws[a-z-]*:iam::[0-9]{12}:role/[\\w+=,.@/-]+$", var.hub_role_arn))
    error_message = "hub_role_arn must be a role ARN without wildcards: arn:aws:iam::<account>:role/<path/name>."
  }
}

variable "external_id" {
  description = "sts:ExternalId the hub must pass (MirrorCluster spec.eks.externalId); the role's trust policy requires it. Required: 2-1224 characters of letters, digits and +=,.@:/_-. Not a secret, but unique per follower, so a MirrorCluster cannot be pointed at another tenant's role by mistake."
  type        = string
  nullable    = false

  validation {
    # RE2 repeats at most 1000 times, hence the length check apart.
    condition     = length(var.external_id) >= 2 && length(var.external_id) <= 1224 && can(regex("^[\\w+=,.@:/-]+$", var.external_id))
    error_message = "external_id must be 2-1224 characters of letters, digits and +=,.@:/_- (what AWS allows for sts:ExternalId; no spaces, never empty). The follower role trusts the hub only with this ExternalId: choose one value per follower, e.g. \"mirrorhub-<cluster>-<random>\", and set the same value as the MirrorCluster's spec.eks.externalId (the mirror_cluster output carries it)."
  }
}

variable "allow_tag_session" {
  description = "Also trust sts:TagSession (with the same ExternalId condition). Needed when the hub runs with EKS Pod Identity, whose sessions carry session tags."
  type        = bool
  default     = false
}

################################################################################
# Cluster access
################################################################################

variable "cluster_name" {
  description = "Name of this account's EKS cluster, in the provider's region."
  type        = string

  validation {
    condition     = can(regex("^[0-9A-Za-z][A-Za-z0-9_-]{0,99}$", var.cluster_name))
    error_message = "cluster_name must be a valid EKS cluster name (1-100 characters, starting with a letter or digit)."
  }
}

variable "agent_namespace" {
  description = "Namespace of the mirrorhub agent (agent chart release namespace): the only namespace the hub writes to."
  type        = string
  default     = "mirrorhub-system"

  validation {
    condition     = can(regex("^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$", var.agent_namespace))
    error_message = "agent_namespace must be a DNS-1123 label."
  }
}

variable "kubernetes_groups" {
  description = "Kubernetes groups of the access entry: the agent chart's hubAccess.group binds them with a Role in the agent namespace."
  type        = list(string)
  default     = ["mirrorhub-hub"]

  validation {
    condition     = length(var.kubernetes_groups) > 0 && alltrue([for g in var.kubernetes_groups : length(g) > 0 && !startswith(g, "system:") && !startswith(g, "eks:")])
    error_message = "kubernetes_groups needs at least one group, none empty and none starting with system: (no system:masters) or eks:."
  }
}

variable "create_access_entry" {
  description = "Create the EKS access entry. Set false for a cluster whose authentication mode is still CONFIG_MAP and map the role with the aws_auth_map_roles output instead."
  type        = bool
  default     = true
}

################################################################################
# Removed: EKS access policies
################################################################################

# Earlier versions could associate an EKS access policy (default AmazonEKSEditPolicy) with the
# hub's access entry. Every AWS-managed access policy, even AmazonEKSViewPolicy scoped to the
# agent namespace, grants the hub more than it needs, and none covers mirrorhub's
# MirrorDeliveries, so the module no longer creates one. These two inputs stay only to refuse a
# configuration that still asks for it, with a message instead of "Unsupported argument".

variable "associate_access_policy" {
  description = "Removed (always false): the module associates no EKS access policy. Setting it to true fails validation."
  type        = bool
  default     = false
  nullable    = false

  validation {
    condition     = !var.associate_access_policy
    error_message = "associate_access_policy is no longer supported: the hub's EKS access entry gets no access policy, since every AWS access policy (even AmazonEKSViewPolicy) grants more than the hub needs and none covers MirrorDeliveries. Install the agent chart with hubAccess.enabled = true and hubAccess.group set to this module's kubernetes_groups[0] (that Role is the hub's whole grant, in the agent namespace only), then remove associate_access_policy and access_policy_arn from this module block; the next apply deletes any association an earlier version created."
  }
}

variable "access_policy_arn" {
  description = "Removed (always null): the module associates no EKS access policy. Setting any ARN fails validation."
  type        = string
  default     = null

  validation {
    condition     = var.access_policy_arn == null
    error_message = "access_policy_arn is no longer supported: the module associates no EKS access policy with the hub's access entry, not even AmazonEKSViewPolicy, because each grants more than the hub needs. Grant the hub access with the agent chart's hub-access Role (hubAccess.enabled = true, hubAccess.group = this module's kubernetes_groups[0]) and remove access_policy_arn (and associate_access_policy) from this module block."
  }
}

################################################################################
# MirrorCluster
################################################################################

variable "mirror_cluster_name" {
  description = "metadata.name of the MirrorCluster in the management cluster. Default: cluster_name lowercased."
  type        = string
  default     = null

  validation {
    condition     = var.mirror_cluster_name == null || can(regex("^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$", var.mirror_cluster_name))
    error_message = "mirror_cluster_name must be a DNS-1123 subdomain."
  }
}

variable "mirror_cluster_labels" {
  description = "Labels of the MirrorCluster (what destination.clusters.selector matches, e.g. env = \"prod\")."
  type        = map(string)
  default     = {}
}

################################################################################
# Networking: what the module can say about the hub's path to the API server (the security-group
# rule for a private path is the follower-network module's). Routes, peering or Transit Gateway
# attachments, Route 53 Resolver rules and NAT are the network team's.
################################################################################

variable "hub_egress_cidrs" {
  description = "Public addresses the hub's connections leave from over the internet (the management VPC's NAT gateway EIPs as /32, or the egress proxy's). They are added to the public_access_cidrs output: the publicAccessCidrs the cluster needs for the hub, which the module does not apply (it does not own the cluster)."
  type        = list(string)
  default     = []

  validation {
    condition     = alltrue([for c in var.hub_egress_cidrs : can(cidrhost(c, 0))])
    error_message = "hub_egress_cidrs must be CIDRs (203.0.113.10/32)."
  }
}
