"""The serving stacks: every object of the render pipeline applied as its own resource, with
a logical id from kind, namespace and name; dist/ equals what they apply; changing one
deployment's replicas modifies exactly its Deployment's resource; the per-deployment split
never moves another deployment's resources and a 200-deployment app synthesises."""

from __future__ import annotations

import copy
import json
import re
import shutil
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

from mlcc_constructs.core.serving.kinds._schemas import core_object_problems
from mlcc_constructs.core.serving.kinds.namespace import namespace_object
from mlcc_constructs.core.serving.manifest_ids import manifest_logical_id, unique_ids
from mlcc_constructs.core.serving.plan import SUFFIX_MAX, plan_serving, serving_stack_suffix
from mlcc_constructs.core.serving.readiness import readiness_target
from mlcc_constructs.core.support.errors import MlccError
from mlcc_constructs.ops.diff_guard import ExpectedChange, offending_changes, template_diff
from stacks.deployments import QUERY_URL_PLACEHOLDER
from tests._cdk_app import REPO, cdk_context, manifest_object, reference_entries, synthesised
from tests._flat import flat_spec

MANIFEST = "Custom::AWSCDK-EKS-KubernetesResource"
READINESS = "Custom::MlccWorkloadReadiness"
MODEL = "s3://mlcc-models-dev-123456789012-us-east-1/models/meta-llama/Llama-3.1-8B-Instruct/"


def _templates(app: Any) -> dict[str, dict[str, Any]]:
    return {s.stack_name: s.template for s in app.synth().stacks}


