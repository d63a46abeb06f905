"""HyperPod's required components (the dependency chart's parts an inference cluster needs):
the decision data, the charts' values per instance group types, the objects written for the
local-only parts (validated against the Kubernetes schemas), the agent's image per region, and
the hyperpod-cluster stack installing all of them before the ``AWS::SageMaker::Cluster``."""

from __future__ import annotations

import json
from typing import Any

import kubernetes_validate
import pytest

from mlcc_constructs.core._resources import data_path
from mlcc_constructs.core.platform import hyperpod_dependencies as deps
from mlcc_constructs.core.platform.catalog import InstanceType, lookup
from mlcc_constructs.core.platform.gpu_capacity import gpu_toleration
from mlcc_constructs.core.platform.versions import pinned
from mlcc_constructs.core.serving.kinds._schemas import core_object_problems, kubernetes_version
from mlcc_constructs.core.support.errors import MlccError
from tests._cdk_app import (
    HYPERPOD_STACK,
    cdk_context,
    manifest_object,
    synthesised,
    synthesised_import_mode as import_mode,
)

DATA = json.loads(data_path(deps.DATA_FILE).read_text(encoding="utf-8"))
HEALTH_TOLERATION = {
    "key": "sagemaker.amazonaws.com/node-health-status",
    "operator": "Equal",
    "value": "Unschedulable",
    "effect": "NoSchedule",
}
HELM = "Custom::AWSCDK-EKS-HelmChart"
MANIFEST = "Custom::AWSCDK-EKS-KubernetesResource"


