"""CDK context read as the CLI gives it: ``-c`` JSON decoded, problems naming ``-c <key>``,
CIDR sets that cover every address refused, an app without admins warned about."""

from __future__ import annotations

import json
from typing import Any

import aws_cdk as cdk
import pytest

from mlcc_constructs.core.platform.cluster_access import (
    NO_ADMIN_WARNING,
    covers_every_address,
    endpoint_cidrs,
    no_admin_warning,
)
from mlcc_constructs.core.platform.context_values import context_source, decode_context
from mlcc_constructs.core.support.errors import MlccError
from stacks.app_context import environment_from_context
from stacks.deployments import app_deployments
from tests._cdk_app import (
    EKS_STACK,
    REFERENCE_FILE,
    build,
    cdk_context,
    default_context,
    reference_entries,
)

ADMIN = "arn:aws:iam::123456789012:role/mlcc-admin"
OTHER = "arn:aws:iam::123456789012:role/ops"

COVERING = [
    (["0.0.0.0/1", "128.0.0.0/1"], True),
    (["128.0.0.0/1", "0.0.0.0/2", "64.0.0.0/2"], True),
    (["0.0.0.0/1", "128.0.0.0/2", "192.0.0.0/2"], True),
    (["0.0.0.0/1", "128.0.0.0/2"], False),
    (["0.0.0.0/1"], False),
    (["203.0.113.0/24", "198.51.100.7/32"], False),
    ([], False),
]


@pytest.mark.parametrize(("cidrs", "covers"), COVERING)
def test_covers_every_address(cidrs: list[str], covers: bool) -> None:
    assert covers_every_address(cidrs) is covers


@pytest.mark.parametrize(
    "value", ["0.0.0.0/1,128.0.0.0/1", ["0.0.0.0/1", "128.0.0.0/1"], '["0.0.0.0/1","128.0.0.0/1"]']
)
def test_cidr_sets_covering_every_address_are_refused(value: object) -> None:
    with pytest.raises(MlccError) as caught:
        endpoint_cidrs(value, where="-c endpoint_public_cidrs")
    assert str(caught.value) == (
        "-c endpoint_public_cidrs:/endpoint_public_cidrs: together these networks cover every "
        "IPv4 address: the cluster's API endpoint would be open to the internet, as with "
        "0.0.0.0/0 (got '0.0.0.0/1,128.0.0.0/1'; allowed: the networks your administrators and "
        "CI reach the cluster from; fix: name those networks, or leave endpoint_public_cidrs "
        "empty for a private endpoint)"
    )


DECODED = [
    ('["a", "b"]', ["a", "b"]),
    ('  {"k": 1}', {"k": 1}),
    ("a,b", "a,b"),
    (["a"], ["a"]),
    (None, None),
    ("", ""),
]


@pytest.mark.parametrize(("value", "decoded"), DECODED)
def test_decode_context(value: object, decoded: object) -> None:
    assert decode_context(value, "k") == decoded


@pytest.mark.parametrize(
    ("value", "source"),
    [("a,b", "-c k"), ('["a"]', "-c k"), (["a"], "cdk.json:/context"), ({}, "cdk.json:/context")],
)
def test_context_source(value: object, source: str) -> None:
    assert context_source(value, "k") == source


def test_bad_json_text_names_the_flag() -> None:
    with pytest.raises(MlccError) as caught:
        decode_context('["a", ', "admin_role_arns")
    (problem,) = caught.value.problems
    assert problem.where == "-c admin_role_arns"
    assert problem.message.startswith("starts like JSON but is not JSON")


def _context(**overrides: Any) -> cdk.App:
    return cdk.App(context={**cdk_context(), **overrides})


ACCESS_FROM_CLI = [
    ({"admin_role_arns": json.dumps([ADMIN, OTHER])}, "admin_role_arns", (ADMIN, OTHER)),
    ({"admin_role_arns": f"{ADMIN},{OTHER}"}, "admin_role_arns", (ADMIN, OTHER)),
    ({"admin_role_arns": [ADMIN]}, "admin_role_arns", (ADMIN,)),
    (
        {"endpoint_public_cidrs": '["203.0.113.0/24"]'},
        "endpoint_public_cidrs",
        ("203.0.113.0/24",),
    ),
    ({"availability_zones": '["us-east-1a","us-east-1c"]'}, "availability_zones", None),
]


