"""``ServedModel``: one prepared deployment applied to an EKS cluster by CloudFormation.

The objects are exactly the render pipeline's (:attr:`PreparedDeployment.objects`, what ``mlcc
render`` prints), in apply order, each its own ``KubernetesManifest`` applied by the cluster's
kubectl provider (:class:`~mlcc_constructs.aws.kubernetes_objects.KubernetesObjects`): its
logical id is a function of the object's kind, namespace and name
(:mod:`mlcc_constructs.core.serving.manifest_ids`), wherever the construct sits, so moving a
deployment between stacks or constructs never renames its resources.

Children:

* ``Namespace`` (with ``create_namespace``, unless the namespace is one every cluster has): the
  deployment's ``Namespace``, retained when it leaves the stack (it may hold objects the app does
  not own); every object depends on it. Several ``ServedModel``s of one namespace in one stack
  share the first one's: no flag, no ordering.

**Checks** (all of one model's problems at once, before anything is created): the deployment's
NetworkPolicy admits the cluster's real load balancer subnets, which an ``IServingCluster`` says
and a bare ``eks.ICluster`` cannot (refused for a deployment with a load balancer); a
``ServingCluster``'s GPU node pool offers its instance families; a HyperPod deployment fits the
instance groups of its operator's ``hyperpod_cluster`` (``HyperPodCluster.host``); and the rules
that span deployments hold among the ``ServedModel``s of one cluster, in whichever stacks they
sit (:func:`~mlcc_constructs.core.serving.spanning.spanning_problems`: no deployment or object
twice, no host and path claimed twice on a shared load balancer).
* ``Objects``: the deployment's objects. An object of a kind whose CRD the SageMaker HyperPod
  inference operator add-on installs (``InferenceEndpointConfig``) depends on the operator, so
  the CRD exists before it is applied (and the object is deleted before the add-on); such an
  object without an operator is refused.
* ``PodRole`` and ``PodIdentity`` (only when the pods act as a role of their own, the core's
  :func:`~mlcc_constructs.core.serving.prepare.aws_calls.pod_role_uses`: the deployment syncs
  Secrets Manager values, ``prepared.secrets.synced``, or its engine streams the ``s3://``
  model, ``model_load: stream``): the IAM role its pods act as, and the
  ``AWS::EKS::PodIdentityAssociation`` of the deployment's ServiceAccount with it (one role per
  ServiceAccount: EKS takes one association each); the objects are applied after the
  association, so the first pods already get the role. A streamed model's pods fetch the
  credentials from the Pod Identity agent themselves, which their NetworkPolicy admits (TCP 80
  at its link-local addresses); synced secrets are fetched by the Secrets Store CSI driver's
  provider.

**Pod identity.** The pods' role trusts ``pods.eks.amazonaws.com`` for ``sts:AssumeRole`` and
``sts:TagSession``, only for this cluster, namespace and ServiceAccount (the session tags
``eks-cluster-name``, ``kubernetes-namespace`` and ``kubernetes-service-account`` Pod Identity
sets: https://docs.aws.amazon.com/eks/latest/userguide/pod-id-role.html, "Setting
Conditions"). The pod's ``automountServiceAccountToken: false`` does not hide the credentials:
that field governs only the Kubernetes API token volume, and the EKS webhook adds its own
projected token volume and variables (``AWS_CONTAINER_CREDENTIALS_FULL_URI``,
``AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE``; for IRSA ``aws-iam-token`` with
``AWS_WEB_IDENTITY_TOKEN_FILE``, aws/amazon-eks-pod-identity-webhook pkg/handler).

A streamed model (``model_load: stream``): the role may read exactly the model prefix
(:mod:`mlcc_constructs.core.platform.model_stream_iam`: ``s3:GetObject`` on its objects,
``s3:ListBucket`` only under it); the engine's S3 clients find the credentials through their
default chains.

Secrets: the AWS provider of the Secrets Store CSI driver reads a pod's secrets with
the pod's own EKS Pod Identity (the SecretProviderClass says ``usePodIdentity: "true"``), so
each deployment reads exactly its own secrets. The role may
``secretsmanager:GetSecretValue`` and
``secretsmanager:DescribeSecret`` on those secrets only: the secret's ARN, or for a secret given
by name ``arn:<partition>:secretsmanager:<region>:<account>:secret:<name>-??????`` (the six
characters Secrets Manager appends; the policy of the provider's README,
aws/secrets-store-csi-driver-provider-aws a74182c, and
https://docs.aws.amazon.com/secretsmanager/latest/userguide/ascp-examples.html). Auto Mode runs
the Pod Identity agent itself: "You do not have to install the EKS Pod Identity Agent on EKS
Auto Mode clusters" (EKS User Guide ``automode/automode.adoc``, awsdocs/amazon-eks-user-guide
03bdcd18); another cluster needs the ``eks-pod-identity-agent`` add-on.
* ``Readiness`` (with ``wait_for_ready``, the default): a
  :class:`~mlcc_constructs.aws.readiness.WorkloadReadiness` after the objects: the deploy
  completes only when the workload is ready (the Deployment's replicas available, the IEC's
  ``DeploymentComplete``) within the deployment's ready timeout, and fails with the pod's
  reason otherwise, so CloudFormation rolls back. Its waiter is the cluster's
  (``ServedModelProps.readiness``: ``ServingCluster.readiness``), else one made at the stack's
  root (``MlccReadiness``) and shared by the stack's models.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeGuard, cast

import aws_cdk as cdk
from aws_cdk import (
    aws_ec2 as ec2,
    aws_eks_v2 as eks,
    aws_iam as iam,
    aws_kms as kms,
    aws_route53 as route53,
)
from constructs import Construct, IDependable

from mlcc_constructs.aws._iam import grant
from mlcc_constructs.aws._outputs import add_stack_outputs
from mlcc_constructs.aws._shared_on_cluster import join_cluster, stack_namespace
from mlcc_constructs.aws.imported_cluster import IServingCluster
from mlcc_constructs.aws.inference_operator import HyperPodInferenceOperator
from mlcc_constructs.aws.kubernetes_objects import KubernetesObjects, KubernetesObjectsProps
from mlcc_constructs.aws.readiness import (
    ReadinessProvider,
    WorkloadReadiness,
    WorkloadReadinessProps,
)
from mlcc_constructs.core.platform.inference_operator import ADDON_NAME
from mlcc_constructs.core.platform.load_balancing import alb_hosted_zone
from mlcc_constructs.core.platform.model_stream_iam import model_read_statements
from mlcc_constructs.core.serving.cluster_fit import gpu_pool_problems, load_balancer_problems
from mlcc_constructs.core.serving.endpoint.outputs import (
    endpoint_url,
    serving_outputs,
)
from mlcc_constructs.core.serving.kinds.registry import requirement
from mlcc_constructs.core.serving.prepare.aws_calls import pod_role_uses, pods_call_aws
from mlcc_constructs.core.serving.prepared import PreparedDeployment
from mlcc_constructs.core.serving.readiness import readiness_target
from mlcc_constructs.core.serving.spec.deployment import DeploymentSpec
from mlcc_constructs.core.serving.spec.endpoint import secret_resource
from mlcc_constructs.core.support.errors import Problem, fail, raise_if_any
from mlcc_constructs.core.support.typecheck import field_problems

POD_IDENTITY_PRINCIPAL = "pods.eks.amazonaws.com"
SECRET_READ_ACTIONS = ("secretsmanager:DescribeSecret", "secretsmanager:GetSecretValue")
# Namespaces every Kubernetes cluster has: never created (nor labelled) by a ServedModel.
BUILT_IN_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
_PROPS = "ServedModelProps"


@dataclass(frozen=True, kw_only=True)
class ServedModelProps:
    """Props of :class:`ServedModel`."""

    deployment: PreparedDeployment
    """The prepared deployment (``prepare(spec, context=RenderContext(...))``)."""
    cluster: eks.ICluster | eks.Cluster | IServingCluster
    """The cluster the objects are applied to: an
    :class:`~mlcc_constructs.aws.imported_cluster.IServingCluster` (a ``ServingCluster``, or
    ``ServingCluster.from_cluster_attributes`` of the team's own), whose load balancer subnets the
    deployment's NetworkPolicy must admit (checked: :mod:`mlcc_constructs.core.serving.
    cluster_fit`) and whose GPU node pool must offer its instance families; or a bare
    ``eks.ICluster`` with a kubectl provider, for a deployment without a load balancer of the
    cluster's (``endpoint.scheme: none``, or ``hyperpod-eks``), which is refused otherwise."""
    operator: HyperPodInferenceOperator | IDependable | None = None
    """What objects of the HyperPod inference operator's kinds wait for: the
    :class:`~mlcc_constructs.aws.inference_operator.HyperPodInferenceOperator` (its add-on) or any
    ``IDependable`` that installs the CRDs; default ``None``: the deployment may have no such object
    (a ``hyperpod-eks`` deployment is refused)."""
    create_namespace: bool = True
    """Default ``True``: apply the deployment's ``Namespace`` (retained) before its objects, unless
    it is built in (``default``, ``kube-system``, ...); ``False`` when the namespace exists or
    another construct applies it (several deployments of one namespace: the app's
    ``mlcc-<profile>-serving`` stack)."""
    wait_for_ready: bool = True
    """Default ``True``: the deploy waits until the workload is ready and fails (rolling back) with
    the pod's reason when it is not within the ready timeout
    (``DeploymentSpec.ready_timeout_seconds``, else computed); ``False``: it completes when the
    objects are applied. Waiting reads the cluster's API from its VPC: an imported cluster needs
    ``vpc``, ``cluster_security_group_id``, ``cluster_endpoint`` and
    ``cluster_certificate_authority_data``."""
    readiness: ReadinessProvider | None = None
    """The cluster's deploy waiter; default ``None``: the ``ServingCluster``'s
    (``ServingCluster.readiness``), else the stack's own (``MlccReadiness``, made on first use: 22
    resources per stack)."""
    readiness_subnets: ec2.SubnetSelection | None = None
    """Where the stack's own waiter's Lambda runs; default ``None``: the VPC's private subnets with
    egress."""
    declared_at: str | None = None
    """Where the deployment is declared (a spec file's entry), what the checks' problems name;
    default ``None``: the construct's path."""

    def __post_init__(self) -> None:
        raise_if_any(_text_problems(self) or field_problems(self, where=_PROPS))


def _text_problems(props: ServedModelProps) -> list[Problem]:
    """What the type check cannot see (jsii interfaces accept anything) or would print as a
    whole spec: a spec not prepared, a name where a resource belongs."""
    problems = []
    if isinstance(props.deployment, DeploymentSpec):
        problems.append(
            Problem(
                message="a DeploymentSpec is not a prepared deployment",
                where=_PROPS,
                pointer="/deployment",
                allowed="PreparedDeployment",
                fix="pass prepare(spec, context=RenderContext(account=..., region=..., "
                "profile=...))",
            )
        )
    if isinstance(props.cluster, str):
        problems.append(
            Problem(
                message="a cluster name is not a cluster",
                where=_PROPS,
                pointer="/cluster",
                value=props.cluster,
                allowed="eks.ICluster",
                fix="pass the cluster (ServingCluster.cluster, or "
                "eks.Cluster.from_cluster_attributes(scope, id, cluster_name=..., "
                "kubectl_provider=...))",
            )
        )
    if isinstance(props.operator, str):
        problems.append(
            Problem(
                message="an add-on name is not an operator",
                where=_PROPS,
                pointer="/operator",
                value=props.operator,
                allowed="HyperPodInferenceOperator or an IDependable (its add-on)",
                fix="pass the HyperPodInferenceOperator construct",
            )
        )
    return problems


class ServedModel(Construct):
    """One deployment's objects on a cluster (children: see the module). ``objects`` applies
    them (``objects.manifests``: logical id -> ``KubernetesManifest``); ``namespace`` is the
    ``Namespace``'s, or ``None``; ``pod_role`` and ``pod_identity`` are the pods' role and
    its association, or ``None`` (no Secrets Manager value, no streamed model; ``secrets_role``
    is ``pod_role`` when it reads secrets); ``readiness`` the deploy's wait, or ``None``."""

    def __init__(self, scope: Construct, id: str, *, props: ServedModelProps) -> None:
        super().__init__(scope, id)
        prepared = self._prepared = props.deployment
        given = props.cluster
        serving = given if _is_serving_cluster(given) else None
        cluster = serving.cluster if serving is not None else cast(eks.ICluster, given)
        where = props.declared_at or self.node.path
        raise_if_any(
            [
                *load_balancer_problems(
                    prepared,
                    serving.load_balancer_cidrs if serving is not None else None,
                    where=where,
                    cidrs_field="ServingCluster.from_cluster_attributes(load_balancer_cidrs=...)",
                ),
                *gpu_pool_problems(
                    prepared,
                    getattr(serving, "gpu_instance_families", None),
                    where=where,
                    pool_field="ServingClusterProps.gpu_instance_families",
                ),
            ]
        )
        # The deployments already on this cluster: checked before this one joins them.
        join_cluster(given, where, prepared)
        objects: Sequence[Mapping[str, Any]] = [entry.object for entry in prepared.objects]
        # The kinds registry says which objects need an add-on's CRD (an IEC: the operator's).
        required = [requirement(obj) for obj in objects]
        waits = [addon == ADDON_NAME for addon in required]
        operator = (
            props.operator.addon
            if isinstance(props.operator, HyperPodInferenceOperator)
            else props.operator
        )
        if operator is None and any(waits):
            obj = objects[waits.index(True)]
            metadata = obj.get("metadata") or {}
            raise fail(
                f"the deployment's {obj.get('kind')} {metadata.get('namespace')}/"
                f"{metadata.get('name')} needs the CRD of the EKS add-on {ADDON_NAME}, and no "
                "operator is given",
                where=self.node.path,
                fix="pass operator=<the cluster's HyperPodInferenceOperator> in ServedModelProps",
            )
        if (
            isinstance(props.operator, HyperPodInferenceOperator)
            and props.operator.gateway_role is None
            and prepared.spec.endpoint.gateway is not None
        ):
            # Without the add-on's gateway the InferenceGatewayConfig has no controller.
            raise fail(
                "the deployment asks for the Inference Gateway (endpoint.gateway), and the "
                "operator's add-on runs none",
                where=self.node.path,
                pointer="/operator",
                fix="build the operator with HyperPodInferenceOperatorProps("
                "inference_gateway=True), or drop endpoint.gateway",
            )
        target = readiness_target(prepared) if props.wait_for_ready else None
        alias_zone = self._alias_zone(
            prepared, reads_address=target is not None and target.address is not None
        )
        if isinstance(props.operator, HyperPodInferenceOperator) and any(waits):
            hyperpod = props.operator.hyperpod_cluster
            if hyperpod is not None:  # its instance groups must hold the deployment
                hyperpod.host(prepared, where=where)
        namespace = prepared.spec.namespace
        self.namespace: KubernetesObjects | None = None
        if props.create_namespace and namespace not in BUILT_IN_NAMESPACES:
            self.namespace = stack_namespace(self, cluster, namespace)
        self.pod_role: iam.Role | None = None
        self.pod_identity: eks.CfnPodIdentityAssociation | None = None
        if pod_role_uses(prepared):  # the core's rule: a streamed model, synced secrets
            self.pod_role = self._pod_role(prepared, cluster.cluster_name)
            self.pod_identity = eks.CfnPodIdentityAssociation(
                self,
                "PodIdentity",
                cluster_name=cluster.cluster_name,
                namespace=namespace,
                service_account=prepared.names.base,  # the deployment's ServiceAccount
                role_arn=self.pod_role.role_arn,
            )
        self.secrets_role = self.pod_role if prepared.secrets.synced else None
        """The pods' role when it reads their Secrets Manager values (else ``None``)."""
        self.objects = KubernetesObjects(
            self,
            "Objects",
            props=KubernetesObjectsProps(cluster=cluster, objects=objects),
        )
        if self.namespace is not None:
            self.objects.node.add_dependency(self.namespace)
        if self.pod_identity is not None:  # the first pods already read their secrets as it
            self.objects.node.add_dependency(self.pod_identity)
        for manifest, waits_for_operator in zip(
            self.objects.manifests.values(), waits, strict=True
        ):
            if waits_for_operator and operator is not None:
                manifest.node.add_dependency(operator)
        self.readiness: WorkloadReadiness | None = None
        if target is not None:
            self.readiness = WorkloadReadiness(
                self,
                "Readiness",
                props=WorkloadReadinessProps(
                    target=target,
                    cluster=cluster,
                    subnets=props.readiness_subnets,
                    provider=props.readiness or getattr(serving, "readiness", None),
                ),
            )
            # After every object (the workload and what it mounts), deleted before them.
            self.readiness.node.add_dependency(self.objects)
            if self.namespace is not None:
                self.readiness.node.add_dependency(self.namespace)
        self.endpoint_address: str | None = (
            self.readiness.address if self.readiness is not None else None
        )
        """The load balancer's DNS name, read from the Ingress once the workload is ready (a
        deploy-time value); ``None`` without a load balancer of the cluster's or a wait."""
        self.endpoint_url: str | None = endpoint_url(prepared, self.endpoint_address)
        """The endpoint's base URL (``https://<hostname>``, else the load balancer's), or
        ``None`` (:func:`~mlcc_constructs.core.serving.endpoint.outputs.endpoint_url`)."""
        self.alias_record = self._alias_record(prepared, alias_zone)

    def add_outputs(self, *, prefix: str | None = None) -> list[cdk.CfnOutput]:
        """Stack outputs that say where the endpoint is and how to call it (``EndpointUrl``,
        ``ServedModelName``, the API key's secret and command, ``CheckCommand``, the
        port-forward way in: :func:`~mlcc_constructs.core.serving.endpoint.outputs.
        serving_outputs`), children of this model, their logical ids ``<prefix><key>``
        (default: this model's construct id, ``ModelEndpointUrl``); ``cdk deploy`` prints
        them."""
        found = serving_outputs(
            self._prepared, address=self.endpoint_address, region=cdk.Stack.of(self).region
        )
        return add_stack_outputs(self, found, self.node.id if prefix is None else prefix)

    def _alias_zone(self, prepared: PreparedDeployment, *, reads_address: bool) -> str | None:
        """With ``endpoint.hosted_zone_id``: the region's ALB hosted zone the alias record
        names (checked before anything is made); ``None`` without a record to make."""
        endpoint = prepared.spec.endpoint
        if endpoint.hosted_zone_id is None or endpoint.hostname is None:
            return None
        if not reads_address:
            raise fail(
                "an alias record needs the load balancer's address, which this model's deploy "
                "does not read (wait_for_ready=False)",
                where=self.node.path,
                pointer="/deployment/spec/endpoint/hosted_zone_id",
                value=endpoint.hosted_zone_id,
                fix="keep wait_for_ready=True, or drop endpoint.hosted_zone_id",
            )
        return alb_hosted_zone(
            cdk.Stack.of(self).region,
            where=self.node.path,
            pointer="/deployment/spec/endpoint/hosted_zone_id",
        )

    def _alias_record(
        self, prepared: PreparedDeployment, zone: str | None
    ) -> route53.CfnRecordSet | None:
        """An A alias record of ``endpoint.hostname`` to the load balancer (in ALB hosted zone
        ``zone``), made once the deploy read its address; ``None`` without a zone."""
        endpoint = prepared.spec.endpoint
        if zone is None or self.endpoint_address is None or endpoint.hostname is None:
            return None
        return route53.CfnRecordSet(
            self,
            "Alias",
            hosted_zone_id=endpoint.hosted_zone_id,
            name=endpoint.hostname,
            type="A",
            alias_target=route53.CfnRecordSet.AliasTargetProperty(
                dns_name=self.endpoint_address, hosted_zone_id=zone, evaluate_target_health=True
            ),
        )

    def _pod_role(self, prepared: PreparedDeployment, cluster_name: str) -> iam.Role:
        """The role the pods act as (module doc): their synced secrets, their streamed model."""
        source = prepared.resolution.source
        streams = pods_call_aws(prepared)
        trust = iam.ServicePrincipal(POD_IDENTITY_PRINCIPAL).with_conditions(
            {
                "StringEquals": {
                    "aws:RequestTag/eks-cluster-name": cluster_name,
                    "aws:RequestTag/kubernetes-namespace": prepared.spec.namespace,
                    "aws:RequestTag/kubernetes-service-account": prepared.names.base,
                }
            }
        )
        reads = pod_role_uses(prepared)
        role = iam.Role(
            self,
            "PodRole",
            assumed_by=iam.SessionTagsPrincipal(trust),
            description=f"mlcc: the pods of {prepared.spec.namespace}/{prepared.names.base} "
            + " and ".join(reads),
        )
        if streams:
            assert source.bucket is not None and source.prefix is not None  # an s3:// model
            grant(
                role,
                model_read_statements(
                    bucket_name=source.bucket,
                    prefix=source.prefix,
                    partition=cdk.Stack.of(self).partition,
                ),
            )
        if prepared.secrets.synced:
            self._grant_secrets(role, prepared)
        return role

    def _grant_secrets(self, role: iam.Role, prepared: PreparedDeployment) -> None:
        """Let ``role`` read the deployment's synced secrets, exactly those (module doc)."""
        stack = cdk.Stack.of(self)
        resources = sorted(
            {
                secret_resource(
                    synced.source.secret,
                    partition=stack.partition,
                    region=stack.region,
                    account=stack.account,
                )
                for synced in prepared.secrets.synced
            }
        )
        # No cdk-nag acknowledgement: AwsSolutions-IAM5 flags '*' only (cdk-nag 3.0.2,
        # rules/iam/IAMNoWildcardPermissions: includes('*')), and '-??????' matches exactly the
        # six characters Secrets Manager appends to one secret's name, no other secret.
        role.add_to_policy(
            iam.PolicyStatement(
                sid="ReadSyncedSecrets", actions=list(SECRET_READ_ACTIONS), resources=resources
            )
        )

    def grant_secrets_key(self, key: kms.IKey) -> iam.Grant:
        """Let the pods decrypt their secrets with ``key`` (``kms:Decrypt``), for secrets
        encrypted with a customer managed key instead of ``aws/secretsmanager``."""
        if self.secrets_role is None:
            raise fail(
                "the deployment reads no Secrets Manager value: its pods have no role to grant to",
                where=self.node.path,
                fix="give the deployment endpoint.api_key_secret or an engine.secret_env entry "
                "from Secrets "
                "Manager, or grant nothing",
            )
        return key.grant_decrypt(self.secrets_role)


def _is_serving_cluster(cluster: object) -> TypeGuard[IServingCluster]:
    """An :class:`IServingCluster` (it says where its load balancers live), not a bare
    ``eks.ICluster``."""
    return hasattr(cluster, "load_balancer_cidrs") and hasattr(cluster, "cluster")