def _applied(template: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(logical id, object) of every manifest resource, in the order CloudFormation applies
    them (each depends on the one before)."""
    manifests = {k: r for k, r in template["Resources"].items() if r["Type"] == MANIFEST}
    order = []
    remaining = dict(manifests)
    while remaining:
        ready = [
            k for k, r in remaining.items() if not set(r.get("DependsOn", [])) & set(remaining)
        ]
        order.extend(sorted(ready))
        for key in ready:
            del remaining[key]
    result = []
    for key in order:
        result.append((key, manifest_object(manifests[key])))
    return result


def _build(deployments: list[dict[str, Any]], **context: Any) -> Any:
    """The app for ``deployments``. CDK's built-in CloudFormation validation is off here: it
    takes 5 of the 6 seconds of a 200-deployment synth, does not change a template, and runs on
    the same stack classes in the session app (tests/_cdk_app.py) with validation on."""
    import aws_cdk as cdk

    from app import build_app

    values = {
        **cdk_context(),
        **context,
        "deployments_file": None,
        "reference_deployments": deployments,
    }
    return build_app(cdk.App(context=values, builtin_cloud_formation_validation=False))


# -- pure rules ------------------------------------------------------------------------------

LOGICAL_IDS = [
    (
        {"kind": "Deployment", "metadata": {"name": "llama-vllm", "namespace": "inference"}},
        "DeploymentInferenceLlamaVllm",
    ),
    ({"kind": "Namespace", "metadata": {"name": "inference"}}, "NamespaceInference"),
    ({"kind": "NodePool", "metadata": {"name": "mlcc-gpu"}}, "NodePoolMlccGpu"),
    ({"kind": "ConfigMap", "metadata": {"name": "a.b-c", "namespace": "x"}}, "ConfigMapXABC"),
]


@pytest.mark.parametrize(("obj", "readable"), LOGICAL_IDS)
def test_logical_id_is_kind_namespace_name_and_a_hash(obj: dict[str, Any], readable: str) -> None:
    logical_id = manifest_logical_id(obj)
    assert logical_id.startswith(readable)
    assert len(logical_id) == len(readable) + 8 and logical_id[-8:].isalnum()
    assert manifest_logical_id(copy.deepcopy(obj)) == logical_id  # a pure function
    changed = copy.deepcopy(obj)
    changed["spec"] = {"replicas": 2}  # the content never changes the id
    assert manifest_logical_id(changed) == logical_id


def test_names_that_read_alike_get_distinct_ids() -> None:
    a1 = {"kind": "Service", "metadata": {"name": "a-1", "namespace": "n"}}
    a_1 = {"kind": "Service", "metadata": {"name": "a1", "namespace": "n"}}
    assert manifest_logical_id(a1)[:-8] == manifest_logical_id(a_1)[:-8]
    assert manifest_logical_id(a1) != manifest_logical_id(a_1)


def test_an_object_applied_twice_is_refused() -> None:
    obj = {"kind": "Service", "metadata": {"name": "x", "namespace": "n"}}
    with pytest.raises(MlccError) as caught:
        unique_ids([obj, obj], where="serving")
    assert [str(p) for p in caught.value.problems] == [
        f"serving: Service n/x is applied twice (got '{manifest_logical_id(obj)}'; fix: give each "
        "deployment a distinct name (or namespace))"
    ]


def test_stack_suffix() -> None:
    assert serving_stack_suffix("eks", "inference", "llama") == "serving-eks-inference-llama"
    long = serving_stack_suffix("hyperpod-eks", "n" * 63, "m" * 63)
    assert len(long) == SUFFIX_MAX and long.startswith("serving-hyperpod-eks-nnn")
    assert long != serving_stack_suffix("hyperpod-eks", "n" * 63, "m" * 62 + "x")


def test_namespace_object_is_a_valid_namespace() -> None:
    assert core_object_problems(namespace_object("inference")) == []


def test_two_deployments_with_one_stack_are_refused() -> None:
    from mlcc_constructs.core.serving.prepared import prepare

    spec = flat_spec(engine="vllm", model="org/m", instance_type="ml.g5.2xlarge", name="a")
    prepared = prepare(spec)
    with pytest.raises(MlccError) as caught:
        plan_serving([("cdk.json:/x/0", prepared), ("cdk.json:/x/1", prepared)])
    assert [str(p) for p in caught.value.problems] == [
        "cdk.json:/x/1:/name: deployment default/a on eks is declared twice: this entry is a copy "
        "of cdk.json:/x/0; one would overwrite the other's objects, file and stack (got 'a'; "
        "allowed: one entry per target, namespace and name; fix: remove one of the two entries, "
        "or give this one another name or namespace (the other: cdk.json:/x/0))"
    ]


# -- the app's serving stacks --------------------------------------------------------------


def _deployment_stacks() -> dict[str, Any]:
    from stacks.deployments import app_deployments

    app, _ = synthesised()
    return {
        f"mlcc-dev-{serving_stack_suffix(d.prepared.target.name, d.prepared.spec.namespace, d.prepared.spec.name)}": d  # noqa: E501
        for d in app_deployments(app)
    }


_DEPLOY_TIME = re.compile(
    r"\$\{Token\[[^\]]+\]\}|<ImportValue:[^>]+>|" + re.escape(QUERY_URL_PLACEHOLDER)
)


def _deploy_time_free(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``objects`` with the cluster's Prometheus query URL as one marker, however it reads:
    the app's lazy value (rendered), the eks-cluster stack's export (applied), dist/'s
    placeholder."""
    text = _DEPLOY_TIME.sub("<query-url>", json.dumps(objects))
    return json.loads(text)  # type: ignore[no-any-return]


def test_an_autoscaled_deployment_queries_the_clusters_workspace() -> None:
    texts = synthesised()[1]
    (scaler,) = (
        obj
        for stack_name in _deployment_stacks()
        for _, obj in _applied(json.loads(texts[stack_name]))
        if obj["kind"] == "ScaledObject"
    )
    address = scaler["spec"]["triggers"][0]["metadata"]["serverAddress"]
    assert address.startswith("<ImportValue:mlcc-dev-eks-cluster:")
    assert "PrometheusWorkspacePrometheusEndpoint" in address


def test_each_deployment_stack_applies_exactly_the_rendered_objects() -> None:
    texts = synthesised()[1]
    for stack_name, deployment in _deployment_stacks().items():
        applied = _applied(json.loads(texts[stack_name]))
        rendered = [entry.object for entry in deployment.prepared.objects]
        # ... then the Role and RoleBinding of the deploy's readiness waiter (not dist/'s).
        target = readiness_target(deployment.prepared)
        assert target is not None
        rendered += [entry.object for entry in target.access]
        assert [obj["kind"] for obj in rendered[-2:]] == ["Role", "RoleBinding"]
        assert _deploy_time_free([obj for _, obj in applied]) == _deploy_time_free(rendered)
        assert [k for k, _ in applied] == [manifest_logical_id(o) for o in rendered]
        for logical_id, _ in applied:
            props = json.loads(texts[stack_name])["Resources"][logical_id]["Properties"]
            assert props["Overwrite"] is True
            assert "PruneLabel" not in props  # applied exactly as rendered


def test_namespaces_stack_applies_every_namespace_and_retains_them() -> None:
    template = json.loads(synthesised()[1]["mlcc-dev-serving"])
    applied = _applied(template)
    assert [obj for _, obj in applied] == [namespace_object("inference")]
    for logical_id, _ in applied:
        resource = template["Resources"][logical_id]
        assert resource["DeletionPolicy"] == resource["UpdateReplacePolicy"] == "Retain"


def test_dist_equals_what_the_stacks_apply(tmp_path: Path) -> None:
    from app import write_reference_manifests

    app, texts = synthesised()
    files = write_reference_manifests(app, outdir=str(tmp_path))
    dist = {Path(f).name: [d for d in yaml.safe_load_all(Path(f).read_text()) if d] for f in files}
    applied = {
        name: [obj for _, obj in _applied(json.loads(text))]
        for name, text in texts.items()
        if name.startswith("mlcc-dev-serving")
    }
    assert dist.pop("namespaces.k8s.yaml") == applied.pop("mlcc-dev-serving")
    for stack_name, deployment in _deployment_stacks().items():
        # The stack also applies its readiness waiter's Role and RoleBinding: not the app's
        # objects, so not in dist/ (GitOps applies no waiter).
        target = readiness_target(deployment.prepared)
        assert target is not None
        waiter = [entry.object for entry in target.access]
        stack_objects = applied.pop(stack_name)
        assert stack_objects[-2:] == waiter
        assert _deploy_time_free(dist.pop(deployment.file_name)) == (
            _deploy_time_free(stack_objects[:-2])
        )
    assert dist == {} and applied == {}


needs_node = pytest.mark.skipif(
    shutil.which("node") is None
    or not (REPO / "node_modules" / "@aws-cdk" / "cloudformation-diff").is_dir(),
    reason="needs node and `npm ci` (@aws-cdk/cloudformation-diff)",
)


EKS_CLUSTER = "mlcc-dev-eks-cluster"


def _gpu_limit_apart(template: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
    """The eks-cluster template without its GPU NodePool's limit, and that limit: the limit
    follows the deployments' max replicas x GPUs (core/platform/gpu_disruption.py), nothing
    else of the cluster does."""
    rest = copy.deepcopy(template)
    (logical_id,) = [k for k in rest["Resources"] if k.startswith("NodePoolMlccGpu")]
    pool = manifest_object(rest["Resources"].pop(logical_id))
    limit = pool["spec"].pop("limits")["nvidia.com/gpu"]
    rest["Resources"][logical_id] = pool
    return rest, limit


@needs_node
def test_replicas_change_modifies_exactly_that_deployments_resource() -> None:
    before = {name: json.loads(text) for name, text in synthesised()[1].items()}
    deployments = reference_entries()
    deployments[0]["scaling"] = {"replicas": 2}  # llama-vllm on eks
    after = _templates(_build(deployments))
    assert set(after) == set(before)
    changed = {name for name in before if after[name] != before[name]}
    stack_name = "mlcc-dev-serving-eks-inference-llama-vllm"
    assert changed == {stack_name, EKS_CLUSTER}
    # The cluster's only change: the GPU NodePool's limit, 1 x 4 + 3 x 1 -> 2 x 4 + 3 x 1 (the
    # autoscaled mistral-vllm-args counts at its max_replicas).
    (cluster_before, limit_before), (cluster_after, limit_after) = (
        _gpu_limit_apart(t[EKS_CLUSTER]) for t in (before, after)
    )
    # (+ 16: the 2-node llama-405b-vllm group)
    assert cluster_after == cluster_before and (limit_before, limit_after) == ("23", "27")
    diff = template_diff(before[stack_name], after[stack_name])
    deployment = next(o for _, o in _applied(before[stack_name]) if o["kind"] == "Deployment")
    logical_id = manifest_logical_id(deployment)
    # (the engine reports no impact class for a custom resource's property: it is modified
    # in place, never replaced)
    # The deploy waits again, and longer: two replicas roll one at a time. Two replicas also
    # get a PodDisruptionBudget, applied before the Deployment; the readiness waiter and its
    # RBAC objects wait for it too (only their DependsOn changes).
    wait = "ModelReadinessClusterWaitF1FEB97D"
    waited = {"DeadlineSeconds", "Digest", "ReadyTimeoutSeconds", "ServiceTimeout"}
    budget = next(c.logical_id for c in diff.resources if c.change == "added")
    assert budget.startswith("PodDisruptionBudgetInferenceLlamaVllm")
    rbac = sorted(
        c.logical_id for c in diff.resources if c.logical_id.startswith(("Role", "RoleBinding"))
    )
    assert len(rbac) == 2
    assert sorted(
        (c.change, c.type, c.logical_id, tuple(sorted(c.properties)), c.replaces)
        for c in diff.resources
    ) == sorted(
        [
            ("modified", MANIFEST, logical_id, ("Manifest",), False),
            ("modified", READINESS, wait, tuple(sorted(waited)), False),
            ("added", MANIFEST, budget, (), False),
            *(("modified", MANIFEST, r, (), False) for r in rbac),
        ]
    )
    timeouts = [
        int(t[stack_name]["Resources"][wait]["Properties"]["ReadyTimeoutSeconds"])
        for t in (before, after)
    ]
    assert timeouts[1] > timeouts[0]
    depends = frozenset({"DependsOn"})
    declared = {
        logical_id: ExpectedChange(
            type=MANIFEST, change="modified", properties=frozenset({"Manifest"}), other=depends
        ),
        wait: ExpectedChange(
            type=READINESS, change="modified", properties=frozenset(waited), other=depends
        ),
        budget: ExpectedChange(type=MANIFEST, change="added", properties=frozenset()),
        **{
            r: ExpectedChange(
                type=MANIFEST, change="modified", properties=frozenset(), other=depends
            )
            for r in rbac
        },
    }
    assert offending_changes(diff, declared) == []
    applied = {o["kind"]: o for _, o in _applied(after[stack_name])}
    assert applied["PodDisruptionBudget"]["spec"]["maxUnavailable"] == 1


# -- scale: the split ---------------------------------------------------------------------


def _specs(count: int, *, first: int = 0) -> list[dict[str, Any]]:
    """``count`` eks deployments over 5 namespaces and 3 instance families."""
    return [
        {
            "name": f"d{i:03d}",
            "target": "eks",
            "engine": {"name": "vllm"},
            "model": {"uri": MODEL if i % 2 else "meta-llama/Llama-3.1-8B-Instruct"},
            "compute": {
                "instance_type": ("ml.g5.2xlarge", "ml.g6e.xlarge", "ml.p5.48xlarge")[i % 3]
            },
            "namespace": f"team-{i % 5}",
        }
        for i in range(first, first + count)
    ]


@cache
def _two_hundred() -> dict[str, dict[str, Any]]:
    return _templates(_build(_specs(200)))


def test_a_200_deployment_app_synthesises() -> None:
    templates = _two_hundred()
    serving = [n for n in templates if n.startswith("mlcc-dev-serving-")]
    assert len(serving) == 200
    for name in serving:
        resources = templates[name]["Resources"]
        assert 3 <= len(resources) < 500
        # The deployment's manifests and its wait: the waiter is the cluster stack's.
        waiter = [r["Type"] for r in resources.values() if r["Type"] != MANIFEST]
        assert waiter.count(READINESS) == 1
        assert waiter.count("AWS::StepFunctions::StateMachine") == 0
    cluster = [r["Type"] for r in templates[EKS_CLUSTER]["Resources"].values()]
    assert cluster.count("AWS::StepFunctions::StateMachine") == 1
    assert len(_applied(templates["mlcc-dev-serving"])) == 5  # team-0 .. team-4


def test_adding_a_deployment_moves_no_other_deployments_resources() -> None:
    before = _templates(_build(_specs(20)))
    # A new deployment, declared first, in a new namespace: only its stack and its namespace
    # are added.
    new = _specs(1, first=900)[0] | {"namespace": "team-new"}
    after = _templates(_build([new, *_specs(20)]))
    added = set(after) - set(before)
    assert added == {"mlcc-dev-serving-eks-team-new-d900"}
    assert set(before) <= set(after)
    for name in before:
        if name == EKS_CLUSTER:  # only the GPU NodePool's limit grows with a deployment
            assert _gpu_limit_apart(after[name])[0] == _gpu_limit_apart(before[name])[0]
        elif name != "mlcc-dev-serving":
            assert after[name] == before[name], name
    old, now = before["mlcc-dev-serving"]["Resources"], after["mlcc-dev-serving"]["Resources"]
    assert {k: v for k, v in now.items() if k in old} == old
    assert [
        json.loads(now[k]["Properties"]["Manifest"])[0]["metadata"]["name"]
        for k in set(now) - set(old)
    ] == ["team-new"]


def test_bad_deployments_in_cdk_json_are_reported_at_once() -> None:
    good = reference_entries()[3]
    bad = [
        {**good, "compute": {"instance_type": "ml.g5.13xlarge"}},
        good,
        {**good, "scaling": {"replicas": "two"}},
    ]
    with pytest.raises(MlccError) as caught:
        _build(bad)
    assert [str(p) for p in caught.value.problems] == [
        "cdk.json:/context/reference_deployments/0:/compute/instance_type: unknown instance type "
        "(got "
        "'ml.g5.13xlarge'; allowed: the types in mlcc_constructs/data/instance_catalog.json; "
        "fix: did you mean ml.g5.16xlarge or ml.g5.12xlarge or ml.g5.xlarge?)",
        "cdk.json:/context/reference_deployments/2:/scaling/replicas: 'two' is not of type "
        "'integer' "
        "(fix: see mlcc_constructs/data/deployment-spec.schema.json for the fields)",
    ]
    with pytest.raises(MlccError) as caught:
        _build([good, good])
    assert [str(p) for p in caught.value.problems] == [
        "cdk.json:/context/reference_deployments/1:/name: deployment inference/mistral-vllm-args "
        "on eks is declared twice: this entry is a copy of cdk.json:/context/reference_deployments"
        "/0; one would overwrite the other's objects, file and stack (got 'mistral-vllm-args'; "
        "allowed: one entry per target, namespace and name; fix: remove one of the two entries, "
        "or give this one another name or namespace (the other: "
        "cdk.json:/context/reference_deployments/0))"
    ]


def test_dist_holds_the_placeholder_or_the_given_query_url(tmp_path: Path) -> None:
    from app import write_reference_manifests
    from tests._cdk_app import build

    def scaler_address(app: Any, folder: Path) -> str:
        files = write_reference_manifests(app, outdir=str(folder))
        (scaler,) = [
            d
            for f in files
            for d in yaml.safe_load_all(Path(f).read_text())
            if d and d["kind"] == "ScaledObject"
        ]
        return str(scaler["spec"]["triggers"][0]["metadata"]["serverAddress"])

    assert scaler_address(synthesised()[0], tmp_path / "a") == QUERY_URL_PLACEHOLDER
    given = "https://aps-workspaces.us-east-1.amazonaws.com/workspaces/ws-given"
    assert scaler_address(build(prometheus_query_url=given), tmp_path / "b") == given
