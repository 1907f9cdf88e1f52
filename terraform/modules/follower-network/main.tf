# The hub's private path into a follower's API endpoint, as far as the follower's account can
# open it: TCP 443 on the cluster security group (EKS's own, carried by the control plane's
# network interfaces) from each hub CIDR. The path itself (peering or Transit Gateway, routes,
# Route 53 Resolver rules for the endpoint's name) is the network team's.
data "aws_eks_cluster" "this" {
  name = var.cluster_name
}

resource "aws_vpc_security_group_ingress_rule" "hub" {
  for_each = toset(var.hub_ingress_cidrs)

  security_group_id = data.aws_eks_cluster.this.vpc_config[0].cluster_security_group_id
  description       = "mirrorhub hub to the Kubernetes API server"
  cidr_ipv4         = each.value
  ip_protocol       = "tcp"
  from_port         = 443
  to_port           = 443
  tags              = var.tags
}
