# One provider per account. Each one either uses a named profile or assumes an administration
# role in its account (e.g. OrganizationAccountAccessRole) from your base credentials, the usual
# setup for an AWS Organization. Providers cannot be created with for_each, hence one block per
# follower: copy follower_b to add a third.

provider "aws" {
  alias   = "management"
  region  = var.management.region
  profile = var.management.profile

  dynamic "assume_role" {
    for_each = var.management.assume_role_arn == null ? [] : [var.management.assume_role_arn]
    content {
      role_arn     = assume_role.value
      session_name = "terraform-mirrorhub"
    }
  }

  default_tags {
    tags = var.tags
  }
}

provider "aws" {
  alias   = "follower_a"
  region  = var.follower_a.region
  profile = var.follower_a.profile

  dynamic "assume_role" {
    for_each = var.follower_a.assume_role_arn == null ? [] : [var.follower_a.assume_role_arn]
    content {
      role_arn     = assume_role.value
      session_name = "terraform-mirrorhub"
    }
  }

  default_tags {
    tags = var.tags
  }
}

provider "aws" {
  alias   = "follower_b"
  region  = var.follower_b.region
  profile = var.follower_b.profile

  dynamic "assume_role" {
    for_each = var.follower_b.assume_role_arn == null ? [] : [var.follower_b.assume_role_arn]
    content {
      role_arn     = assume_role.value
      session_name = "terraform-mirrorhub"
    }
  }

  default_tags {
    tags = var.tags
  }
}
