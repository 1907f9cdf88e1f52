################################################################################
# Role
################################################################################

variable "name" {
  description = "Name of the hub's IAM role."
  type        = string
  default     = "mirrorhub-hub"

  validation {
    condition     = can(regex("^[\\w+=,.@-]{1,64}$", var.name))
    error_message = "name must be 1-64 characters of letters, digits and +=,.@_-."
  }
}

variable "path" {
  description = "IAM path of the role."
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
  default     = "mirrorhub hub: assumes the mirrorhub follower role of each follower account"
}

variable "permissions_boundary_arn" {
  description = "ARN of a permissions boundary for the role, if your organisation requires one."
  type        = string
  default     = null
}

variable "max_session_duration" {
  description = "Maximum session duration of the role in seconds (3600-43200)."
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
# Who may use the role: the hub's ServiceAccount in the management cluster
################################################################################

variable "namespace" {
  description = "Namespace the hub chart is installed in (the ServiceAccount's namespace)."
  type        = string
  default     = "mirrorhub-system"

  validation {
    condition     = can(regex("^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$", var.namespace))
    error_message = "namespace must be a DNS-1123 label (lowercase letters, digits, '-', at most 63)."
  }
}

variable "service_account" {
  description = "Name of the hub's ServiceAccount (the hub chart's default is mirrorhub-hub)."
  type        = string
  default     = "mirrorhub-hub"

  validation {
    condition     = can(regex("^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$", var.service_account))
    error_message = "service_account must be a DNS-1123 subdomain."
  }
}

variable "oidc_provider_arn" {
  description = "IRSA: ARN of the management cluster's IAM OIDC provider (arn:aws:iam::<account>:oidc-provider/oidc.eks.<region>.amazonaws.com/id/<id>). Null disables IRSA."
  type        = string
  default     = null

  validation {
    condition     = var.oidc_provider_arn == null || can(regex("^arn:aws[a-z-]*:iam::[0-9]{12}:oidc-provider/[^/].*$", var.oidc_provider_arn))
    error_message = "oidc_provider_arn must look like arn:aws:iam::<account>:oidc-provider/<issuer host and path>."
  }
}

variable "oidc_provider_url" {
  description = "IRSA: issuer URL of the OIDC provider, with or without https://. Default: taken from oidc_provider_arn."
  type        = string
  default     = null
}

variable "enable_pod_identity" {
  description = "EKS Pod Identity: let pods.eks.amazonaws.com assume the role (sts:AssumeRole + sts:TagSession) for the hub's ServiceAccount."
  type        = bool
  default     = false
}

variable "pod_identity_cluster_name" {
  description = "EKS Pod Identity: name of the management cluster; when set (and enable_pod_identity is true) the module also creates the Pod Identity association for namespace/service_account. Null: create the association elsewhere."
  type        = string
  default     = null
}

################################################################################
# What the role may do
################################################################################

variable "follower_role_arns" {
  description = "ARNs of the follower roles (the follower module's role_arn output) the hub may assume: the only resources its policy names. Nothing else can be assumed, and the hub gets no EKS permission of its own (it describes each follower cluster with that follower's session)."
  type        = list(string)
  default     = []

  validation {
    condition     = alltrue([for arn in var.follower_role_arns : can(regex("^arn:aws[a-z-]*:iam::[0-9]{12}:role/[\\w+=,.@/-]+$", arn))])
    error_message = "Each follower_role_arns entry must be a role ARN without wildcards: arn:aws:iam::<account>:role/<path/name>."
  }
}
