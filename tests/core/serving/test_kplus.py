"""cdk8s-plus-28 constructs a team adds target the library's Deployment: a
``HorizontalPodAutoscaler`` scales it (the Deployment then leaves ``spec.scaling.replicas`` to the
HPA) and ``NetworkPolicy`` objects select its pods and name them as a peer. The objects are
exact, pass the strict Kubernetes schemas, and leave every other library object unchanged.
One app is synthesized once for the module; jsii starts only in the fixtures and tests."""

from __future__ import annotations

import copy
import dataclasses
from pathlib import Path
from typing import Any

import pytest
import yaml

from mlcc_constructs.core.serving.kinds._schemas import core_object_problems
from mlcc_constructs.core.serving.prepared import prepare
from mlcc_constructs.core.serving.render import render
from mlcc_constructs.core.serving.spec.context import RenderContext
from mlcc_constructs.core.serving.spec.deployment import DeploymentSpec
from mlcc_constructs.core.support.errors import MlccError
from tests._flat import flat_spec, replace_flat

MODEL = "s3://mlcc-models-dev-123456789012-us-east-1/models/meta-llama/Llama-3.1-8B-Instruct/"
CONTEXT = RenderContext(profile="dev")
SPEC = flat_spec(
    engine="vllm",
    model=MODEL,
    instance_type="ml.g5.12xlarge",
    name="llama",
    namespace="inference",
    lora=True,
)
HYPERPOD = dataclasses.replace(SPEC, name="llama-hp", target="hyperpod-eks")
GATEWAY = {"app.kubernetes.io/name": "gateway"}


def _is_library(document: dict[str, Any]) -> bool:
    """Rendered by the library (its managed-by label), not made by the team with cdk8s-plus."""
    labels = document["metadata"].get("labels") or {}
    return labels.get("app.kubernetes.io/managed-by") == "mlcc-constructs"


def _spec(name: str, **changes: Any) -> DeploymentSpec:
    return replace_flat(SPEC, name=name, **changes)


def _without_replicas(obj: dict[str, Any]) -> dict[str, Any]:
    expected = copy.deepcopy(obj)
    del expected["spec"]["replicas"]
    return expected


def _documents(out: Path, chart: str) -> list[dict[str, Any]]:
    text = (out / f"{chart}.k8s.yaml").read_text()
    return [d for d in yaml.safe_load_all(text) if d is not None]


