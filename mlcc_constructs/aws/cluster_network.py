"""The interface endpoints of the VPC ``ServingCluster`` creates
(:mod:`mlcc_constructs.core.platform.vpc_network`).

* ``Vpc/EndpointSecurityGroup``: the endpoints' security group, admitting HTTPS (443) from the
  VPC's CIDR only, no egress.
* ``Vpc/EcrApiEndpoint``, ``Vpc/EcrDkrEndpoint``, ``Vpc/StsEndpoint``, ``Vpc/LogsEndpoint``:
  ``AWS::EC2::VPCEndpoint`` (``Interface``) in the private subnets, private DNS on, so the
  nodes pull images, fetch credentials and ship logs without the NAT gateway.
"""

from __future__ import annotations

from aws_cdk import aws_ec2 as ec2

from mlcc_constructs.core.platform.vpc_network import (
    ENDPOINT_PORT,
    INTERFACE_ENDPOINTS,
    VPC_CIDR,
)

SECURITY_GROUP_ID = "EndpointSecurityGroup"


def add_interface_endpoints(vpc: ec2.Vpc) -> tuple[ec2.InterfaceVpcEndpoint, ...]:
    """The interface endpoints of :data:`INTERFACE_ENDPOINTS` in ``vpc``'s private subnets."""
    group = ec2.SecurityGroup(
        vpc,
        SECURITY_GROUP_ID,
        vpc=vpc,
        description="mlcc VPC interface endpoints: HTTPS from the VPC",
        allow_all_outbound=False,
    )
    group.add_ingress_rule(
        # The literal CIDR (the VPC's own, set from the same constant): a token would hide
        # from cdk-nag's open-ingress rule that nothing outside the VPC is admitted.
        ec2.Peer.ipv4(VPC_CIDR),
        ec2.Port.tcp(ENDPOINT_PORT),
        "HTTPS from the VPC",
    )
    return tuple(
        vpc.add_interface_endpoint(
            child_id,
            service=ec2.InterfaceVpcEndpointAwsService(service),
            subnets=ec2.SubnetSelection(subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS),
            security_groups=[group],
            private_dns_enabled=True,
            open=False,
        )
        for child_id, service in INTERFACE_ENDPOINTS
    )
