"""``autoscaling``: the spec field's bad input (each error names its field), the derived
``min_replicas``/``max_replicas`` facts, the eks KEDA ScaledObject (validated against the rule
data written from KEDA's documented fields), scale to zero's wake-up triggers, and the
hyperpod-eks IEC ``autoScalingSpec`` against the real v1 CRD."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from mlcc_constructs.core.platform.keda import TRIGGER_AUTHENTICATION
from mlcc_constructs.core.platform.versions import pinned
from mlcc_constructs.core.serving.kinds._crd_rules import strict
from mlcc_constructs.core.serving.kinds.registry import object_problems, validate_objects
from mlcc_constructs.core.serving.kinds.scaled_object import RULES
from mlcc_constructs.core.serving.prepared import PreparedDeployment, prepare
from mlcc_constructs.core.serving.spec.autoscaling import Autoscaling
from mlcc_constructs.core.serving.spec.context import RenderContext
from mlcc_constructs.core.serving.spec.deployment import DeploymentSpec
from mlcc_constructs.core.serving.spec.endpoint import Endpoint
from mlcc_constructs.core.serving.spec.files import spec_from_mapping
from mlcc_constructs.core.support.errors import MlccError
from tests._flat import flat_spec

AMP = "https://aps-workspaces.us-east-1.amazonaws.com/workspaces/ws-0123abcd-4567-89ef-0123-456789abcdef"
CONTEXT = RenderContext(
    account="123456789012", region="us-east-1", profile="dev", prometheus_query_url=AMP
)
IEC_CRD = "crds/inference.sagemaker.aws.amazon.com_inferenceendpointconfigs.yaml"


def deployment(**fields: Any) -> DeploymentSpec:
    base: dict[str, Any] = {
        "engine": {"name": "vllm"},
        "model": {"uri": "org/model"},
        "compute": {"instance_type": "g5.12xlarge"},
        "name": "chat",
    }
    return flat_spec(**{**base, **fields})


def prepared(context: RenderContext = CONTEXT, **fields: Any) -> PreparedDeployment:
    return prepare(deployment(**fields), context=context)


def objects_of(result: PreparedDeployment, kind: str) -> list[dict[str, Any]]:
    return [o.object for o in result.objects if o.object["kind"] == kind]


def errors(context: RenderContext = CONTEXT, **fields: Any) -> list[str]:
    with pytest.raises(MlccError) as caught:
        prepared(context, **fields)
    return [str(p) for p in caught.value.problems]


# -- bad input: each error names the field, the value, what is allowed and the fix ----------


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        (
            {"autoscaling": Autoscaling(max_replicas=0)},
            "/scaling/autoscaling/max_replicas: max_replicas must be at least 1: it bounds the "
            "replicas "
            "(and GPUs) the autoscaler may start (got 0; allowed: 1..2147483647; fix: set the "
            "most replicas you are willing to pay for)",
        ),
        (
            {"autoscaling": Autoscaling(min_replicas=3, max_replicas=2)},
            "/scaling/autoscaling/min_replicas: min_replicas is above max_replicas (got 3; "
            "allowed: "
            "1..2 (max_replicas); fix: lower min_replicas to at most 2, or raise max_replicas)",
        ),
        (
            {"autoscaling": Autoscaling(max_replicas=2, cooldown_seconds=-1)},
            "/scaling/autoscaling/cooldown_seconds: cooldown_seconds must be non-negative seconds "
            "(got "
            "-1; allowed: 0..2147483647; fix: leave it unset for the default (360 s))",
        ),
        (
            {"autoscaling": Autoscaling(max_replicas=2, min_replicas=0)},
            "/scaling/autoscaling/min_replicas: min_replicas must be at least 1 (the floor while "
            "serving "
            "traffic) (got 0; allowed: 1..2147483647; fix: to run no replica while idle, keep "
            "min_replicas 1 and set autoscaling.scale_to_zero: true)",
        ),
        (
            {"replicas": 2, "autoscaling": Autoscaling(max_replicas=4)},
            "/scaling/replicas: replicas is fixed at 2, but autoscaling sets the replica count: "
            "the two "
            "would fight over it (got 2; allowed: 1 (the default) with autoscaling; fix: drop "
            "scaling.replicas and set scaling.autoscaling.min_replicas (and max_replicas) "
            "instead)",
        ),
        (
            {"replicas": 3, "autoscaling": Autoscaling(max_replicas=4, scale_to_zero=True)},
            "/scaling/replicas: replicas is fixed at 3, but scale_to_zero sets the replica count: "
            "the "
            "two would fight over it (got 3; allowed: 1 (the default) with autoscaling; fix: "
            "drop scaling.replicas and set scaling.autoscaling.min_replicas (and max_replicas) "
            "instead)",
        ),
        (
            {"autoscaling": Autoscaling(max_replicas=2, metric="vllm:num_request_waiting")},
            "/scaling/autoscaling/metric: engine 'vllm' exports no scaling metric "
            "'vllm:num_request_waiting' (got 'vllm:num_request_waiting'; allowed: "
            "vllm:num_requests_waiting (queue_depth), vllm:num_requests_running "
            "(running_requests), vllm:kv_cache_usage_perc (kv_cache_usage); fix: did you mean "
            "vllm:num_requests_waiting, vllm:num_requests_running?)",
        ),
        (
            {"autoscaling": Autoscaling(max_replicas=2, metric="kv_cache_usage")},
            "/scaling/autoscaling/target: the metric vllm:kv_cache_usage_perc (kv_cache_usage) "
            "has no "
            "default target: only the queue-depth metric has one (got None; fix: set "
            "scaling.autoscaling.target (the kv_cache_usage value per replica to aim for))",
        ),
        (
            {"engine": "lmi", "autoscaling": Autoscaling(max_replicas=2)},
            "/scaling/autoscaling: engine 'lmi' exports no Prometheus metrics on record (its "
            "manifest "
            "declares no metrics), so nothing can drive an autoscaler (got 'lmi'; fix: serve it "
            "with a fixed replicas, or declare the engine's metrics in its manifest "
            "(metrics.names.queue_depth at least))",
        ),
    ],
)
def test_bad_autoscaling_is_refused_naming_the_field(fields: dict[str, Any], expected: str) -> None:
    assert errors(**fields) == [expected]


def test_autoscaling_on_eks_needs_the_prometheus_url() -> None:
    (problem,) = errors(RenderContext(region="us-east-1"), autoscaling=Autoscaling(max_replicas=2))
    assert problem.startswith("/scaling/autoscaling: autoscaling on eks reads the engine's metric")
    assert "`mlcc render --prometheus-url https://aps-workspaces." in problem


@pytest.mark.parametrize(
    ("endpoint", "pointer"),
    [(Endpoint(scheme="none"), "/endpoint/scheme"), (Endpoint(group="shared"), "/endpoint/group")],
)
def test_scale_to_zero_needs_a_load_balancer_of_its_own(endpoint: Endpoint, pointer: str) -> None:
    (problem,) = errors(
        endpoint=endpoint, autoscaling=Autoscaling(max_replicas=2, scale_to_zero=True)
    )
    assert problem.startswith(f"{pointer}: scale to zero wakes on requests its own load balancer")


def test_scale_to_zero_is_refused_on_hyperpod() -> None:
    (problem,) = errors(
        target="hyperpod-eks",
        instance_type="ml.g5.12xlarge",
        autoscaling=Autoscaling(max_replicas=2, scale_to_zero=True),
    )
    assert problem.startswith(
        "/scaling/autoscaling/scale_to_zero: scale to zero needs a wake-up signal"
    )


# -- the derived facts other kinds read ---------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "low", "high"),
    [
        ({}, 1, 1),
        ({"replicas": 3}, 3, 3),
        ({"autoscaling": Autoscaling(max_replicas=5, min_replicas=2)}, 2, 5),
        ({"autoscaling": Autoscaling(max_replicas=4, scale_to_zero=True)}, 1, 4),
    ],
)
def test_min_and_max_replicas_facts(fields: dict[str, Any], low: int, high: int) -> None:
    result = prepared(**fields)
    assert (result.min_replicas, result.max_replicas) == (low, high)
    assert result.scales_to_zero == bool(fields.get("autoscaling") and low == 1 and high == 4)


# -- eks: the ScaledObject ---------------------------------------------------------------------


def test_an_autoscaled_deployment_gets_a_valid_scaled_object_and_no_fixed_replicas() -> None:
    result = prepared(autoscaling=Autoscaling(max_replicas=4, min_replicas=2))
    validate_objects(o.object for o in result.objects)
    (scaled,) = objects_of(result, "ScaledObject")
    (workload,) = objects_of(result, "Deployment")
    assert "replicas" not in workload["spec"]  # KEDA's HPA owns the count
    spec = scaled["spec"]
    assert spec["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": "chat"}
    assert (spec["minReplicaCount"], spec["maxReplicaCount"]) == (2, 4)
    assert (spec["pollingInterval"], spec["cooldownPeriod"]) == (15, 360)
    assert "idleReplicaCount" not in spec
    behavior = spec["advanced"]["horizontalPodAutoscalerConfig"]["behavior"]
    assert behavior == {"scaleDown": {"stabilizationWindowSeconds": 360}}
    (trigger,) = spec["triggers"]
    assert trigger == {
        "type": "prometheus",
        "name": "queue-depth",
        "metadata": {
            "serverAddress": AMP,
            "query": 'sum(vllm:num_requests_waiting{model_name="chat",namespace="default"})',
            "threshold": "5",
            "awsRegion": "us-east-1",
            "ignoreNullValues": "true",
        },
        "authenticationRef": {
            "name": TRIGGER_AUTHENTICATION,
            "kind": "ClusterTriggerAuthentication",
        },
    }
    # the scaled object applies after the Deployment it scales
    kinds = [o.object["kind"] for o in result.objects]
    assert kinds.index("Deployment") < kinds.index("ScaledObject")


def test_a_fixed_deployment_gets_no_scaled_object() -> None:
    result = prepared(replicas=2)
    assert objects_of(result, "ScaledObject") == []
    assert objects_of(result, "Deployment")[0]["spec"]["replicas"] == 2


def test_sglang_scales_on_its_queue_with_a_chosen_metric_and_target() -> None:
    result = prepared(
        engine="sglang",
        served_model_name="team/chat",
        autoscaling=Autoscaling(max_replicas=3, metric="sglang:num_running_reqs", target=24),
    )
    (trigger,) = objects_of(result, "ScaledObject")[0]["spec"]["triggers"]
    assert trigger["name"] == "running-requests"
    assert trigger["metadata"]["query"] == (
        'sum(sglang:num_running_reqs{model_name="team/chat",namespace="default"})'
    )
    assert trigger["metadata"]["threshold"] == "24"


def test_scale_to_zero_adds_wake_up_triggers_and_tags_the_load_balancer() -> None:
    result = prepared(namespace="llm", autoscaling=Autoscaling(max_replicas=2, scale_to_zero=True))
    validate_objects(o.object for o in result.objects)
    spec = objects_of(result, "ScaledObject")[0]["spec"]
    assert (spec["idleReplicaCount"], spec["minReplicaCount"]) == (0, 1)
    wake = {t["name"]: t["metadata"] for t in spec["triggers"] if t["type"] == "aws-cloudwatch"}
    assert wake["requests"]["expression"] == (
        "SELECT SUM(RequestCount) FROM \"AWS/ApplicationELB\" WHERE tag.MlccDeployment = 'llm.chat'"
    )
    assert "HTTPCode_ELB_503_Count" in wake["wake"]["expression"]
    assert wake["wake"]["activationTargetMetricValue"] == "0"
    ingress = objects_of(result, "Ingress")[0]
    assert ingress["metadata"]["annotations"]["alb.ingress.kubernetes.io/tags"] == (
        "MlccDeployment=llm.chat"
    )


def test_the_rules_refuse_what_keda_refuses() -> None:
    scaled = objects_of(
        prepared(autoscaling=Autoscaling(max_replicas=2, scale_to_zero=True)), "ScaledObject"
    )[0]
    bad = yaml.safe_load(yaml.safe_dump(scaled))
    bad["spec"]["idleReplicaCount"] = 1
    bad["spec"]["triggers"][0]["metadata"]["threshold"] = 5
    bad["spec"]["pollingIntervall"] = 3
    pointers = {p.pointer for p in object_problems(bad)}
    assert pointers == {  # the misspelt field, idle not below min (enum, ours), a number
        "/spec",
        "/spec/idleReplicaCount",
        "/spec/triggers/0/metadata/threshold",
    }


def test_the_rules_are_for_the_pinned_keda() -> None:
    document = RULES.document
    assert document["apiVersion"] == "keda.sh/v1alpha1"
    assert pinned().keda.rsplit(".", 1)[0] in document["source"]  # 2.22


# -- spec files -----------------------------------------------------------------------------


def test_a_spec_file_takes_autoscaling() -> None:
    loaded = spec_from_mapping(
        {
            "engine": {"name": "vllm"},
            "model": {"uri": "org/model"},
            "compute": {"instance_type": "g5.12xlarge"},
            "name": "chat",
            "scaling": {"autoscaling": {"max_replicas": 3, "scale_to_zero": True, "target": 2}},
        },
        where="spec.yaml",
    )
    assert loaded.spec.scaling.autoscaling == Autoscaling(
        max_replicas=3, scale_to_zero=True, target=2.0
    )


def test_a_spec_file_refuses_an_unknown_autoscaling_field() -> None:
    with pytest.raises(MlccError) as caught:
        spec_from_mapping(
            {
                "engine": {"name": "vllm"},
                "model": {"uri": "org/model"},
                "compute": {"instance_type": "g5.12xlarge"},
                "scaling": {"autoscaling": {"max_replicas": 3, "cooldown": 5}},
            },
            where="spec.yaml",
        )
    assert "/scaling/autoscaling" in str(caught.value)


def test_mlcc_render_takes_the_prometheus_url(tmp_path: Path) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        "engine: {name: vllm}\nmodel: {uri: org/model}\ncompute: {instance_type: g5.12xlarge}\n"
        "name: chat\nregion: us-east-1\nscaling: {autoscaling: {max_replicas: 2}}\n"
    )
    command = [sys.executable, "-m", "mlcc_constructs.cli", "render", "-f", str(spec)]
    out = subprocess.run([*command, "--prometheus-url", AMP], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "kind: ScaledObject" in out.stdout
    refused = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path)
    assert refused.returncode == 1
    assert "--prometheus-url" in refused.stderr


# -- hyperpod-eks: the IEC's autoScalingSpec against the real v1 CRD ---------------------------


def test_the_iec_autoscaling_spec_passes_the_strict_v1_crd(shared_dir: Path) -> None:
    crd = yaml.safe_load((shared_dir / IEC_CRD).read_text(encoding="utf-8"))
    schema = next(v for v in crd["spec"]["versions"] if v["name"] == "v1")["schema"]
    validator = jsonschema.Draft202012Validator(strict(schema["openAPIV3Schema"]))
    result = prepared(
        engine="sglang",
        target="hyperpod-eks",
        instance_type="ml.g5.12xlarge",
        autoscaling=Autoscaling(max_replicas=3, min_replicas=2, cooldown_seconds=120),
    )
    (iec,) = objects_of(result, "InferenceEndpointConfig")
    assert list(validator.iter_errors(iec)) == []
    assert object_problems(iec) == []
    assert iec["spec"]["replicas"] == 2
    assert iec["spec"]["autoScalingSpec"] == {
        "minReplicaCount": 2,
        "maxReplicaCount": 3,
        "pollingInterval": 15,
        "cooldownPeriod": 120,
        "scaleDownStabilizationTime": 120,
        "prometheusTrigger": {
            "name": "queue-depth",
            "query": 'sum(sglang:num_queue_reqs{model_name="chat"})',
            "targetValue": 5.0,
            "metricType": "Average",
            "serverAddress": AMP,
        },
    }
    # a wrong server address fails our rules as the CRD's pattern does
    iec["spec"]["autoScalingSpec"]["prometheusTrigger"]["serverAddress"] = "http://prom:9090"
    assert [p.pointer for p in object_problems(iec)] == [
        "/spec/autoScalingSpec/prometheusTrigger/serverAddress"
    ]
    assert list(validator.iter_errors(iec))


# -- reviewable snapshots: the rendered objects of an autoscaled deployment ------------------


@pytest.mark.parametrize("scale_to_zero", [False, True], ids=["scaled", "to-zero"])
def test_snapshot(yaml_snapshot: Any, scale_to_zero: bool) -> None:
    from mlcc_constructs.core.support.yaml_output import to_yaml

    result = prepared(
        engine="sglang",
        namespace="llm",
        autoscaling=Autoscaling(max_replicas=4, min_replicas=1, scale_to_zero=scale_to_zero),
    )
    wanted = ("ScaledObject", "Ingress")  # the Deployment: test_an_autoscaled_deployment_...
    objects = [o.object for o in result.objects if o.object["kind"] in wanted]
    assert to_yaml(objects) == yaml_snapshot


@pytest.mark.parametrize("given", [AMP, AMP + "/", AMP + "/api/v1/", AMP + "/api/v1"])
def test_the_workspace_endpoint_becomes_its_query_base(given: str) -> None:
    # the workspace's prometheusEndpoint ends in /api/v1/; KEDA appends /api/v1/query itself
    context = RenderContext(region="us-east-1", prometheus_query_url=given)
    result = prepared(context, autoscaling=Autoscaling(max_replicas=2))
    (trigger,) = objects_of(result, "ScaledObject")[0]["spec"]["triggers"]
    assert trigger["metadata"]["serverAddress"] == AMP


def test_an_autoscaled_floor_of_two_gets_a_disruption_budget() -> None:
    # the disruption side reads the facts' min_replicas: the autoscaler's floor
    assert (
        objects_of(prepared(autoscaling=Autoscaling(max_replicas=4)), "PodDisruptionBudget") == []
    )
    budgeted = prepared(autoscaling=Autoscaling(max_replicas=4, min_replicas=2))
    assert budgeted.min_replicas == 2
    assert len(objects_of(budgeted, "PodDisruptionBudget")) == 1
