"""A deploy that waits: ``WorkloadReadiness``, a custom resource that completes only when a
deployment's workload is ready (the Deployment's replicas available, or the HyperPod IEC's
``DeploymentComplete``), and fails the stack with the pod's reason, so CloudFormation rolls back.

**Mechanism.** A CDK ``custom_resources.Provider`` with ``on_event`` and ``is_complete``
handlers (its Step Functions waiter calls ``is_complete`` every ``QUERY_INTERVAL_S``):
:class:`ReadinessProvider`, construct id ``MlccReadiness``. One per cluster:
:class:`~mlcc_constructs.aws.serving_cluster.ServingCluster` makes it in the cluster's stack
(``ServingCluster.readiness``) and each ``ServedModel`` given it (``ServedModelProps.readiness``)
adds only its custom resource and the ``Role`` that lets the waiter read its workload, so a
serving stack holds its own objects and not a copy of the waiter's 22 resources. A
``ServedModel`` without one makes it at its stack's root, shared by that stack's models.

Its Lambda (:mod:`mlcc_constructs.aws._readiness_lambda`) reads the workload through the
Kubernetes API with its own identity, not the cluster's kubectl provider: that provider's role is
cluster admin (AmazonEKSClusterAdminPolicy) and its handler only applies and reads JSONPath
values (``KubernetesObjectValue`` waits for a value to exist, at most the kubectl Lambda's
15 minutes), so reusing it would give a waiter admin rights and still no readiness rule. The
Lambda signs an EKS token (presigned STS ``GetCallerIdentity``; no IAM permission needed) and
calls the API server over HTTPS, trusting only the cluster's CA, from the cluster's VPC.

**Least privilege.**

* IAM: the role may write its own log group's streams and manage the Lambda's network
  interfaces (what Lambda in a VPC needs); nothing else. No AWS-managed policy.
* Kubernetes: an EKS access entry for the role with no access policy, only the Kubernetes group
  ``mlcc-readiness``; a ``Role`` per deployment lets that group ``get`` the workload by name and
  ``list`` pods and events in its namespace (:mod:`mlcc_constructs.core.serving.readiness` says
  why not AmazonEKSViewPolicy).
* Network: its own security group, egress only TCP 443 to the cluster security group, which
  admits it on 443 (``ApiIngress``). The API endpoint is private by default.

**Timing** (:mod:`mlcc_constructs.core.serving.prepare.ready_timeout`): the handler fails the
resource at the ready timeout plus a grace; the resource's ``ServiceTimeout`` is past that and
the provider's ``total_timeout`` past every deadline, all under CloudFormation's hour.

**Updates and deletion.** The resource's ``Digest`` is a hash of the deployment's objects: any
change updates it, and it waits again, judging only the new generation. Delete returns at once.

Children of a :class:`WorkloadReadiness` (ids are a contract): ``Access`` (the ``Role`` and
``RoleBinding``, applied by the kubectl provider) and the custom resource: ``Wait`` with the
stack's own waiter, ``ClusterWait`` with the cluster's.
Children of :class:`ReadinessProvider`: ``SecurityGroup``, ``ApiIngress``, ``Logs``, ``Role``,
``OnEvent``, ``IsComplete``, ``Provider``, ``Access`` (the access entry).

Moving from a stack's own waiter to the cluster's (``ServedModelProps.readiness``) removes
the stack's ``MlccReadiness`` resources and gives its resources another ``ServiceToken``, which
CloudFormation cannot update ("Updates aren't supported": AWS::CloudFormation::CustomResource,
CloudFormation template reference). Hence the two ids: the move replaces ``Wait`` with
``ClusterWait`` (a new logical id), which is harmless (deleting one returns at once; creating
one returns as soon as the workload is ready), and the diff guard refuses a service-token
update in place (:func:`~mlcc_constructs.core.platform.replacement_rules.forced_replacements`).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import cast

import aws_cdk as cdk
from aws_cdk import (
    aws_ec2 as ec2,
    aws_eks as eks_l1,
    aws_eks_v2 as eks,
    aws_iam as iam,
    aws_lambda as lambda_,
    aws_logs as logs,
    custom_resources as cr,
)
from constructs import Construct, IConstruct

from mlcc_constructs.aws import _readiness_lambda
from mlcc_constructs.aws._iam import grant
from mlcc_constructs.aws.kubernetes_objects import KubernetesObjects, KubernetesObjectsProps
from mlcc_constructs.core.serving.kinds import _readiness
from mlcc_constructs.core.serving.prepare.ready_timeout import (
    PROVIDER_TOTAL_TIMEOUT_S,
    QUERY_INTERVAL_S,
)
from mlcc_constructs.core.serving.readiness import WAITER_GROUP, ReadinessTarget, waiter_statements
from mlcc_constructs.core.support.errors import fail
from mlcc_constructs.core.support.typecheck import check_fields

PROVIDER_ID = "MlccReadiness"
RESOURCE_TYPE = "Custom::MlccWorkloadReadiness"
RUNTIME = lambda_.Runtime.PYTHON_3_14
HANDLER_TIMEOUT_S = 60
"""One ``is_complete`` call: three API reads of at most 10 s each, and the token."""
LOG_RETENTION = logs.RetentionDays.THREE_MONTHS
_RULES_PATH = "mlcc_constructs/core/serving/kinds/_readiness.py"


def asset_files() -> Mapping[str, str]:
    """The Lambda asset's files (path -> text): the handler as ``index.py`` and the readiness
    rules at their package path (a namespace package there: no ``__init__`` files)."""
    return {
        "index.py": Path(_readiness_lambda.__file__).read_text(encoding="utf-8"),
        _RULES_PATH: Path(_readiness.__file__).read_text(encoding="utf-8"),
    }


_MADE: dict[str, str] = {}  # temporary folder -> the asset folder this process made there


def asset_directory() -> str:
    """A folder holding exactly :func:`asset_files`, named by their hash: CDK hashes an asset by
    its files' names and contents, so the template is the same wherever it is synthesised. A
    folder of that name holding anything else (a ``__pycache__`` someone's run left) is made
    anew. Checked once per process while it exists (every serving stack asks for it: reading
    and hashing the files each time cost about 6 ms a stack)."""
    root = tempfile.gettempdir()
    if root not in _MADE or not Path(_MADE[root]).is_dir():
        _MADE[root] = _asset_directory()
    return _MADE[root]


def _asset_directory() -> str:
    files = asset_files()
    digest = hashlib.sha256()
    for name in sorted(files):
        digest.update(name.encode() + b"\0" + files[name].encode() + b"\0")
    folder = Path(tempfile.gettempdir(), f"mlcc-readiness-{digest.hexdigest()[:16]}")
    if _holds_exactly(folder, files):
        return str(folder)
    staging = Path(tempfile.mkdtemp(prefix="mlcc-readiness-staging-"))
    for name, text in files.items():
        (staging / name).parent.mkdir(parents=True, exist_ok=True)
        (staging / name).write_text(text, encoding="utf-8")
    if folder.exists():
        shutil.rmtree(folder, ignore_errors=True)
    try:
        os.replace(staging, folder)  # atomic: parallel synths see a whole folder or none
    except OSError:  # another process made it first
        shutil.rmtree(staging, ignore_errors=True)
    if not _holds_exactly(folder, files):  # pragma: no cover - a race lost twice
        raise fail("the readiness Lambda's asset folder could not be made", value=str(folder))
    return str(folder)


def _holds_exactly(folder: Path, files: Mapping[str, str]) -> bool:
    if not folder.is_dir():
        return False
    found = {str(p.relative_to(folder)) for p in folder.rglob("*") if not p.is_dir()}
    return found == set(files) and all(
        (folder / name).read_text(encoding="utf-8") == text for name, text in files.items()
    )


class ReadinessProvider(Construct):
    """The readiness waiter of one cluster (module doc): ``service_token`` for the resources,
    ``access_entry`` (what a resource must wait for), ``endpoint`` and
    ``certificate_authority`` of the cluster's API."""

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        cluster: eks.ICluster | eks.Cluster,
        subnets: ec2.SubnetSelection,
    ) -> None:
        super().__init__(scope, id)
        self.cluster = cluster
        try:
            vpc, cluster_sg = cluster.vpc, cluster.cluster_security_group_id
            endpoint = cluster.cluster_endpoint
            authority = cluster.cluster_certificate_authority_data
        except RuntimeError as error:  # jsii: an imported cluster without these attributes
            raise fail(
                "the deploy waits for the workload through the cluster's API, and the cluster "
                "lacks an attribute it needs",
                where=self.node.path,
                value=str(error).splitlines()[0][:200],
                allowed="an eks.Cluster, or one imported with vpc, cluster_security_group_id, "
                "cluster_endpoint and cluster_certificate_authority_data",
                fix="pass those to eks.Cluster.from_cluster_attributes, or set "
                "wait_for_ready=False in ServedModelProps",
            ) from error
        self.endpoint, self.certificate_authority = endpoint, authority
        self.security_group = ec2.SecurityGroup(
            self,
            "SecurityGroup",
            vpc=vpc,
            description="mlcc readiness waiter: reaches the EKS API endpoint only",
            allow_all_outbound=False,
        )
        self.security_group.add_egress_rule(
            ec2.Peer.security_group_id(cluster_sg), ec2.Port.tcp(443), "the EKS API endpoint"
        )
        ec2.CfnSecurityGroupIngress(
            self,
            "ApiIngress",
            group_id=cluster_sg,
            source_security_group_id=self.security_group.security_group_id,
            ip_protocol="tcp",
            from_port=443,
            to_port=443,
            description="mlcc readiness waiter to the EKS API",
        )
        log_group = logs.LogGroup(
            self, "Logs", retention=LOG_RETENTION, removal_policy=cdk.RemovalPolicy.DESTROY
        )
        role = iam.Role(
            self,
            "Role",
            assumed_by=cast(iam.IPrincipal, iam.ServicePrincipal("lambda.amazonaws.com")),
            description="mlcc readiness waiter: reads one namespace's workloads through EKS",
        )
        grant(role, waiter_statements(log_group.log_group_arn))
        code = lambda_.Code.from_asset(asset_directory())
        functions = {
            name: lambda_.Function(
                self,
                name,
                runtime=RUNTIME,
                handler=f"index.{handler}",
                code=code,
                role=role,
                timeout=cdk.Duration.seconds(HANDLER_TIMEOUT_S),
                memory_size=256,
                log_group=log_group,
                vpc=vpc,
                vpc_subnets=subnets,
                security_groups=[self.security_group],
                description=f"mlcc readiness waiter: {handler}",
            )
            for name, handler in (("OnEvent", "on_event"), ("IsComplete", "is_complete"))
        }
        self.provider = cr.Provider(
            self,
            "Provider",
            on_event_handler=functions["OnEvent"],
            is_complete_handler=functions["IsComplete"],
            query_interval=cdk.Duration.seconds(QUERY_INTERVAL_S),
            total_timeout=cdk.Duration.seconds(PROVIDER_TOTAL_TIMEOUT_S),
        )
        _acknowledge_framework(functions, self.provider)
        self.access_entry = eks_l1.CfnAccessEntry(
            self,
            "Access",
            cluster_name=cluster.cluster_name,
            principal_arn=role.role_arn,
            type="STANDARD",
            kubernetes_groups=[WAITER_GROUP],
        )

    @property
    def service_token(self) -> str:
        return self.provider.service_token

    @staticmethod
    def of(
        scope: Construct,
        cluster: eks.ICluster | eks.Cluster,
        subnets: ec2.SubnetSelection,
        given: ReadinessProvider | None = None,
    ) -> ReadinessProvider:
        """``given`` (the cluster's waiter), else the stack's own (created on first use). A
        waiter serves one cluster: one of another cluster is refused, naming the fix."""
        stack = cdk.Stack.of(scope)
        found = given or stack.node.try_find_child(PROVIDER_ID)
        if found is None:
            return ReadinessProvider(stack, PROVIDER_ID, cluster=cluster, subnets=subnets)
        if not isinstance(found, ReadinessProvider):  # a check, not an assert: kept under -O
            raise fail(
                f"the stack's {PROVIDER_ID!r} construct is not a readiness waiter",
                where=scope.node.path,
                value=found.node.path,
                fix=f"give the stack's other construct another id than {PROVIDER_ID!r}, or pass "
                "the cluster's waiter (ServingCluster.readiness)",
            )
        if found.cluster is not cluster:
            raise fail(
                "a readiness waiter serves one cluster, and this ServedModel is on another",
                where=scope.node.path,
                value=found.node.path,
                fix="pass the ServedModel's own cluster's waiter (ServingCluster.readiness), "
                "put the ServedModels of each cluster in their own stack, or set "
                "wait_for_ready=False",
            )
        return found


