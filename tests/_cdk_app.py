"""The CDK app of ``app.py``, built and synthesised once per test session (jsii is slow to
start; later synths are cheap but there is no reason to repeat them)."""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
EKS_HISTORY = REPO / "snapshots" / "eks-cluster"
# The S3 CSI fix is a committed step of the eks-cluster history: asserted between its two
# templates forever, whatever the stack becomes.
BEFORE_FIX = EKS_HISTORY / "0001-before-s3csi-fix.template.json"
AFTER_FIX = EKS_HISTORY / "0002-s3csi-fix.template.json"
EXPECTED_DIFF = EKS_HISTORY / "0002-s3csi-fix.expected-diff.json"
EKS_STACK = "mlcc-dev-eks-cluster"
BUCKETS_STACK = "mlcc-dev-buckets"
_ASSET_HASH = re.compile(r"\b[0-9a-f]{64}\b")


REFERENCE_FILE = "examples/reference.yaml"
REFERENCE_CONTEXT = REPO / "examples" / "reference-context.json"


def default_context() -> dict[str, Any]:
    """The context plain ``cdk synth`` gives the app: cdk.json's ``context`` (the default app:
    one deployment, no HyperPod)."""
    context: dict[str, Any] = json.loads((REPO / "cdk.json").read_text(encoding="utf-8"))["context"]
    return context


def reference_context() -> dict[str, Any]:
    """What the reference app adds to cdk.json (``examples/reference-context.json``, what
    ``make synth REFERENCE=1`` passes): the reference set's spec list, the HyperPod instance
    groups, an admin role and the pull through cache's secret. The stack histories are its."""
    context: dict[str, Any] = json.loads(REFERENCE_CONTEXT.read_text(encoding="utf-8"))
    return context


def reference_entries() -> list[dict[str, Any]]:
    """The reference set's deployment entries (``examples/reference.yaml``)."""
    import yaml

    entries: list[dict[str, Any]] = yaml.safe_load((REPO / REFERENCE_FILE).read_text())
    return entries


def cdk_context() -> dict[str, Any]:
    """The context of the reference app the tests and stack histories synthesise: cdk.json's,
    with the reference set (:func:`reference_context`)."""
    return {**default_context(), **reference_context()}


def build(**overrides: Any) -> Any:
    """A fresh ``cdk.App`` composed by ``app.build_app`` (not synthesised)."""
    import aws_cdk as cdk

    from app import build_app

    if "reference_deployments" in overrides:  # an inline list in place of the reference file
        overrides.setdefault("deployments_file", None)
    return build_app(cdk.App(context={**cdk_context(), **overrides}))


@cache
def synthesised() -> tuple[Any, dict[str, str]]:
    """(app, stack name -> template text exactly as ``cdk synth`` writes it)."""
    app = build()
    assembly = app.synth()
    texts = {stack.stack_name: json.dumps(stack.template, indent=1) for stack in assembly.stacks}
    return app, texts


def reference_deployments() -> tuple[Any, ...]:
    """The reference set's prepared deployments, exactly as the app applies them
    (``examples/reference.yaml``, prepared by the synthesised reference app once): the one place
    the flow checks (tests/core/serving/test_flows.py) get the reference set from."""
    from stacks.deployments import app_deployments

    return tuple(d.prepared for d in app_deployments(synthesised()[0]))


def template(stack_name: str) -> dict[str, Any]:
    return json.loads(synthesised()[1][stack_name])  # type: ignore[no-any-return]


def stack(stack_name: str) -> Any:
    app = synthesised()[0]
    return app.node.find_child(stack_name)


def manifest_object(resource: dict[str, Any]) -> dict[str, Any]:
    """The Kubernetes object of a ``KubernetesManifest`` resource. A manifest holding deploy-time
    values (a subnet id, a role name) is an ``Fn::Join``: each such value reads ``<Ref>`` or
    ``<LogicalId.Attribute>``."""
    manifest = resource["Properties"]["Manifest"]
    if isinstance(manifest, dict):
        separator, parts = manifest["Fn::Join"]
        manifest = separator.join(_deploy_time(part) for part in parts)
    (obj,) = json.loads(manifest)
    return obj  # type: ignore[no-any-return]


