"""One owner per cluster-wide setting: the rule (table-driven, over plain templates) and every
template of the app walked for two resources that set one thing differently or own one object."""

from __future__ import annotations

import json
from typing import Any

import pytest

from mlcc_constructs.core.platform.endpoint_components import network_policy_config_map
from mlcc_constructs.core.platform.networking_addons import NETWORKING_ADDONS
from mlcc_constructs.core.platform.setting_owners import (
    ADDON,
    HELM_CHART,
    KUBERNETES_MANIFEST,
    app_conflicts,
    template_settings,
)

SWITCH = "v1/ConfigMap kube-system/amazon-vpc-cni data.enable-network-policy-controller"


def _manifest(*objects: dict[str, Any]) -> dict[str, Any]:
    return {"Type": KUBERNETES_MANIFEST, "Properties": {"Manifest": json.dumps(list(objects))}}


def _addon(name: str, configuration: dict[str, Any] | None = None) -> dict[str, Any]:
    properties: dict[str, Any] = {"AddonName": name, "ClusterName": {"Ref": "Cluster"}}
    if configuration is not None:
        properties["ConfigurationValues"] = json.dumps(configuration)
    return {"Type": ADDON, "Properties": properties}


def _template(**resources: dict[str, Any]) -> dict[str, Any]:
    return {"Resources": resources}


def _namespace(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


AUTO_MODE_SWITCH = _template(Switch=_manifest(network_policy_config_map()))


@pytest.mark.parametrize(
    ("templates", "expected"),
    [
        pytest.param(
            {"cluster": AUTO_MODE_SWITCH, "hyperpod": _template(VpcCni=_addon("vpc-cni"))},
            [f"{SWITCH}: cluster/Switch sets 'true'; hyperpod/VpcCni sets 'false'"],
            id="an unconfigured vpc-cni add-on turns Auto Mode's enforcement off",
        ),
        pytest.param(
            {
                "cluster": AUTO_MODE_SWITCH,
                "hyperpod": _template(VpcCni=_addon("vpc-cni", {"enableNetworkPolicy": "true"})),
            },
            [],
            id="a configured vpc-cni add-on agrees with the ConfigMap",
        ),
        pytest.param(
            {
                "a": _template(Ns=_manifest(_namespace("inference"))),
                "b": _template(Ns=_manifest(_namespace("inference"))),
            },
            ["v1/Namespace inference: a/Ns sets '(applied)'; b/Ns sets '(applied)'"],
            id="one namespace applied by two stacks",
        ),
        pytest.param(
            {"a": _template(X=_addon("coredns"), Y=_addon("coredns"))},
            ["EKS add-on coredns: a/X sets '(applied)'; a/Y sets '(applied)'"],
            id="one add-on created twice",
        ),
        pytest.param(
            {
                "a": _template(
                    H={"Type": HELM_CHART, "Properties": {"Release": "lws", "Namespace": "x"}}
                ),
                "b": _template(
                    H={"Type": HELM_CHART, "Properties": {"Release": "lws", "Namespace": "x"}}
                ),
            },
            ["Helm release x/lws: a/H sets '(applied)'; b/H sets '(applied)'"],
            id="one Helm release installed by two stacks",
        ),
        pytest.param(
            {
                "a": _template(
                    R={"Type": "AWS::IAM::Role", "Properties": {"RoleName": "mlcc-operator"}},
                    S={"Type": "AWS::IAM::Role", "Properties": {"RoleName": "mlcc-other"}},
                    T={"Type": "AWS::IAM::Role", "Properties": {}},
                ),
                "b": _template(
                    R={"Type": "AWS::IAM::Role", "Properties": {"RoleName": "mlcc-operator"}},
                    T={"Type": "AWS::IAM::Role", "Properties": {}},
                ),
            },
            ["AWS::IAM::Role mlcc-operator: a/R sets '(applied)'; b/R sets '(applied)'"],
            id="one role name claimed twice; unnamed roles are CloudFormation's to name",
        ),
        pytest.param(
            {
                "a": _template(
                    M=_manifest(
                        {
                            "apiVersion": "v1",
                            "kind": "ConfigMap",
                            "metadata": {"name": "c", "namespace": "kube-system"},
                            "data": {"k": "1"},
                        }
                    )
                ),
                "b": _template(
                    M=_manifest(
                        {
                            "apiVersion": "v1",
                            "kind": "ConfigMap",
                            "metadata": {"name": "c", "namespace": "kube-system"},
                            "data": {"k": "2"},
                        }
                    )
                ),
            },
            [
                "v1/ConfigMap kube-system/c: a/M sets '(applied)'; b/M sets '(applied)'",
                "v1/ConfigMap kube-system/c data.k: a/M sets '1'; b/M sets '2'",
            ],
            id="one ConfigMap applied twice with another value",
        ),
    ],
)
def test_conflicting_owners_are_found(
    templates: dict[str, dict[str, Any]], expected: list[str]
) -> None:
    assert [str(c) for c in app_conflicts(templates)] == expected


def test_a_manifest_joined_from_tokens_is_read() -> None:
    manifest = {
        "Fn::Join": [
            "",
            [
                '[{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"',
                {"Ref": "Name"},
                '","namespace":"inference"}}]',
            ],
        ]
    }
    template = _template(M={"Type": KUBERNETES_MANIFEST, "Properties": {"Manifest": manifest}})
    (setting,) = template_settings("s", template)
    assert setting.target == "v1/ServiceAccount inference/<token:{'Ref': 'Name'}>"


def test_the_hyperpod_vpc_cni_addon_keeps_enforcement_on() -> None:
    (vpc_cni,) = [a for a in NETWORKING_ADDONS if a.name == "vpc-cni"]
    assert vpc_cni.configuration == {"enableNetworkPolicy": "true"}


def _templates(app: Any) -> dict[str, Any]:
    return {s.stack_name: s.template for s in app.synth().stacks}


@pytest.mark.parametrize("which", ["reference", "default", "hyperpod imported"])
def test_no_two_resources_of_the_app_own_one_setting(which: str) -> None:
    """Every template of the app (the reference set, the default app, HyperPod imported):
    nothing set twice differently, nothing owned twice."""
    import aws_cdk as cdk

    from app import build_app
    from tests._cdk_app import (
        IMPORTED_HYPERPOD,
        default_context,
        synthesised,
        synthesised_import_mode,
    )

    if which == "reference":
        templates = {k: json.loads(v) for k, v in synthesised()[1].items()}
    elif which == "default":
        templates = _templates(build_app(cdk.App(context=default_context())))
    else:
        templates = {k: json.loads(v) for k, v in synthesised_import_mode()[1].items()}
        assert IMPORTED_HYPERPOD
    settings = [s for name, t in templates.items() for s in template_settings(name, t)]
    assert len(settings) > 20  # the walk reads the templates it is given
    assert [str(c) for c in app_conflicts(templates)] == []
    if which == "reference":  # the switch has two owners, and they agree
        owners = {s.owner.split("/")[0] for s in settings if s.target == SWITCH}
        assert owners == {"mlcc-dev-eks-cluster", "mlcc-dev-hyperpod-cluster"}
