data "aws_partition" "current" {}
data "aws_caller_identity" "current" {}
data "aws_region" "current" {}

# Looked up, not created: the module adds access to an existing cluster. Also fails the plan
# early when the cluster does not exist in this account and region.
data "aws_eks_cluster" "this" {
  name = var.cluster_name
}

locals {
  partition = data.aws_partition.current.partition
  account   = data.aws_caller_identity.current.account_id
  region    = data.aws_region.current.region
  trusted   = var.allow_tag_session ? ["sts:AssumeRole", "sts:TagSession"] : ["sts:AssumeRole"]

  authentication_mode = try(data.aws_eks_cluster.this.access_config[0].authentication_mode, "")
  mirror_cluster_name = coalesce(var.mirror_cluster_name, lower(replace(var.cluster_name, "_", "-")))

  # What the hub needs to reach this cluster (MirrorCluster, group mirrorhub.io/v1alpha1).
  mirror_cluster = {
    apiVersion = "mirrorhub.io/v1alpha1"
    kind       = "MirrorCluster"
    metadata = merge(
      { name = local.mirror_cluster_name },
      length(var.mirror_cluster_labels) > 0 ? { labels = var.mirror_cluster_labels } : {},
    )
    spec = {
      eks = {
        name       = var.cluster_name
        region     = local.region
        roleArn    = aws_iam_role.this.arn
        externalId = var.external_id
      }
      agentNamespace = var.agent_namespace
    }
  }
}

data "aws_iam_policy_document" "trust" {
  statement {
    sid     = "MirrorhubHub"
    effect  = "Allow"
    actions = local.trusted

    principals {
      type        = "AWS"
      identifiers = [var.hub_role_arn]
    }

    condition {
      test     = "StringEquals"
      variable = "sts:ExternalId"
      values   = [var.external_id]
    }
  }
}

resource "aws_iam_role" "this" {
  name                  = var.name
  path                  = var.path
  description           = var.description
  assume_role_policy    = data.aws_iam_policy_document.trust.json
  max_session_duration  = var.max_session_duration
  permissions_boundary  = var.permissions_boundary_arn
  force_detach_policies = true
  tags                  = var.tags
}

# The hub describes the cluster (endpoint and CA) with this role's session, so the role needs
# exactly that, on exactly this cluster. Everything else it does is Kubernetes RBAC.
data "aws_iam_policy_document" "permissions" {
  statement {
    sid       = "DescribeThisCluster"
    effect    = "Allow"
    actions   = ["eks:DescribeCluster"]
    resources = [data.aws_eks_cluster.this.arn]
  }
}

resource "aws_iam_role_policy" "this" {
  name   = "mirrorhub-follower"
  role   = aws_iam_role.this.id
  policy = data.aws_iam_policy_document.permissions.json
}

resource "aws_eks_access_entry" "hub" {
  count = var.create_access_entry ? 1 : 0

  cluster_name      = var.cluster_name
  principal_arn     = aws_iam_role.this.arn
  kubernetes_groups = var.kubernetes_groups
  type              = "STANDARD"
  tags              = var.tags

  lifecycle {
    precondition {
      condition     = local.authentication_mode != "CONFIG_MAP"
      error_message = "Cluster ${var.cluster_name} authenticates with the aws-auth ConfigMap only (authentication mode CONFIG_MAP): set create_access_entry = false and add the aws_auth_map_roles output to aws-auth, or switch the cluster to API_AND_CONFIG_MAP."
    }
  }
}

# No aws_eks_access_policy_association, on purpose: every AWS-managed access policy, even
# AmazonEKSViewPolicy scoped to the agent namespace, grants the hub more than it needs, and none
# covers mirrorhub's MirrorDeliveries. The agent chart's hub-access Role is the whole grant.
# (variables.tf refuses the inputs that used to add one; the next apply after an upgrade removes
# an association an earlier version of this module created.)

################################################################################
# Networking
################################################################################

locals {
  vpc_config = try(data.aws_eks_cluster.this.vpc_config[0], null)
}