def _affinity_types(affinity: dict[str, Any]) -> list[str]:
    required = affinity["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    ((term,),) = (t["matchExpressions"] for t in required["nodeSelectorTerms"])
    assert term["key"] == "node.kubernetes.io/instance-type"
    assert term["operator"] == "In"
    return term["values"]  # type: ignore[no-any-return]


# --- the decision data ---------------------------------------------------------------------


def test_every_component_says_how_it_is_installed_and_why() -> None:
    for component in deps.components():
        assert component.install in deps.INSTALL_KINDS, component
        assert len(component.why) > 20, component


def test_the_inference_cluster_gets_device_plugins_agent_and_rbac_not_training() -> None:
    assert deps.installed("chart") == ("nvidia-device-plugin", "aws-efa-k8s-device-plugin")
    assert deps.installed("objects") == (
        "health-monitoring-agent",
        "deep-health-check",
        "hyperpod-patching",
    )
    skipped = {c.name for c in deps.components() if c.install == "none"}
    assert {"training-operators", "mpi-operator", "mlflow", "job-auto-restart"} <= skipped
    # the operator comes from its EKS add-on (inference-operator stack), never twice
    assert "hyperpod-inference-operator" in skipped


def test_every_installed_part_has_a_pinned_version_and_a_source() -> None:
    versions = json.loads(data_path("versions.json").read_text(encoding="utf-8"))
    assert set(versions["hyperpod_dependencies"]) == {*deps.installed("chart"), deps.HMA}
    assert "hyperpod_dependencies" in versions["sources"]
    assert set(DATA["charts"]) == set(deps.installed("chart"))
    for name in deps.installed("chart"):
        assert DATA["charts"][name]["repository"].startswith("https://"), name


def test_an_unpinned_component_is_refused_naming_the_file() -> None:
    with pytest.raises(MlccError) as raised:
        pinned().hyperpod_dependency("kueue")
    assert str(raised.value) == (
        "mlcc_constructs/data/versions.json:/hyperpod_dependencies/kueue: no pinned version for "
        "HyperPod dependency 'kueue' (allowed: aws-efa-k8s-device-plugin, "
        "health-monitoring-agent, nvidia-device-plugin)"
    )


# --- charts per instance types -------------------------------------------------------------


@pytest.mark.parametrize(
    ("types", "nvidia", "efa"),
    [
        (["ml.g5.12xlarge"], ["ml.g5.12xlarge"], ["ml.g5.12xlarge"]),
        (["ml.g5.xlarge"], ["ml.g5.xlarge"], None),  # no EFA on g5.xlarge: no EFA chart
        (
            ["ml.g5.xlarge", "ml.p5.48xlarge", "ml.g5.xlarge"],
            ["ml.g5.xlarge", "ml.p5.48xlarge"],
            ["ml.p5.48xlarge"],
        ),
        (["g6e.12xlarge"], ["ml.g6e.12xlarge"], ["ml.g6e.12xlarge"]),  # EKS name accepted
    ],
)
def test_the_device_plugins_run_on_exactly_the_groups_types(
    types: list[str], nvidia: list[str], efa: list[str] | None
) -> None:
    charts = {chart.name: chart for chart in deps.charts(_entries(types))}
    assert set(charts) == {"nvidia-device-plugin", *(["aws-efa-k8s-device-plugin"] * bool(efa))}
    plugin = charts["nvidia-device-plugin"]
    assert (plugin.version, plugin.namespace) == ("0.16.1", "kube-system")
    assert _affinity_types(plugin.values["affinity"]) == nvidia
    assert plugin.values["tolerations"] == [gpu_toleration(), HEALTH_TOLERATION]
    if efa:
        chart = charts["aws-efa-k8s-device-plugin"]
        assert (chart.version, chart.repository) == ("0.5.20", "https://aws.github.io/eks-charts")
        assert chart.values["supportedInstanceLabels"] == {"values": efa}
        assert gpu_toleration() in chart.values["tolerations"]
        assert HEALTH_TOLERATION in chart.values["tolerations"]


def _entries(names: list[str] | tuple[str, ...]) -> list[InstanceType]:
    """The catalog entries of ``names``: what the groups carry (looked up once, when read)."""
    return [lookup(name) for name in names]


def test_a_name_where_a_catalog_entry_belongs_is_refused() -> None:
    """The props take the groups' catalog entries: a name is not looked up again here."""
    from mlcc_constructs import HyperPodDependenciesProps

    with pytest.raises(MlccError) as raised:
        HyperPodDependenciesProps(
            cluster=None,  # type: ignore[arg-type]
            instance_types=["ml.g5.12xlarge"],  # type: ignore[list-item]
        )
    assert [str(p) for p in raised.value.problems] == [
        "/instance_types: wrong type for HyperPodDependenciesProps.instance_types (got "
        "['ml.g5.12xlarge']; allowed: Sequence[InstanceType]; fix: pass Sequence[InstanceType] "
        "(from mlcc_constructs import InstanceType))"
    ]


# --- the objects of the local-only parts ---------------------------------------------------


def _objects(types: tuple[str, ...] = ("ml.g5.12xlarge",)) -> list[dict[str, Any]]:
    found = deps.dependency_objects(_entries(types), region="us-east-1", where="t")
    return [deps.namespace_object(), *found]


@pytest.mark.parametrize("obj", _objects(), ids=lambda o: f"{o['kind']}/{o['metadata']['name']}")
def test_every_object_is_valid_for_the_pinned_kubernetes(obj: dict[str, Any]) -> None:
    assert core_object_problems(obj) == []
    kubernetes_validate.validate(obj, kubernetes_version(), strict=True)


def test_a_broken_object_is_caught_by_the_same_validation() -> None:
    (daemon_set,) = (o for o in _objects() if o["kind"] == "DaemonSet")
    daemon_set["spec"]["template"]["spec"]["containers"][0]["volumeMounts"][0]["readOnly"] = "no"
    assert core_object_problems(daemon_set) != []


def test_the_names_are_the_ones_hyperpod_looks_up() -> None:
    found = {
        (o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"]) for o in _objects()
    }
    assert found == {
        ("Namespace", "", "aws-hyperpod"),
        ("ClusterRole", "", "health-monitoring-agent"),
        ("ServiceAccount", "aws-hyperpod", "health-monitoring-agent"),
        ("ClusterRoleBinding", "", "health-monitoring-agent"),
        ("DaemonSet", "aws-hyperpod", "health-monitoring-agent"),
        ("ServiceAccount", "aws-hyperpod", "deep-health-check-service-account"),
        ("ClusterRole", "", "deep-health-check-service-account-role"),
        ("ClusterRoleBinding", "", "deep-health-check-service-account-role-binding"),
        ("ClusterRole", "", "hyperpod-patching"),
        ("ClusterRoleBinding", "", "hyperpod-patching"),
    }
    for obj in _objects():
        assert obj["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "mlcc-constructs"


def _by(kind: str, name: str) -> dict[str, Any]:
    (found,) = (o for o in _objects() if (o["kind"], o["metadata"]["name"]) == (kind, name))
    return found


def test_the_rbac_rules_are_hyperpods() -> None:
    agent = _by("ClusterRole", "health-monitoring-agent")["rules"]
    assert agent == [
        {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get"]},
        {"apiGroups": [""], "resources": ["nodes", "nodes/status"], "verbs": ["patch"]},
        {
            "apiGroups": ["", "events.k8s.io"],
            "resources": ["events"],
            "verbs": ["create", "patch", "update"],
        },
    ]
    patching = _by("ClusterRoleBinding", "hyperpod-patching")
    assert patching["subjects"] == [
        {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "User",
            "name": "hyperpod-service-linked-role",
        }
    ]
    check = _by("ClusterRoleBinding", "deep-health-check-service-account-role-binding")
    assert check["roleRef"]["name"] == "deep-health-check-service-account-role"
    assert check["subjects"] == [
        {
            "kind": "ServiceAccount",
            "name": "deep-health-check-service-account",
            "namespace": "aws-hyperpod",
        }
    ]
    # no wildcard anywhere
    for obj in _objects():
        for rule in obj.get("rules", []):
            assert "*" not in rule["verbs"] + rule["resources"] + rule["apiGroups"], obj


def test_the_agent_runs_on_every_gpu_group_node_with_its_own_mounts_and_user() -> None:
    objects = _objects(("ml.g5.12xlarge", "ml.g6.xlarge"))
    (daemon_set,) = (o for o in objects if o["kind"] == "DaemonSet")
    pod = daemon_set["spec"]["template"]["spec"]
    assert _affinity_types(pod["affinity"]) == ["ml.g5.12xlarge", "ml.g6.xlarge"]
    assert pod["tolerations"] == [
        {"operator": "Exists", "effect": "NoSchedule"},
        {"operator": "Exists", "effect": "NoExecute"},
    ]
    assert pod["serviceAccountName"] == "health-monitoring-agent"
    (container,) = pod["containers"]
    assert container["image"] == (
        "767398015722.dkr.ecr.us-east-1.amazonaws.com/hyperpod-health-monitoring-agent:"
        "1.0.1892.0_1.0.424.0"
    )
    assert container["securityContext"] == {
        "runAsUser": 1000,
        "runAsGroup": 2000,
        "runAsNonRoot": True,
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
    }
    assert "privileged" not in json.dumps(pod)
    mounts = {m["mountPath"]: m["readOnly"] for m in container["volumeMounts"]}
    assert mounts == {"/var/log": False, "/dev/kmsg": True, "/etc/localtime": True}
    assert {v["hostPath"]["path"] for v in pod["volumes"]} == {
        "/var/log/",
        "/dev/kmsg",
        "/etc/localtime",
    }
    assert container["resources"]["requests"] == container["resources"]["limits"]


# --- the agent's image per region ----------------------------------------------------------


@pytest.mark.parametrize(
    ("region", "account"),
    [("us-east-1", "767398015722"), ("us-west-2", "905418368575"), ("eu-south-2", "626887787726")],
)
def test_the_agent_image_is_the_regions(region: str, account: str) -> None:
    image = deps.hma_image(region, where="t")
    assert image == (
        f"{account}.dkr.ecr.{region}.amazonaws.com/hyperpod-health-monitoring-agent:"
        + pinned().hyperpod_dependency(deps.HMA)
    )


@pytest.mark.parametrize("region", ["mars-1", "cn-north-1", "us-gov-west-1", ""])
def test_a_region_without_the_agent_is_refused_naming_the_supported_ones(region: str) -> None:
    with pytest.raises(MlccError) as raised:
        deps.dependency_objects(
            _entries(["ml.g5.12xlarge"]), region=region, where="mlcc-dev-hyperpod-cluster env"
        )
    (problem,) = raised.value.problems
    assert problem.where == "mlcc-dev-hyperpod-cluster env"
    assert problem.pointer == "/region"
    assert problem.value == region
    assert problem.allowed.split(", ") == sorted(DATA["health_monitoring_agent"]["image_accounts"])
    assert "us-east-1" in problem.allowed


@pytest.mark.parametrize(
    ("region", "error"),
    [
        ("mars-1", r"^Far env:/region: SageMaker HyperPod's health monitoring agent has no image "),
        (None, r"^Far/Dependencies: HyperPod's health monitoring agent image is chosen by region"),
    ],
)
def test_the_construct_refuses_a_region_without_the_agent_at_synth(
    region: str | None, error: str
) -> None:
    import aws_cdk as cdk
    from aws_cdk import aws_eks_v2 as eks

    from mlcc_constructs.aws.hyperpod_dependencies import (
        HyperPodDependencies,
        HyperPodDependenciesProps,
    )

    app = cdk.App()
    env = cdk.Environment(account="123456789012", region=region) if region else None
    stack = cdk.Stack(app, "Far", env=env)
    cluster = eks.Cluster.from_cluster_attributes(stack, "Cluster", cluster_name="c")
    with pytest.raises(MlccError, match=error):
        HyperPodDependencies(
            stack,
            "Dependencies",
            props=HyperPodDependenciesProps(
                cluster=cluster, instance_types=[lookup("ml.g5.12xlarge")]
            ),
        )


# --- the hyperpod-cluster stack ------------------------------------------------------------


def _resources(text: str) -> dict[str, Any]:
    return json.loads(text)["Resources"]  # type: ignore[no-any-return]


def _stack() -> dict[str, Any]:
    return _resources(synthesised()[1][HYPERPOD_STACK])


def _dependency_ids() -> set[str]:
    return {k for k, r in _stack().items() if r["Type"] in (HELM, MANIFEST)}


def test_the_stack_installs_the_charts_pinned_with_the_groups_values() -> None:
    expected = {c.name: c for c in deps.charts(_entries(_group_types()))}
    charts = {
        r["Properties"]["Chart"]: r["Properties"] for r in _stack().values() if r["Type"] == HELM
    }
    assert set(charts) == set(expected)
    for name, properties in charts.items():
        assert properties["Version"] == pinned().hyperpod_dependency(name)
        assert properties["Release"] == name
        assert properties["Namespace"] == "kube-system"
        assert properties["Repository"] == expected[name].repository
        assert json.loads(properties["Values"]) == expected[name].values


def test_the_stack_applies_the_objects_after_the_namespace() -> None:
    resources = _stack()
    objects = {k: manifest_object(r) for k, r in resources.items() if r["Type"] == MANIFEST}
    (namespace,) = (k for k, o in objects.items() if o["kind"] == "Namespace")
    assert resources[namespace]["DeletionPolicy"] == "Retain"
    assert objects[namespace]["metadata"]["name"] == "aws-hyperpod"
    for logical_id in set(objects) - {namespace}:
        assert resources[logical_id]["DependsOn"] == [namespace], logical_id
    assert sorted(o["kind"] for o in objects.values()) == sorted(
        o["kind"] for o in _objects(tuple(_group_types()))
    )


def _group_types() -> list[str]:
    return [g["instance_type"] for g in cdk_context()["hyperpod_instance_groups"]]


def test_the_hyperpod_cluster_is_created_after_every_required_component() -> None:
    resources = _stack()
    (cluster,) = (r for r in resources.values() if r["Type"] == "AWS::SageMaker::Cluster")
    assert _dependency_ids() <= set(cluster["DependsOn"])
    # nothing of it waits for the cluster (it would wait for nodes that need it)
    (cluster_id,) = (k for k, r in resources.items() if r["Type"] == "AWS::SageMaker::Cluster")
    for logical_id in _dependency_ids():
        assert cluster_id not in resources[logical_id].get("DependsOn", []), logical_id
        assert cluster_id not in json.dumps(resources[logical_id]["Properties"]), logical_id


def test_an_imported_cluster_gets_no_dependencies() -> None:
    resources = _resources(import_mode()[1][HYPERPOD_STACK])
    assert {r["Type"] for r in resources.values()}.isdisjoint({HELM, MANIFEST})


def _team_hyperpod(install: bool) -> dict[str, Any]:
    """A team's HyperPodCluster on an imported cluster that has no kubectl provider."""
    import aws_cdk as cdk
    from aws_cdk import aws_eks_v2 as eks, aws_s3 as s3

    from mlcc_constructs import HyperPodCluster, HyperPodClusterProps, InstanceGroup

    app = cdk.App()
    stack = cdk.Stack(app, "Team", env=cdk.Environment(account="123456789012", region="us-east-1"))
    cluster = eks.Cluster.from_cluster_attributes(stack, "Cluster", cluster_name="team")
    HyperPodCluster(
        stack,
        "HyperPod",
        props=HyperPodClusterProps(
            cluster=cluster,
            eks_cluster_arn="arn:aws:eks:us-east-1:123456789012:cluster/team",
            cluster_name="team-hyperpod",
            groups=[InstanceGroup(name="inference", instance_type="ml.g5.xlarge", count=1)],
            subnet_ids=["subnet-1"],
            security_group_ids=["sg-1"],
            artifacts_bucket=s3.Bucket.from_bucket_name(stack, "Artifacts", "acme-artifacts"),
            eks_cluster_name="team",
            install_dependencies=install,
        ),
    )
    return app.synth().get_stack_by_name("Team").template  # type: ignore[no-any-return]


def test_a_team_that_installs_the_chart_itself_gets_none_of_it() -> None:
    resources = _team_hyperpod(install=False)["Resources"]
    assert {r["Type"] for r in resources.values()}.isdisjoint({HELM, MANIFEST})


def test_the_components_need_the_clusters_kubectl_provider() -> None:
    with pytest.raises(MlccError, match="the cluster has no kubectl provider"):
        _team_hyperpod(install=True)
