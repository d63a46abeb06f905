"""The AWS Load Balancer Controller's IAM permissions, as data (the HyperPod inference operator
add-on runs the controller). Source (checked 2026-11-30): the policy the HyperPod model
deployment setup page installs, ``docs/install/iam_policy.json`` of
kubernetes-sigs/aws-load-balancer-controller v2.13.0
(https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-model-deployment-setup.html).
No action is a wildcard; resources are ``*`` where the controller names them at run time, and
``why`` says so.
"""

from __future__ import annotations

from types import MappingProxyType

from mlcc_constructs.core.platform.iam_statement import Arns, Statement

_CLUSTER_TAG = "aws:RequestTag/elbv2.k8s.aws/cluster"
_CLUSTER_RESOURCE_TAG = "aws:ResourceTag/elbv2.k8s.aws/cluster"


def alb_controller_statements(arns: Arns) -> tuple[Statement, ...]:
    """The AWS Load Balancer Controller's role (v2.13.0's documented policy, statement for
    statement; the controller creates and tags load balancers, target groups and security
    groups named at run time, and scopes changes by the ``elbv2.k8s.aws/cluster`` tag)."""
    elb = "elasticloadbalancing"
    balancers = (
        arns.any_region(elb, "targetgroup/*/*"),
        arns.any_region(elb, "loadbalancer/net/*/*"),
        arns.any_region(elb, "loadbalancer/app/*/*"),
    )
    security_groups = (arns.any_region("ec2", "security-group/*"),)
    tagged = MappingProxyType({"Null": {_CLUSTER_RESOURCE_TAG: "false"}})
    tagging = MappingProxyType({"Null": {_CLUSTER_TAG: "false"}})
    retag = MappingProxyType({"Null": {_CLUSTER_TAG: "true", _CLUSTER_RESOURCE_TAG: "false"}})
    why = "the load balancer controller manages resources it names at run time; changes are "
    why += "scoped by its elbv2.k8s.aws/cluster tag where the API allows"
    return (
        Statement(
            sid="ElbServiceLinkedRole",
            actions=("iam:CreateServiceLinkedRole",),
            resources=("*",),
            conditions=MappingProxyType(
                {"StringEquals": {"iam:AWSServiceName": "elasticloadbalancing.amazonaws.com"}}
            ),
            why="only the Elastic Load Balancing service-linked role (condition)",
        ),
        Statement(
            sid="Describe",
            actions=(
                "ec2:DescribeAccountAttributes",
                "ec2:DescribeAddresses",
                "ec2:DescribeAvailabilityZones",
                "ec2:DescribeCoipPools",
                "ec2:DescribeInstances",
                "ec2:DescribeInternetGateways",
                "ec2:DescribeIpamPools",
                "ec2:DescribeNetworkInterfaces",
                "ec2:DescribeRouteTables",
                "ec2:DescribeSecurityGroups",
                "ec2:DescribeSubnets",
                "ec2:DescribeTags",
                "ec2:DescribeVpcPeeringConnections",
                "ec2:DescribeVpcs",
                "ec2:GetCoipPoolUsage",
                "ec2:GetSecurityGroupsForVpc",
                f"{elb}:DescribeCapacityReservation",
                f"{elb}:DescribeListenerAttributes",
                f"{elb}:DescribeListenerCertificates",
                f"{elb}:DescribeListeners",
                f"{elb}:DescribeLoadBalancerAttributes",
                f"{elb}:DescribeLoadBalancers",
                f"{elb}:DescribeRules",
                f"{elb}:DescribeSSLPolicies",
                f"{elb}:DescribeTags",
                f"{elb}:DescribeTargetGroupAttributes",
                f"{elb}:DescribeTargetGroups",
                f"{elb}:DescribeTargetHealth",
                f"{elb}:DescribeTrustStores",
            ),
            resources=("*",),
            why="Describe and Get actions have no resource-level permission",
        ),
        Statement(
            sid="CertificatesAndFirewalls",
            actions=(
                "acm:DescribeCertificate",
                "acm:ListCertificates",
                "cognito-idp:DescribeUserPoolClient",
                "iam:GetServerCertificate",
                "iam:ListServerCertificates",
                "shield:CreateProtection",
                "shield:DeleteProtection",
                "shield:DescribeProtection",
                "shield:GetSubscriptionState",
                "waf-regional:AssociateWebACL",
                "waf-regional:DisassociateWebACL",
                "waf-regional:GetWebACL",
                "waf-regional:GetWebACLForResource",
                "wafv2:AssociateWebACL",
                "wafv2:DisassociateWebACL",
                "wafv2:GetWebACL",
                "wafv2:GetWebACLForResource",
            ),
            resources=("*",),
            why="certificates, user pools and web ACLs are named by Ingress annotations at run "
            "time",
        ),
        Statement(
            sid="SecurityGroupIngress",
            actions=("ec2:AuthorizeSecurityGroupIngress", "ec2:RevokeSecurityGroupIngress"),
            resources=("*",),
            why=why,
        ),
        Statement(
            sid="SecurityGroupCreate",
            actions=("ec2:CreateSecurityGroup",),
            resources=("*",),
            why=why,
        ),
        Statement(
            sid="SecurityGroupTagOnCreate",
            actions=("ec2:CreateTags",),
            resources=security_groups,
            conditions=MappingProxyType(
                {
                    "StringEquals": {"ec2:CreateAction": "CreateSecurityGroup"},
                    "Null": {_CLUSTER_TAG: "false"},
                }
            ),
            why=why,
        ),
        Statement(
            sid="SecurityGroupRetag",
            actions=("ec2:CreateTags", "ec2:DeleteTags"),
            resources=security_groups,
            conditions=retag,
            why=why,
        ),
        Statement(
            sid="SecurityGroupManage",
            actions=(
                "ec2:AuthorizeSecurityGroupIngress",
                "ec2:DeleteSecurityGroup",
                "ec2:RevokeSecurityGroupIngress",
            ),
            resources=("*",),
            conditions=tagged,
            why=why,
        ),
        Statement(
            sid="LoadBalancerCreate",
            actions=(f"{elb}:CreateLoadBalancer", f"{elb}:CreateTargetGroup"),
            resources=("*",),
            conditions=tagging,
            why=why,
        ),
        Statement(
            sid="ListenersAndRules",
            actions=(
                f"{elb}:CreateListener",
                f"{elb}:CreateRule",
                f"{elb}:DeleteListener",
                f"{elb}:DeleteRule",
            ),
            resources=("*",),
            why=why,
        ),
        Statement(
            sid="LoadBalancerRetag",
            actions=(f"{elb}:AddTags", f"{elb}:RemoveTags"),
            resources=balancers,
            conditions=retag,
            why=why,
        ),
        Statement(
            sid="ListenerTags",
            actions=(f"{elb}:AddTags", f"{elb}:RemoveTags"),
            resources=(
                arns.any_region(elb, "listener/net/*/*/*"),
                arns.any_region(elb, "listener/app/*/*/*"),
                arns.any_region(elb, "listener-rule/net/*/*/*"),
                arns.any_region(elb, "listener-rule/app/*/*/*"),
            ),
            why=why,
        ),
        Statement(
            sid="LoadBalancerManage",
            actions=(
                f"{elb}:DeleteLoadBalancer",
                f"{elb}:DeleteTargetGroup",
                f"{elb}:ModifyCapacityReservation",
                f"{elb}:ModifyIpPools",
                f"{elb}:ModifyListenerAttributes",
                f"{elb}:ModifyLoadBalancerAttributes",
                f"{elb}:ModifyTargetGroup",
                f"{elb}:ModifyTargetGroupAttributes",
                f"{elb}:SetIpAddressType",
                f"{elb}:SetSecurityGroups",
                f"{elb}:SetSubnets",
            ),
            resources=("*",),
            conditions=tagged,
            why=why,
        ),
        Statement(
            sid="LoadBalancerTagOnCreate",
            actions=(f"{elb}:AddTags",),
            resources=balancers,
            conditions=MappingProxyType(
                {
                    "StringEquals": {
                        f"{elb}:CreateAction": ["CreateLoadBalancer", "CreateTargetGroup"]
                    },
                    "Null": {_CLUSTER_TAG: "false"},
                }
            ),
            why=why,
        ),
        Statement(
            sid="Targets",
            actions=(f"{elb}:DeregisterTargets", f"{elb}:RegisterTargets"),
            resources=(arns.any_region(elb, "targetgroup/*/*"),),
            why=why,
        ),
        Statement(
            sid="ListenerManage",
            actions=(
                f"{elb}:AddListenerCertificates",
                f"{elb}:ModifyListener",
                f"{elb}:ModifyRule",
                f"{elb}:RemoveListenerCertificates",
                f"{elb}:SetRulePriorities",
                f"{elb}:SetWebAcl",
            ),
            resources=("*",),
            why=why,
        ),
    )