@pytest.fixture(scope="module")
def synthesized(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[dict[str, Any]]]:
    """The charts of one team app, by chart id:

    * ``team``: an EngineDeployment, an HPA on it (CPU of the engine container), a policy
      selecting its pods (ingress from the gateway's pods) and the gateway's egress policy
      naming it as the peer;
    * ``scaled`` / ``scaled-team``: a ServingChart and a team chart (namespace ``inference``)
      whose HPA, with no metrics, scales the chart's Deployment;
    * ``selected`` / ``selected-team``: a ServingChart whose pods only a NetworkPolicy selects;
    * ``plain``: a ServingChart nothing targets.
    """
    import cdk8s
    import cdk8s_plus_28 as kplus

    from mlcc_constructs import (
        EngineDeployment,
        EngineDeploymentProps,
        ServingChart,
        ServingChartProps,
    )

    out = tmp_path_factory.mktemp("kplus")
    app = cdk8s.App(outdir=str(out))

    chart = cdk8s.Chart(app, "team", disable_resource_name_hashes=True)
    serving = EngineDeployment(
        chart, "Llama", props=EngineDeploymentProps(deployment=prepare(SPEC, context=CONTEXT))
    )
    gateway = kplus.Pods.select(
        chart,
        "Gateway",
        labels=GATEWAY,
        namespaces=kplus.Namespaces.select(chart, "GatewayNamespace", names=["gateway"]),
    )
    kplus.HorizontalPodAutoscaler(
        chart,
        "Hpa",
        target=serving,
        max_replicas=4,
        metadata=cdk8s.ApiObjectMetadata(name="llama", namespace=serving.namespace),
        metrics=[
            kplus.Metric.container_cpu(
                container=serving.workload.engine_container,
                target=kplus.MetricTarget.average_utilization(80),
            )
        ],
    )
    port = kplus.NetworkPolicyPort.tcp(serving.workload.port)
    kplus.NetworkPolicy(
        chart,
        "FromGateway",
        selector=serving,
        metadata=cdk8s.ApiObjectMetadata(name="llama-from-gateway"),
        ingress=kplus.NetworkPolicyTraffic(
            default=kplus.NetworkPolicyTrafficDefault.DENY,
            rules=[kplus.NetworkPolicyRule(peer=gateway, ports=[port])],
        ),
    )
    kplus.NetworkPolicy(
        chart,
        "GatewayEgress",
        selector=gateway,
        metadata=cdk8s.ApiObjectMetadata(name="gateway-to-llama"),
        egress=kplus.NetworkPolicyTraffic(rules=[kplus.NetworkPolicyRule(peer=serving)]),
    )

    def serving_chart(name: str) -> ServingChart:
        return ServingChart(app, name, props=ServingChartProps(spec=_spec(name), context=CONTEXT))

    scaled = serving_chart("scaled")
    scaled_team = cdk8s.Chart(
        app, "scaled-team", namespace="inference", disable_resource_name_hashes=True
    )
    kplus.HorizontalPodAutoscaler(scaled_team, "Hpa", target=scaled.workload, max_replicas=2)
    selected = serving_chart("selected")
    selected_team = cdk8s.Chart(app, "selected-team", disable_resource_name_hashes=True)
    kplus.NetworkPolicy(selected_team, "Deny", selector=selected.workload)
    serving_chart("plain")

    app.synth()  # runs every validation: the library's and cdk8s-plus's (HPA target checks)
    charts = ("team", "scaled", "scaled-team", "selected", "selected-team", "plain")
    return {name: _documents(out, name) for name in charts}


