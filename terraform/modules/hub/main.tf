locals {
  irsa = var.oidc_provider_arn != null
  # oidc-provider/oidc.eks.eu-west-1.amazonaws.com/id/ABC -> oidc.eks.eu-west-1.amazonaws.com/id/ABC
  oidc_issuer = !local.irsa ? "" : trimsuffix(replace(
    var.oidc_provider_url != null ? var.oidc_provider_url : replace(var.oidc_provider_arn, "/^.*:oidc-provider//", ""),
    "/^https?:///", ""
  ), "/")
  subject = "system:serviceaccount:${var.namespace}:${var.service_account}"

  # Pod Identity sessions carry session tags, so assuming a follower role from them needs
  # sts:TagSession as well (and the follower's trust must allow it).
  assume_actions = var.enable_pod_identity ? ["sts:AssumeRole", "sts:TagSession"] : ["sts:AssumeRole"]
}

data "aws_iam_policy_document" "trust" {
  dynamic "statement" {
    for_each = local.irsa ? [1] : []

    content {
      sid     = "IRSA"
      effect  = "Allow"
      actions = ["sts:AssumeRoleWithWebIdentity"]

      principals {
        type        = "Federated"
        identifiers = [var.oidc_provider_arn]
      }

      condition {
        test     = "StringEquals"
        variable = "${local.oidc_issuer}:sub"
        values   = [local.subject]
      }

      condition {
        test     = "StringEquals"
        variable = "${local.oidc_issuer}:aud"
        values   = ["sts.amazonaws.com"]
      }
    }
  }

  dynamic "statement" {
    for_each = var.enable_pod_identity ? [1] : []

    content {
      sid     = "EksPodIdentity"
      effect  = "Allow"
      actions = ["sts:AssumeRole", "sts:TagSession"]

      principals {
        type        = "Service"
        identifiers = ["pods.eks.amazonaws.com"]
      }

      # The Pod Identity agent tags every session with the pod's namespace and ServiceAccount:
      # only the hub's ServiceAccount may use this role, whatever associations exist.
      condition {
        test     = "StringEquals"
        variable = "aws:RequestTag/kubernetes-namespace"
        values   = [var.namespace]
      }

      condition {
        test     = "StringEquals"
        variable = "aws:RequestTag/kubernetes-service-account"
        values   = [var.service_account]
      }
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

  lifecycle {
    precondition {
      condition     = local.irsa || var.enable_pod_identity
      error_message = "The hub role needs a way in: set oidc_provider_arn (IRSA) and/or enable_pod_identity = true."
    }
  }
}

# What the hub may do with its own credentials: assume the listed follower roles, nothing else.
#
# No eks:DescribeCluster (and no eks:ListClusters) here. The hub describes a follower cluster
# with the follower role's session (shared/src/aws/cluster-access.ts), which the follower module
# allows on exactly that cluster's ARN. With the hub's own session the call could not work
# anyway: EKS has no resource-based policies, so an identity policy in the management account
# cannot open a cluster in another account, and the hub never calls EKS as itself.
data "aws_iam_policy_document" "permissions" {
  count = length(var.follower_role_arns) > 0 ? 1 : 0

  statement {
    sid       = "AssumeFollowerRoles"
    effect    = "Allow"
    actions   = local.assume_actions
    resources = sort(distinct(var.follower_role_arns))
  }
}

# IAM refuses a policy without statements, so a hub with no followers yet has no inline policy.
resource "aws_iam_role_policy" "this" {
  count = length(var.follower_role_arns) > 0 ? 1 : 0

  name   = "mirrorhub-hub"
  role   = aws_iam_role.this.id
  policy = data.aws_iam_policy_document.permissions[0].json
}

moved {
  from = aws_iam_role_policy.this
  to   = aws_iam_role_policy.this[0]
}

resource "aws_eks_pod_identity_association" "this" {
  count = var.enable_pod_identity && var.pod_identity_cluster_name != null ? 1 : 0

  cluster_name    = var.pod_identity_cluster_name
  namespace       = var.namespace
  service_account = var.service_account
  role_arn        = aws_iam_role.this.arn
  tags            = var.tags
}
