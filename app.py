"""CDK entry point (``cdk synth`` runs this through cdk.json): every stack of the app."""

from __future__ import annotations

import json
import sys
import weakref
from collections.abc import Sequence
from pathlib import Path

import aws_cdk as cdk

from mlcc_constructs.aws.environment_stacks import add_cluster_stacks, add_serving_stacks
from mlcc_constructs.aws.stable_synth import quiet_stack_traces
from mlcc_constructs.core.platform.app_settings import read_egress, read_gpu_pool, read_hyperpod
from mlcc_constructs.core.platform.bill import PriceReport, format_report
from mlcc_constructs.core.platform.cluster_access import context_list
from mlcc_constructs.core.platform.context_values import context_source
from mlcc_constructs.core.platform.hyperpod import coverage_problems
from mlcc_constructs.core.serving.cluster_fit import hyperpod_demand
from mlcc_constructs.core.serving.deployment_bill import environment_bill
from mlcc_constructs.core.serving.plan import ServingPlan, plan_serving
from mlcc_constructs.core.serving.spec.app_deployments import (
    AppDeployment,
    gpu_demand,
    wants_inference_gateway,
)
from mlcc_constructs.core.serving.stack_selection import SELECTION_KEY, select_stacks
from mlcc_constructs.core.support.errors import MlccError, raise_if_any
from stacks.app_context import environment_from_context
from stacks.deployments import (
    app_deployments,
    dist_text,
    set_cluster_query_url,
)
from stacks.eks_cluster_stack import EksClusterStack
from stacks.hyperpod_stacks import (
    HyperPodClusterStack,
    InferenceOperatorStack,
)

NAMESPACES_FILE = "namespaces"


def build_app(app: cdk.App | None = None) -> cdk.App:
    """Compose the app's stacks on ``app`` (a new ``cdk.App`` by default).

    The environment (profile, account, region, availability zones) comes from the app's
    context: ``cdk.json``, overridden with ``cdk synth -c key=value``. The deployments
    (``reference_deployments``) are applied by the serving stacks: ``mlcc-<profile>-serving``
    (namespaces) and one ``mlcc-<profile>-serving-<target>-<namespace>-<name>`` per deployment.
    With ``hyperpod_instance_groups`` (or ``hyperpod_cluster_name``) the app also has
    ``mlcc-<profile>-hyperpod-cluster`` and ``mlcc-<profile>-inference-operator``; deploy order:
    eks-cluster, hyperpod-cluster, inference-operator, serving.

    The ``deployments`` context (``cdk diff -c deployments=NAME[,NAME...]``: deployment names
    or serving stack names) builds only those deployments' serving stacks; every other stack
    is built as always (:mod:`mlcc_constructs.core.serving.stack_selection`).
    """
    # No performance report: CDK writes cdk.out/performance-counters.json only when a synth
    # is slower than 10 s per stack, so a loaded machine's cdk.out would differ from another's.
    app = app or cdk.App(performance_reporting=False)
    quiet_stack_traces(app)
    environment = environment_from_context(app)
    deployments = app_deployments(app)
    plan = serving_plan(app)
    selection = selected_deployments(app, plan)  # an unknown name fails before any stack
    hyperpod = read_hyperpod(app.node.try_get_context, environment)
    if hyperpod is None:  # a hyperpod-eks deployment needs a cluster the app does not have
        needs = [
            (d.where, d.prepared.resolution.instance.name) for d in deployments if _on_hyperpod(d)
        ]
        raise_if_any(coverage_problems(None, needs))
    egress = read_egress(app.node.try_get_context, environment)
    buckets, cluster_stack = add_cluster_stacks(
        app,
        environment=environment,
        deployments=deployments,
        gpu_pool=read_gpu_pool(app.node.try_get_context, gpu_demand(deployments)),
        egress=egress,
    )
    serving_cluster = cluster_stack.serving_cluster
    _BILLS[app] = environment_bill(
        [d.prepared for d in deployments],
        environment=environment,
        egress=egress,
        hyperpod_instance_groups=[(g.instance_type, g.count) for g in hyperpod.groups]
        if hyperpod is not None
        else (),
    )
    set_cluster_query_url(app, serving_cluster.prometheus_query_url)
    operator = None
    if hyperpod is not None:
        hyperpod_stack = HyperPodClusterStack(
            app, environment=environment, cluster_stack=cluster_stack, settings=hyperpod
        )
        # Every deployment, selected or not, is checked against the instance groups at once.
        hyperpod_stack.hyperpod.host_all([(d.prepared, d.where) for d in deployments])
        operator_stack = InferenceOperatorStack(
            app,
            environment=environment,
            cluster_stack=cluster_stack,
            hyperpod_stack=hyperpod_stack,
            inference_gateway=wants_inference_gateway(deployments),
        )
        # Buckets are named, not referenced: the lifecycle scripts' and the TLS bucket exist
        # first.
        hyperpod_stack.add_stack_dependency(buckets, "the lifecycle scripts' bucket")
        operator_stack.add_stack_dependency(buckets, "the TLS certificates' bucket")
        operator = operator_stack.operator
    add_serving_stacks(
        app,
        environment=environment,
        cluster_stack=cluster_stack,
        plan=plan,
        deployments=deployments,
        selection=selection,
        operator=operator,
    )
    if not all(selection):
        keep_exports(
            app, cluster_stack, [d for d, s in zip(deployments, selection, strict=True) if not s]
        )
    return app


