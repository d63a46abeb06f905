"""How long the cluster's CloudWatch log groups keep their logs.

* The EKS control-plane log group ``/aws/eks/<cluster>/cluster``: EKS creates it when control-plane
  logging is on, with no retention ("Never expire"), and CloudWatch bills every GB-month it
  keeps (https://docs.aws.amazon.com/eks/latest/userguide/control-plane-logs.html: "CloudWatch
  Logs ingestion, archive storage, and data scanning rates apply"). Kept
  :data:`CONTROL_PLANE_LOG_DAYS` days: the audit log stays long enough to investigate an
  incident of the last quarter.
* The VPC flow log group (created by the VPC's flow log): kept :data:`FLOW_LOG_DAYS` days
  (aws-cdk-lib's default for that group is 731 days).

Retention values are the ones CloudWatch Logs accepts (``RetentionInDays`` of
``AWS::Logs::LogGroup`` and ``PutRetentionPolicy``).
"""

from __future__ import annotations

from mlcc_constructs.core.support.errors import Problem

CONTROL_PLANE_LOG_DAYS = 90
FLOW_LOG_DAYS = 30
RETENTION_DAYS = (
    1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557,
    2922, 3288, 3653,
)  # fmt: skip


def control_plane_log_group(cluster_name: str) -> str:
    """The log group EKS writes a cluster's control-plane logs to."""
    return f"/aws/eks/{cluster_name}/cluster"


def retention_problems(days: object, *, where: str, pointer: str) -> list[Problem]:
    """A retention CloudWatch Logs does not accept."""
    if isinstance(days, int) and not isinstance(days, bool) and days in RETENTION_DAYS:
        return []
    return [
        Problem(
            message="not a CloudWatch Logs retention",
            where=where,
            pointer=pointer,
            value=days,
            allowed=", ".join(str(d) for d in RETENTION_DAYS) + " days",
            fix="pick the nearest of those values",
        )
    ]
