# One management account running the hub, two follower accounts with one EKS cluster each.
#
# The hub role may assume exactly the follower roles, and each follower role trusts exactly the
# hub role. To avoid a dependency cycle the hub's policy names the follower roles by their
# (predictable) ARNs, built from each follower account's id and the shared role name.

data "aws_partition" "current" {
  provider = aws.management
}

data "aws_caller_identity" "follower_a" {
  provider = aws.follower_a
}

data "aws_caller_identity" "follower_b" {
  provider = aws.follower_b
}

locals {
  follower_role_arns = {
    a = "arn:${data.aws_partition.current.partition}:iam::${data.aws_caller_identity.follower_a.account_id}:role/${var.follower_role_name}"
    b = "arn:${data.aws_partition.current.partition}:iam::${data.aws_caller_identity.follower_b.account_id}:role/${var.follower_role_name}"
  }
}

module "hub" {
  source = "../../modules/hub"
  providers = {
    aws = aws.management
  }

  name                      = var.hub_role_name
  namespace                 = var.namespace
  oidc_provider_arn         = var.management.oidc_provider_arn
  enable_pod_identity       = var.management.enable_pod_identity
  pod_identity_cluster_name = var.management.cluster_name
  follower_role_arns        = values(local.follower_role_arns)
}

module "follower_a" {
  source = "../../modules/follower"
  providers = {
    aws = aws.follower_a
  }

  name                  = var.follower_role_name
  hub_role_arn          = module.hub.role_arn
  external_id           = var.follower_a.external_id
  allow_tag_session     = var.management.enable_pod_identity
  cluster_name          = var.follower_a.cluster_name
  agent_namespace       = var.namespace
  mirror_cluster_labels = var.follower_a.labels
  hub_egress_cidrs      = var.follower_a.hub_egress_cidrs
}

module "follower_b" {
  source = "../../modules/follower"
  providers = {
    aws = aws.follower_b
  }

  name                  = var.follower_role_name
  hub_role_arn          = module.hub.role_arn
  external_id           = var.follower_b.external_id
  allow_tag_session     = var.management.enable_pod_identity
  cluster_name          = var.follower_b.cluster_name
  agent_namespace       = var.namespace
  mirror_cluster_labels = var.follower_b.labels
  hub_egress_cidrs      = var.follower_b.hub_egress_cidrs
}