def _deploy_time(part: Any) -> str:
    """A ``Fn::Join`` part as text: ``<Ref>``, ``<LogicalId.Attribute>``, or for a value another
    stack exports (maybe cut with ``Fn::Select``/``Fn::Split``) ``<ImportValue:export name>``."""
    if isinstance(part, str):
        return part
    if "Ref" in part:
        return f"<{part['Ref']}>"
    if "Fn::GetAtt" in part:
        return "<{}.{}>".format(*part["Fn::GetAtt"])
    found = re.search(r'"Fn::ImportValue": "([^"]+)"', json.dumps(part))
    assert found is not None, part
    return f"<ImportValue:{found.group(1)}>"


def mask_asset_hashes(text: str) -> str:
    """Asset hashes change with aws-cdk-lib releases, not with this code."""
    return _ASSET_HASH.sub("<asset-hash>", text)


@cache
def assertions_template(stack_name: str) -> Any:
    """``aws_cdk.assertions.Template.from_stack`` for one of the app's stacks."""
    from aws_cdk.assertions import Template

    return Template.from_stack(stack(stack_name))


@cache
def team() -> tuple[Any, dict[str, Any]]:
    """A team's own stack composing ModelBuckets and S3CsiDriver with default child ids and
    buckets passed as objects: (stack, template)."""
    import aws_cdk as cdk
    from aws_cdk import aws_eks_v2 as eks

    from mlcc_constructs import ModelBuckets, ModelBucketsProps, S3CsiDriver, S3CsiDriverProps
    from mlcc_constructs.core.platform.buckets import bucket_names

    app = cdk.App()
    stack = cdk.Stack(app, "Team", env=cdk.Environment(account="123456789012", region="us-east-1"))
    names = bucket_names(account="123456789012", region="us-east-1", profile="dev")
    buckets = ModelBuckets(
        stack,
        "Buckets",
        props=ModelBucketsProps(names={key: names[key] for key in ("core", "tls")}),
    )
    S3CsiDriver(
        stack,
        "TeamCsi",
        props=S3CsiDriverProps(
            cluster=eks.Cluster.from_cluster_attributes(stack, "Cluster", cluster_name="team"),
            oidc_provider=eks.OidcProviderNative(
                stack, "Oidc", url="https://oidc.eks.us-east-1.amazonaws.com/id/EXAMPLE"
            ),
            read_buckets=[buckets.bucket("core")],
            tls_bucket=buckets.bucket("tls"),
            resolve_conflicts="PRESERVE",
        ),
    )
    synthesised_template = app.synth().get_stack_by_name("Team").template
    return stack, synthesised_template


HYPERPOD_STACK = "mlcc-dev-hyperpod-cluster"
OPERATOR_STACK = "mlcc-dev-inference-operator"
IMPORTED_HYPERPOD = "existing-hyperpod"


@cache
def synthesised_import_mode() -> tuple[Any, dict[str, str]]:
    """The app importing an existing HyperPod cluster (``hyperpod_cluster_name``) instead of
    creating one: (app, stack name -> template text)."""
    app = build(hyperpod_instance_groups=None, hyperpod_cluster_name=IMPORTED_HYPERPOD)
    assembly = app.synth()
    texts = {stack.stack_name: json.dumps(stack.template, indent=1) for stack in assembly.stacks}
    return app, texts


def serving_on(cluster: Any, scope: Any = None) -> Any:
    """A team's bare ``eks.ICluster`` as an ``IServingCluster`` whose internal load balancers
    live where a deployment prepared with the default render context admits them
    (``REFERENCE_CIDRS``): what ``ServedModel`` needs for a deployment with a load balancer."""
    from aws_cdk import aws_iam as iam

    from mlcc_constructs import ServingCluster
    from mlcc_constructs.core.platform.load_balancing import REFERENCE_CIDRS

    scope = scope or cluster.stack
    name = f"{cluster.node.id}Serving"
    if (found := scope.node.try_find_child(name)) is not None:  # one per cluster and scope
        return found
    oidc = iam.OpenIdConnectProvider.from_open_id_connect_provider_arn(
        scope, f"{name}Oidc", "arn:aws:iam::123456789012:oidc-provider/oidc.example.com/id/TEAM"
    )
    return ServingCluster.from_cluster_attributes(
        scope,
        name,
        cluster=cluster,
        oidc_provider=oidc,
        load_balancer_cidrs={s: tuple(c) for s, c in REFERENCE_CIDRS.items()},
    )
