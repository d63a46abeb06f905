"""Retention of the cluster's CloudWatch log groups
(:mod:`mlcc_constructs.core.platform.log_retention`).

* ``ControlPlaneLogRetention``: the EKS control-plane log group ``/aws/eks/<name>/cluster``
  belongs to EKS, not to the stack: EKS creates it when logging is on, so a deployed cluster has
  it already, and an ``AWS::Logs::LogGroup`` of that name would fail to create there ("already
  exists"; CloudFormation does not adopt a resource on create). aws-cdk-lib's ``LogRetention``
  (a custom resource that creates the group when it is missing and sets its retention) works on
  both a new and a deployed cluster; its handler is one singleton Lambda per stack.
* The VPC flow log group is the stack's own ``AWS::Logs::LogGroup`` (``Vpc/FlowLog/LogGroup``):
  its ``RetentionInDays`` is set in place (an update, no replacement).
"""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_ec2 as ec2, aws_eks_v2 as eks, aws_logs as logs
from constructs import Construct

from mlcc_constructs.core.platform.log_retention import RETENTION_DAYS, control_plane_log_group

RETENTION_ID = "ControlPlaneLogRetention"


def retain_control_plane_logs(
    owner: Construct, cluster: eks.Cluster, cluster_name: str, days: int
) -> logs.LogRetention:
    """Keep the control-plane logs of ``cluster`` for ``days`` days (child ``RetentionId``)."""
    retention = logs.LogRetention(
        owner,
        RETENTION_ID,
        log_group_name=control_plane_log_group(cluster_name),
        retention=_retention(days),
    )
    retention.node.add_dependency(cluster)
    _acknowledge_handler(cdk.Stack.of(owner))
    return retention


def retain_flow_logs(vpc: ec2.Vpc, days: int) -> None:
    """Keep the flow logs of the VPC ServingCluster creates for ``days`` days."""
    group = vpc.node.find_child("FlowLog").node.find_child("LogGroup").node.default_child
    assert isinstance(group, logs.CfnLogGroup)
    group.retention_in_days = days


def _retention(days: int) -> logs.RetentionDays:
    """The ``RetentionDays`` member of ``days``: its finite members are CloudWatch's retentions
    in ascending order (``ONE_DAY`` .. ``TEN_YEARS``), as :data:`RETENTION_DAYS` lists them."""
    finite = [member for member in logs.RetentionDays if member.name != "INFINITE"]
    return dict(zip(RETENTION_DAYS, finite, strict=True))[days]


def _acknowledge_handler(stack: cdk.Stack) -> None:
    """cdk-nag findings of the LogRetention handler aws-cdk-lib creates (once per stack)."""
    handler = stack.node.try_find_child("LogRetentionaae0aa3c5b4d4f87b02d85b201efdd8a")
    if handler is None:
        return
    for finding, reason in (
        (
            "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/"
            "AWSLambdaBasicExecutionRole]",
            "aws-cdk-lib's log retention handler writes its own logs with the AWS-managed basic "
            "execution policy",
        ),
        (
            "AwsSolutions-IAM5[Resource::*]",
            "aws-cdk-lib's log retention handler sets the retention of the log group it is given "
            "(logs:PutRetentionPolicy and DeleteRetentionPolicy); aws-cdk-lib scopes it to *",
        ),
    ):
        cdk.Validations.of(handler).acknowledge(cdk.Acknowledgment(id=finding, reason=reason))