def _on_hyperpod(deployment: AppDeployment) -> bool:
    """Whether the deployment's pods run on the HyperPod cluster (its objects need the
    operator)."""
    return hyperpod_demand(deployment.prepared, where=deployment.where) is not None


def keep_exports(
    app: cdk.App, cluster_stack: EksClusterStack, left_out: Sequence[AppDeployment]
) -> None:
    """Export from the cluster stack what the serving stacks a selection leaves out would
    import, so the shared stacks synthesise as in the whole app (``cdk diff`` shows no export
    going away). Every serving stack imports the same cluster values, except the cluster's
    Prometheus query URL: only a deployment whose objects hold it (an autoscaled one)."""
    metrics = cluster_stack.serving_cluster.metrics
    if metrics is None:
        return
    for deployment in left_out:
        text = json.dumps([entry.object for entry in deployment.prepared.objects])
        if dist_text(app, text) != text:  # the cluster's query URL, a lazy value
            cluster_stack.export_value(metrics.workspace.attr_prometheus_endpoint)
            return


def add_gates(app: cdk.App) -> None:
    """Run cdk-nag's AwsSolutions pack and the project's pack (EKS rules that see
    ``aws_eks_v2`` clusters) on every stack at synth: a finding that is neither fixed nor
    acknowledged with a reason fails ``cdk synth``."""
    from cdk_nag import AwsSolutionsChecks

    from mlcc_constructs.aws.nag import MlccChecks

    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app), MlccChecks(app))


_PLANS: weakref.WeakKeyDictionary[cdk.App, ServingPlan] = weakref.WeakKeyDictionary()
_BILLS: weakref.WeakKeyDictionary[cdk.App, PriceReport] = weakref.WeakKeyDictionary()


def app_price(app: cdk.App) -> PriceReport:
    """What the app built by :func:`build_app` runs and costs per hour and per 30 days, from the
    pinned prices (``mlcc_constructs/data/prices.json``): printed by ``cdk synth``."""
    return _BILLS[app]


def serving_plan(app: cdk.App) -> ServingPlan:
    """The serving plan of the app's deployments (the stacks, and dist/), made once per app
    (as :func:`app_deployments` prepares them once)."""
    if app not in _PLANS:
        _PLANS[app] = plan_serving(
            [(d.where, d.prepared) for d in app_deployments(app)],
            where="cdk.json:/context/reference_deployments",
        )
    return _PLANS[app]


def selected_deployments(app: cdk.App, plan: ServingPlan) -> tuple[bool, ...]:
    """Whether each of the app's deployments (``plan``: their serving plan) gets its serving
    stack and its dist/ file: all, unless the ``deployments`` context names some (their names
    or their stacks' names)."""
    raw = app.node.try_get_context(SELECTION_KEY)
    environment = environment_from_context(app)
    return select_stacks(
        context_list(raw, SELECTION_KEY),
        [
            (environment.stack_name(unit.suffix), str(deployment.prepared.spec.name))
            for unit, deployment in zip(plan.units, app_deployments(app), strict=True)
        ],
        where=context_source(raw, SELECTION_KEY),
    )


def write_reference_manifests(app: cdk.App, outdir: str = "dist") -> list[str]:
    """Write what the serving stacks apply, for GitOps:
    ``<outdir>/<target>-<namespace>-<name>.k8s.yaml`` (its stack: ``mlcc-<profile>-serving-...``)
    per cdk.json ``reference_deployments`` entry (the ``mlcc render -f`` spec schema; the app's
    context supplies the account, region and profile they do not set) and
    ``<outdir>/namespaces.k8s.yaml``. The objects are the prepared deployments' own (the ones
    the stacks apply), written as ``mlcc render`` writes them; earlier ``*.k8s.yaml`` files of
    deployments no longer listed are removed. With a ``deployments`` selection only the
    selected deployments' files (and the namespaces') are written, and no file is removed."""
    from mlcc_constructs.core.serving.kinds.registry import validate_objects
    from mlcc_constructs.core.serving.renderer import list_files
    from mlcc_constructs.core.support.yaml_output import to_yaml
    from mlcc_constructs.ops.render_output import replace_files

    plan = serving_plan(app)
    namespaces = plan.namespaces
    validate_objects(namespaces)
    files = {f"{NAMESPACES_FILE}.k8s.yaml": to_yaml(namespaces)}
    selection = selected_deployments(app, plan)
    # The selected deployments' files as mlcc render -f LIST --out writes them, from the objects
    # the one render path validated (app_deployments: core/serving/renderer.py).
    chosen = [d.rendered for d, keep in zip(app_deployments(app), selection, strict=True) if keep]
    files |= list_files(chosen, text=lambda body: dist_text(app, body))
    folder = Path(outdir)
    stale = list(folder.glob("*.k8s.yaml")) if all(selection) else []
    return [str(path) for path in replace_files(folder, files, stale=stale)]


if __name__ == "__main__":
    try:
        cdk_app = build_app()
        add_gates(cdk_app)
        write_reference_manifests(cdk_app)
        cdk_app.synth()
        # The price before the deploy, on stderr: cdk synth keeps stdout for templates.
        print(
            format_report(app_price(cdk_app), title="What cdk deploy --all runs"), file=sys.stderr
        )
        print("Next: .venv/bin/mlcc preflight (read-only checks of the account)", file=sys.stderr)
    except MlccError as error:
        for problem in error.problems:
            print(f"app.py: error: {problem}", file=sys.stderr)
        sys.exit(1)