@pytest.mark.parametrize(("overrides", "key", "expected"), ACCESS_FROM_CLI)
def test_cli_json_lists_are_decoded(
    overrides: dict[str, Any], key: str, expected: tuple[str, ...] | None
) -> None:
    environment = environment_from_context(_context(**overrides))
    if expected is None:
        assert environment.availability_zones == ("us-east-1a", "us-east-1c")
    else:
        assert getattr(environment, key) == expected


BAD_FROM_WHERE = [
    ({"admin_role_arns": "arn:nope"}, "-c admin_role_arns:/admin_role_arns/0: not an IAM"),
    ({"admin_role_arns": ["arn:nope"]}, "CDK context (cdk.json or -c):/admin_role_arns/0: not"),
    ({"endpoint_public_cidrs": '["10.0.0.0/33"]'}, "-c endpoint_public_cidrs:/endpoint_public"),
    ({"availability_zones": '["us-east-1a"'}, "-c availability_zones: starts like JSON"),
]


@pytest.mark.parametrize(("overrides", "start"), BAD_FROM_WHERE)
def test_problems_name_the_flag_for_cli_values(overrides: dict[str, Any], start: str) -> None:
    with pytest.raises(MlccError) as caught:
        environment_from_context(_context(**overrides))
    assert len(caught.value.problems) == 1
    assert str(caught.value).startswith(start)


def _default(**overrides: Any) -> cdk.App:
    """The default app's context (cdk.json alone: its inline ``reference_deployments``)."""
    return cdk.App(context={**default_context(), **overrides})


def test_reference_deployments_json_from_cli_is_decoded() -> None:
    entries = default_context()["reference_deployments"]
    from_file = app_deployments(_default())
    from_cli = app_deployments(_default(reference_deployments=json.dumps(entries)))
    assert [d.prepared.spec for d in from_cli] == [d.prepared.spec for d in from_file]
    assert from_cli[0].where == "-c reference_deployments/0"
    assert from_file[0].where == "cdk.json:/context/reference_deployments/0"


@pytest.mark.parametrize(
    ("value", "where"),
    [
        ('[{"name": "x"}]', "-c reference_deployments/0"),
        ([{"name": "x"}], "cdk.json:/context/reference_deployments/0"),
        ("llama", "-c reference_deployments"),
        ({"name": "x"}, "cdk.json:/context/reference_deployments"),
    ],
)
def test_bad_reference_deployments_name_their_source(value: object, where: str) -> None:
    with pytest.raises(MlccError) as caught:
        app_deployments(_default(reference_deployments=value))
    assert {
        p.where.split(":/")[0] if p.where.startswith("-c") else p.where
        for p in caught.value.problems
    } == {where}
    assert len(caught.value.problems) < 10  # one entry's problems, never one per character


@pytest.mark.parametrize(("arns", "warns"), [((), True), ((ADMIN,), False)])
def test_no_admin_warning(arns: tuple[str, ...], warns: bool) -> None:
    warning = no_admin_warning(arns)
    assert (warning is not None) is warns
    if warning:
        assert "admin_role_arns" in warning and "-c admin_role_arns=" in warning


def test_empty_admin_role_arns_warns_at_synth() -> None:
    app = build(admin_role_arns=[])
    stack = next(s for s in app.node.children if getattr(s, "stack_name", "") == EKS_STACK)
    warnings = cdk.assertions.Annotations.from_stack(stack).find_warning(
        "*",
        cdk.assertions.Match.string_like_regexp(f"admin_role_arns is empty.*{NO_ADMIN_WARNING}"),
    )
    assert len(warnings) == 1


def test_a_deployments_file_replaces_the_inline_list() -> None:
    deployments = app_deployments(_context())  # the reference app: examples/reference.yaml
    entries = reference_entries()
    assert [d.prepared.spec.name for d in deployments] == [e["name"] for e in entries]
    assert [d.where for d in deployments] == [
        f"{REFERENCE_FILE}#{index}" for index in range(len(entries))
    ]
    assert "qwen3-8b" not in {d.prepared.spec.name for d in deployments}


def test_a_missing_deployments_file_names_itself(tmp_path: Any) -> None:
    missing = tmp_path / "nope.yaml"
    with pytest.raises(MlccError) as caught:
        app_deployments(_default(deployments_file=str(missing)))
    (problem,) = caught.value.problems
    assert problem.where == str(missing)