def _arn_text(function: IConstruct) -> str:
    resource = function.node.default_child
    assert isinstance(resource, cdk.CfnElement)
    return f"<{cdk.Stack.of(function).get_logical_id(resource)}.Arn>:*"


def _acknowledge_framework(
    functions: Mapping[str, lambda_.Function], provider: cr.Provider
) -> None:
    """The cdk-nag findings of what ``custom_resources.Provider`` creates (its three framework
    Lambdas, their roles and the waiter state machine are aws-cdk-lib's), with reasons."""
    framework = provider.node.find_child
    invoked = [
        *functions.values(),
        framework("framework-isComplete"),
        framework("framework-onTimeout"),
    ]
    findings = [
        (
            f"AwsSolutions-IAM5[Resource::{_arn_text(function)}]",
            "the provider framework (aws-cdk-lib) may invoke every version of the readiness "
            "handlers and of its own functions, and nothing else",
        )
        for function in invoked
    ]
    findings += [
        (
            "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/"
            "AWSLambdaBasicExecutionRole]",
            "the provider framework's Lambdas (aws-cdk-lib) write their logs with the "
            "AWS-managed basic execution policy; the readiness handlers' own role has none",
        ),
        (
            "AwsSolutions-L1",
            "the provider framework's Lambda runtime is chosen by aws-cdk-lib (pinned in "
            "requirements.lock) and moves with its upgrades",
        ),
        (
            "AwsSolutions-SF1",
            "the waiter state machine's execution history would record every event, including "
            "CloudFormation's presigned response URL; each judgement is in the handlers' log group",
        ),
        (
            "AwsSolutions-SF2",
            "the provider framework's waiter state machine (aws-cdk-lib) offers no X-Ray "
            "tracing; it only retries the isComplete handler",
        ),
    ]
    for finding, reason in findings:
        cdk.Validations.of(provider).acknowledge(cdk.Acknowledgment(id=finding, reason=reason))