def _kind(documents: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [d for d in documents if d["kind"] == kind]


def test_the_hpa_scales_the_library_deployment(
    synthesized: dict[str, list[dict[str, Any]]],
) -> None:
    assert _kind(synthesized["team"], "HorizontalPodAutoscaler") == [
        {
            "apiVersion": "autoscaling/v2",
            "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "llama", "namespace": "inference"},
            "spec": {
                "behavior": {
                    "scaleDown": {
                        "policies": [{"periodSeconds": 300, "type": "Pods", "value": 1}],
                        "selectPolicy": "Max",
                        "stabilizationWindowSeconds": 300,
                    },
                    "scaleUp": {
                        "policies": [
                            {"periodSeconds": 60, "type": "Pods", "value": 4},
                            {"periodSeconds": 60, "type": "Percent", "value": 200},
                        ],
                        "selectPolicy": "Max",
                        "stabilizationWindowSeconds": 0,
                    },
                },
                "maxReplicas": 4,
                "metrics": [
                    {
                        "containerResource": {
                            "container": "engine",
                            "name": "cpu",
                            "target": {"averageUtilization": 80, "type": "Utilization"},
                        },
                        "type": "ContainerResource",
                    }
                ],
                "minReplicas": 1,
                "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "llama"},
            },
        }
    ]
    # the team chart's namespace reaches an HPA made without metadata
    [scaled] = _kind(synthesized["scaled-team"], "HorizontalPodAutoscaler")
    assert scaled["metadata"] == {"name": "scaled-team-hpa", "namespace": "inference"}
    assert scaled["spec"]["scaleTargetRef"] == {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "name": "scaled",
    }
    assert "metrics" not in scaled["spec"]  # cdk8s-plus accepted the containers' requests


def test_network_policies_select_its_pods_and_name_them_as_a_peer(
    synthesized: dict[str, list[dict[str, Any]]],
) -> None:
    selector = {"matchLabels": {"app.kubernetes.io/name": "llama"}}
    team_policies = [d for d in _kind(synthesized["team"], "NetworkPolicy") if not _is_library(d)]
    assert team_policies == [
        {
            "apiVersion": "networking.k8s.io/v1",
            "kind": "NetworkPolicy",
            "metadata": {"name": "llama-from-gateway", "namespace": "inference"},
            "spec": {
                "ingress": [
                    {
                        "from": [
                            {
                                "namespaceSelector": {
                                    "matchLabels": {"kubernetes.io/metadata.name": "gateway"}
                                },
                                "podSelector": {"matchLabels": GATEWAY},
                            }
                        ],
                        "ports": [{"port": 8000, "protocol": "TCP"}],
                    }
                ],
                "podSelector": selector,
                "policyTypes": ["Ingress"],
            },
        },
        {
            "apiVersion": "networking.k8s.io/v1",
            "kind": "NetworkPolicy",
            "metadata": {"name": "gateway-to-llama", "namespace": "gateway"},
            "spec": {
                "egress": [
                    {
                        "ports": [],
                        "to": [
                            {
                                "namespaceSelector": {
                                    "matchLabels": {"kubernetes.io/metadata.name": "inference"}
                                },
                                "podSelector": selector,
                            }
                        ],
                    }
                ],
                "podSelector": {"matchLabels": GATEWAY},
                "policyTypes": ["Egress"],
            },
        },
    ]
    # the policy's pod selector is the Deployment's own selector, in its namespace
    deployment = _kind(synthesized["team"], "Deployment")[0]
    assert deployment["spec"]["selector"] == selector
    [deny] = _kind(synthesized["selected-team"], "NetworkPolicy")
    assert deny["metadata"]["namespace"] == "inference"
    assert deny["spec"] == {"podSelector": {"matchLabels": {"app.kubernetes.io/name": "selected"}}}


def test_the_team_objects_pass_the_strict_kubernetes_schemas(
    synthesized: dict[str, list[dict[str, Any]]],
) -> None:
    team_objects = [d for docs in synthesized.values() for d in docs if not _is_library(d)]
    assert len(team_objects) == 5
    assert [p for d in team_objects for p in core_object_problems(d)] == []
    # the Deployments left without replicas are valid too
    assert [p for docs in synthesized.values() for d in docs for p in core_object_problems(d)] == []


def test_replicas_leave_the_deployment_only_when_an_hpa_scales_it(
    synthesized: dict[str, list[dict[str, Any]]],
) -> None:
    def expected(name: str, *, scaled: bool) -> list[dict[str, Any]]:
        objects = list(render(_spec(name), context=CONTEXT).objects)
        return [
            _without_replicas(o) if scaled and o["kind"] == "Deployment" else o for o in objects
        ]

    # every library object is exactly the rendered one, in order; only the scaled Deployments
    # lack spec.scaling.replicas
    library = [d for d in synthesized["team"] if _is_library(d)]
    assert library == expected("llama", scaled=True)
    assert synthesized["scaled"] == expected("scaled", scaled=True)
    assert synthesized["selected"] == expected("selected", scaled=False)
    assert synthesized["plain"] == expected("plain", scaled=False)
    assert _kind(synthesized["plain"], "Deployment")[0]["spec"]["replicas"] == 1


def test_the_scaling_target_describes_the_rendered_deployment() -> None:
    import cdk8s
    import cdk8s_plus_28 as kplus

    from mlcc_constructs import EngineDeployment, EngineDeploymentProps

    prepared = prepare(SPEC, context=CONTEXT)
    chart = cdk8s.Chart(cdk8s.App(), "target", disable_resource_name_hashes=True)
    serving = EngineDeployment(chart, "Llama", props=EngineDeploymentProps(deployment=prepared))
    target = serving.to_scaling_target()
    assert (target.api_version, target.kind, target.name, target.replicas) == (
        "apps/v1",
        "Deployment",
        "llama",
        None,
    )
    [engine] = target.containers
    assert isinstance(engine, kplus.Container)
    rendered = next(e.object for e in prepared.objects if e.id == "Deployment")
    container = rendered["spec"]["template"]["spec"]["containers"][0]
    assert container["resources"] == {
        "requests": {"cpu": "43", "memory": "172Gi", "nvidia.com/gpu": "4"},
        "limits": {"memory": "172Gi", "nvidia.com/gpu": "4"},
    }
    resources = engine.resources
    assert resources is not None and resources.cpu is not None and resources.memory is not None
    assert (engine.name, engine.image) == ("engine", container["image"])
    assert resources.cpu.request is not None and resources.cpu.request.amount == "43"
    assert resources.cpu.limit is None
    assert resources.memory.request is not None and resources.memory.limit is not None
    assert resources.memory.request.to_gibibytes() == resources.memory.limit.to_gibibytes() == 172
    assert [(p.number, p.name) for p in engine.ports] == [(8000, "http")]
    assert serving.workload.engine_container is engine
    config = serving.to_pod_selector_config()
    assert config.namespaces is not None and config.namespaces.names == ["inference"]
    assert serving.to_network_policy_peer_config().pod_selector is not None
    assert serving.to_pod_selector() is serving
    assert serving.has_autoscaler is False


def test_an_hpa_leaves_the_prepared_deployment_untouched(tmp_path: Path) -> None:
    """The Deployment drops replicas on a copy: a second construct made from the same prepared
    deployment, and ``mlcc render``, still see them."""
    import cdk8s
    import cdk8s_plus_28 as kplus

    from mlcc_constructs import EngineDeployment, EngineDeploymentProps

    prepared = prepare(SPEC, context=CONTEXT)
    app = cdk8s.App(outdir=str(tmp_path))
    scaled_chart = cdk8s.Chart(app, "scaled", disable_resource_name_hashes=True)
    scaled = EngineDeployment(
        scaled_chart, "Llama", props=EngineDeploymentProps(deployment=prepared)
    )
    kplus.HorizontalPodAutoscaler(scaled_chart, "Hpa", target=scaled, max_replicas=3)
    fixed_chart = cdk8s.Chart(app, "fixed", disable_resource_name_hashes=True)
    EngineDeployment(fixed_chart, "Llama", props=EngineDeploymentProps(deployment=prepared))
    app.synth()
    assert scaled.has_autoscaler is True
    rendered = next(e.object for e in prepared.objects if e.id == "Deployment")
    assert rendered["spec"]["replicas"] == 1
    assert _kind(_documents(tmp_path, "fixed"), "Deployment") == [rendered]
    assert _kind(_documents(tmp_path, "scaled"), "Deployment") == [_without_replicas(rendered)]


@pytest.mark.parametrize("patch", ["before", "after"])
def test_an_hpa_and_a_user_patch_combine(tmp_path: Path, patch: str) -> None:
    """A JSON patch switches the Deployment to cdk8s's rendering; replicas still go, whether
    the HPA attaches before or after the patch."""
    import cdk8s
    import cdk8s_plus_28 as kplus

    from mlcc_constructs import EngineDeployment, EngineDeploymentProps

    app = cdk8s.App(outdir=str(tmp_path))
    chart = cdk8s.Chart(app, "team", disable_resource_name_hashes=True)
    serving = EngineDeployment(
        chart, "Llama", props=EngineDeploymentProps(deployment=prepare(SPEC, context=CONTEXT))
    )
    annotate = cdk8s.JsonPatch.add("/spec/template/metadata/annotations/team", "ml")
    if patch == "before":
        serving.resource.add_json_patch(annotate)
    kplus.HorizontalPodAutoscaler(chart, "Hpa", target=serving, max_replicas=3)
    if patch == "after":
        serving.resource.add_json_patch(annotate)
    app.synth()
    [deployment] = _kind(_documents(tmp_path, "team"), "Deployment")
    assert "replicas" not in deployment["spec"]
    assert deployment["spec"]["template"]["metadata"]["annotations"]["team"] == "ml"
    assert core_object_problems(deployment) == []


def test_a_spec_with_fixed_replicas_refuses_an_hpa(tmp_path: Path) -> None:
    import cdk8s
    import cdk8s_plus_28 as kplus

    from mlcc_constructs import ServingChart, ServingChartProps

    app = cdk8s.App(outdir=str(tmp_path))
    served = ServingChart(
        app, "fixed", props=ServingChartProps(spec=_spec("fixed", replicas=3), context=CONTEXT)
    )
    kplus.HorizontalPodAutoscaler(
        cdk8s.Chart(app, "team"), "Hpa", target=served.workload, max_replicas=4
    )
    with pytest.raises(RuntimeError) as caught:
        app.synth()
    assert (
        "[fixed/Deployment] Deployment/fixed:/scaling/replicas: a HorizontalPodAutoscaler scales "
        "Deployment inference/fixed, so the spec may not fix its replicas (every apply would "
        "reset the HPA's count) (got 3; allowed: 1 (the default: left out of the Deployment); "
        "fix: drop scaling.replicas from the DeploymentSpec and set the HPA's min_replicas instead)"
    ) in str(caught.value)


def test_an_autoscaled_spec_refuses_a_second_autoscaler(tmp_path: Path) -> None:
    """The spec's autoscaling is a KEDA ScaledObject, whose HPA owns the count already."""
    import cdk8s
    import cdk8s_plus_28 as kplus

    from mlcc_constructs import ServingChart, ServingChartProps
    from mlcc_constructs.core.serving.spec.autoscaling import Autoscaling

    app = cdk8s.App(outdir=str(tmp_path))
    context = dataclasses.replace(
        CONTEXT,
        region="us-east-1",
        prometheus_query_url="https://aps-workspaces.us-east-1.amazonaws.com/workspaces/ws-1",
    )
    served = ServingChart(
        app,
        "keda",
        props=ServingChartProps(
            spec=_spec("keda", autoscaling=Autoscaling(max_replicas=3)), context=context
        ),
    )
    assert "ScaledObject" in served.objects
    kplus.HorizontalPodAutoscaler(
        cdk8s.Chart(app, "team"), "Hpa", target=served.workload, max_replicas=4
    )
    with pytest.raises(RuntimeError) as caught:
        app.synth()
    assert (
        "[keda/Deployment] Deployment/keda:/scaling/autoscaling: Deployment inference/keda is "
        "scaled by "
        "its spec's autoscaling (a KEDA ScaledObject, whose HorizontalPodAutoscaler owns the "
        "count): a second HorizontalPodAutoscaler would fight it"
    ) in str(caught.value)


def test_the_autoscaler_mark_cannot_be_taken_back() -> None:
    import cdk8s

    from mlcc_constructs import ServingChart, ServingChartProps

    served = ServingChart(
        cdk8s.App(), "c", props=ServingChartProps(spec=_spec("back"), context=CONTEXT)
    )
    assert served.workload is served.workload  # one handle, one state
    served.workload.has_autoscaler = True
    with pytest.raises(MlccError) as caught:
        served.workload.has_autoscaler = False
    assert str(caught.value) == (
        "Deployment/back: an autoscaler already owns the replica count of this Deployment "
        "(got False; allowed: True; fix: remove the HorizontalPodAutoscaler that targets it "
        "instead)"
    )


def test_a_hyperpod_chart_has_no_deployment_to_scale() -> None:
    import cdk8s
    import cdk8s_plus_28 as kplus

    from mlcc_constructs import ServingChart, ServingChartProps

    app = cdk8s.App()
    served = ServingChart(app, "hp", props=ServingChartProps(spec=HYPERPOD, context=CONTEXT))
    team = cdk8s.Chart(app, "team")
    with pytest.raises(MlccError) as caught:
        kplus.HorizontalPodAutoscaler(team, "Hpa", target=served.workload, max_replicas=4)
    assert str(caught.value) == (
        "hp:/target: ServingChart.workload is the Deployment a cdk8s-plus "
        "HorizontalPodAutoscaler or NetworkPolicy targets, and this target renders none (it "
        "renders InferenceEndpointConfig, InferenceGatewayConfig) (got 'hyperpod-eks'; allowed: "
        "eks; fix: use a spec "
        "with target 'eks' to autoscale or select pods with cdk8s-plus; on hyperpod-eks the "
        "spec's replicas set the count)"
    )
    assert team.node.children == []  # refused before the HPA was made


def test_a_hyperpod_engine_deployment_is_refused() -> None:
    import cdk8s

    from mlcc_constructs import EngineDeployment, EngineDeploymentProps

    chart = cdk8s.Chart(cdk8s.App(), "team")
    with pytest.raises(MlccError) as caught:
        EngineDeployment(
            chart, "X", props=EngineDeploymentProps(deployment=prepare(HYPERPOD, context=CONTEXT))
        )
    assert str(caught.value) == (
        "/target: EngineDeployment emits the Deployment of targets eks (got 'hyperpod-eks'; "
        "allowed: eks; fix: use ServingChart (any target), or a spec with target 'eks')"
    )


def test_mypy_sees_the_library_workloads_as_cdk8s_plus_targets(tmp_path: Path) -> None:
    """A team's ``mypy --strict`` accepts EngineDeployment and ServingChart.workload where
    cdk8s-plus takes an IScalable, IPodSelector or INetworkPolicyPeer, and refuses the chart."""
    from tests.project.test_typed_api import _mypy

    errors = _mypy(
        tmp_path,
        "import cdk8s\n"
        "import cdk8s_plus_28 as kplus\n"
        "from mlcc_constructs import (\n"
        "    ComputeSpec, DeploymentSpec, EngineDeployment, EngineDeploymentProps,\n"
        "    EngineSpec, EngineWorkload, ModelSpec, ServingChart, ServingChartProps, prepare,\n"
        ")\n"
        "spec = DeploymentSpec(engine=EngineSpec(name='vllm'), model=ModelSpec(uri='org/name'),\n"
        "                      compute=ComputeSpec(instance_type='ml.g5.xlarge'), name='llama')\n"
        "app = cdk8s.App()\n"
        "chart = cdk8s.Chart(app, 'team')\n"
        "serving = EngineDeployment(chart, 'Llama',\n"
        "                           props=EngineDeploymentProps(deployment=prepare(spec)))\n"
        "served = ServingChart(app, 'served', props=ServingChartProps(spec=spec))\n"
        "def team(i: int, workload: EngineDeployment | EngineWorkload) -> None:\n"
        "    kplus.HorizontalPodAutoscaler(chart, f'Hpa{i}', target=workload, max_replicas=4)\n"
        "    rule = kplus.NetworkPolicyRule(peer=workload)\n"
        "    kplus.NetworkPolicy(chart, f'Np{i}', selector=workload,\n"
        "                        egress=kplus.NetworkPolicyTraffic(rules=[rule]))\n"
        "team(0, serving)\n"
        "team(1, served.workload)\n"
        "kplus.HorizontalPodAutoscaler(chart, 'Bad', target=served, max_replicas=4)\n",
    )
    assert errors == [
        'Argument "target" to "HorizontalPodAutoscaler" has incompatible type "ServingChart"; '
        'expected "IScalable"  [arg-type]'
    ]