@dataclass(frozen=True, kw_only=True)
class WorkloadReadinessProps:
    """Props of :class:`WorkloadReadiness`."""

    target: ReadinessTarget
    """What to wait for (:func:`~mlcc_constructs.core.serving.readiness.readiness_target`)."""
    cluster: eks.ICluster | eks.Cluster
    """The cluster (its kubectl provider applies the ``Role``; its API is read)."""
    subnets: ec2.SubnetSelection | None = None
    """Where the waiter's Lambda runs when this makes it; default ``None``: the VPC's private
    subnets with egress (it needs no egress: only the API endpoint, inside the VPC)."""
    provider: ReadinessProvider | None = None
    """The cluster's waiter (``ServingCluster.readiness``); default ``None``: the stack's own, made
    on first use."""

    def __post_init__(self) -> None:
        check_fields(self)


class WorkloadReadiness(Construct):
    """Completes when the workload is ready (module doc). ``resource``: the custom resource."""

    def __init__(self, scope: Construct, id: str, *, props: WorkloadReadinessProps) -> None:
        super().__init__(scope, id)
        target = props.target
        subnets = props.subnets or ec2.SubnetSelection(
            subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS
        )
        provider = ReadinessProvider.of(self, props.cluster, subnets, props.provider)
        self.access = KubernetesObjects(
            self,
            "Access",
            props=KubernetesObjectsProps(
                cluster=props.cluster, objects=[entry.object for entry in target.access]
            ),
        )
        self.resource = cdk.CustomResource(
            self,
            "Wait" if props.provider is None else "ClusterWait",
            service_token=provider.service_token,
            resource_type=RESOURCE_TYPE,
            service_timeout=cdk.Duration.seconds(target.timing.service_timeout_s),
            properties={
                "ClusterName": props.cluster.cluster_name,
                "Endpoint": provider.endpoint,
                "CertificateAuthority": provider.certificate_authority,
                "Kind": target.kind,
                "Namespace": target.namespace,
                "Name": target.name,
                "Path": target.path,
                "DeadlineSeconds": str(target.timing.deadline_s),
                "ReadyTimeoutSeconds": str(target.timeout_s),
                "Digest": target.digest,
                **(
                    {
                        "AddressKind": target.address.kind,
                        "AddressName": target.address.name,
                        "AddressPath": target.address.path,
                    }
                    if target.address is not None
                    else {}
                ),
            },
        )
        self.address: str | None = (
            self.resource.get_att_string("Address") if target.address is not None else None
        )
        """Where the endpoint answers (the load balancer's DNS name), read once ready; ``None``
        when the deployment has no load balancer of the cluster's."""
        # Readable only once the access entry maps the group and the Role binds it.
        self.resource.node.add_dependency(self.access, provider.access_entry)
