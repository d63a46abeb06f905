"""The first deploy, as a user meets it: the default app (cdk.json alone) is one priced GPU
deployment with outputs that say where it is, and the quick start's from-zero path
(docs/quick-start.md) is the one checked here (its context keys, its price, its commands equal
to the outputs, its ``mlcc`` commands parsed by the real CLI)."""

from __future__ import annotations

import json
import re
import shlex
from functools import cache
from typing import Any

import pytest

from mlcc_constructs.core.platform.bill import format_report
from mlcc_constructs.core.serving.spec.endpoint import (
    Endpoint,
    endpoint_problems,
    endpoint_warnings,
)
from mlcc_constructs.core.support.errors import MlccError
from tests._cdk_app import REPO, default_context

QUICK_START = REPO / "docs" / "quick-start.md"
SERVING = "mlcc-dev-serving-eks-inference-qwen3-8b"
CLUSTER = "mlcc-dev-eks-cluster"


def _block(marker: str) -> str:
    """The fenced block after ``<!-- from-zero:<marker> -->`` in the quick start (indent
    removed)."""
    text = QUICK_START.read_text(encoding="utf-8")
    found = re.search(rf"<!-- from-zero:{marker} -->\n\s*```\w*\n(.*?)\n\s*```", text, re.S)
    assert found is not None, marker
    return "\n".join(line.strip() for line in found.group(1).splitlines())


def _commands(marker: str) -> list[list[str]]:
    """The block's shell commands (continuations joined, ``&`` dropped), split as a shell
    would."""
    joined = _block(marker).replace("\\\n", " ")
    return [shlex.split(line.rstrip(" &")) for line in joined.splitlines() if line.strip()]


def _deploy_context() -> dict[str, str]:
    """The ``-c key=value`` pairs of the quick start's deploy command."""
    (command,) = _commands("deploy")
    assert command[:4] == ["npx", "cdk", "deploy", "--all"]
    pairs = [command[i + 1] for i, word in enumerate(command) if word == "-c"]
    return dict(pair.split("=", 1) for pair in pairs)


@cache
def _app() -> tuple[Any, dict[str, dict[str, Any]]]:
    """The default app with the quick start's deploy context: (app, stack name -> template)."""
    import aws_cdk as cdk

    from app import build_app

    app = build_app(cdk.App(context={**default_context(), **_deploy_context()}))
    return app, {s.stack_name: s.template for s in app.synth().stacks}


def _outputs(stack: str) -> dict[str, Any]:
    """The stack's outputs for people (not the cross-stack exports)."""
    found = _app()[1][stack].get("Outputs", {})
    return {k: v["Value"] for k, v in found.items() if "Export" not in v}


def test_the_default_app_is_one_gpu_deployment_and_no_hyperpod() -> None:
    from stacks.deployments import app_deployments

    app, templates = _app()
    assert sorted(templates) == sorted(["mlcc-dev-buckets", CLUSTER, "mlcc-dev-serving", SERVING])
    (deployment,) = app_deployments(app)
    prepared = deployment.prepared
    assert prepared.resolution.instance.name == "ml.g6.xlarge"
    assert prepared.resolution.instance.gpus == 1
    assert (prepared.max_replicas, prepared.resolution.nodes) == (1, 1)
    assert prepared.spec.model.uri == "Qwen/Qwen3-8B"
    assert (
        prepared.spec.engine.secret_env == {} and prepared.spec.endpoint.api_key_secret is None
    )  # no secret


def test_the_quick_start_deploy_context_is_read_by_the_app() -> None:
    """Every -c key of the quick start's deploy is a context key the app reads, with the value
    it gives."""
    from stacks.app_context import environment_from_context

    context = _deploy_context()
    environment = environment_from_context(_app()[0])
    assert set(context) == {
        "account",
        "region",
        "availability_zones",
        "admin_role_arns",
        "endpoint_public_cidrs",
    }
    assert environment.account == context["account"]
    assert environment.availability_zones == tuple(context["availability_zones"].split(","))
    assert environment.admin_role_arns == (context["admin_role_arns"],)
    assert environment.endpoint_public_cidrs == (context["endpoint_public_cidrs"],)


def test_the_quick_start_quotes_the_price_the_synth_prints() -> None:
    from app import app_price

    printed = format_report(app_price(_app()[0]), footnotes=False).splitlines()
    quoted = _block("price").splitlines()
    assert [line.strip() for line in printed if line.strip() in quoted] == quoted
    total = next(line for line in printed if "total" in line)
    assert total.split()[-2:] == ["0.9723", "700.06"]


def test_every_stack_says_where_it_is() -> None:
    cluster = _outputs(CLUSTER)
    assert set(cluster) == {"KubeconfigCommand", "ApiEndpointAccess"}
    assert cluster["ApiEndpointAccess"].startswith("public from 203.0.113.7/32 and private")
    serving = _outputs(SERVING)
    assert set(serving) == {
        "EndpointUrl",
        "ServedModelName",
        "CheckCommand",
        "PortForwardCommand",
        "LocalCheckCommand",
    }
    address = {"Fn::GetAtt": ["ModelReadinessClusterWaitF1FEB97D", "Address"]}
    assert serving["EndpointUrl"] == {"Fn::Join": ["", ["http://", address]]}
    assert serving["ServedModelName"] == "qwen3-8b"


def test_the_quick_start_commands_are_the_outputs() -> None:
    """The chat block's kubeconfig, port-forward and check commands are the deploy's outputs,
    word for word."""
    lines = [" ".join(shlex.quote(w) for w in c) for c in _commands("chat")]
    cluster, serving = _outputs(CLUSTER), _outputs(SERVING)
    assert shlex.split(lines[0]) == shlex.split(cluster["KubeconfigCommand"])
    assert shlex.split(lines[1]) == shlex.split(serving["PortForwardCommand"])
    local = shlex.split(serving["LocalCheckCommand"])
    assert shlex.split(lines[2]) == [".venv/bin/mlcc", *local[1:]]


def test_the_quick_start_mlcc_commands_parse() -> None:
    from mlcc_constructs.cli import build_parser

    parser = build_parser()
    mlcc = [c for c in _commands("chat") if c[0].endswith("mlcc")]
    assert mlcc
    for command in mlcc:
        args = parser.parse_args(command[1:])
        assert args.url == "http://127.0.0.1:8000" and args.model == "qwen3-8b"


def test_the_curl_asks_for_the_served_model() -> None:
    curl = next(c for c in _commands("chat") if c[0] == "curl")
    body = json.loads(curl[curl.index("-d") + 1])
    assert body["model"] == _outputs(SERVING)["ServedModelName"]
    assert curl[2].endswith("/v1/chat/completions")


# -- with a domain ---------------------------------------------------------------------------


@cache
def _https_app() -> dict[str, dict[str, Any]]:
    import aws_cdk as cdk

    from app import build_app

    context = {**default_context(), "deployments_file": "examples/https-endpoint.yaml"}
    app = build_app(cdk.App(context=context))
    return {s.stack_name: s.template for s in app.synth().stacks}


def test_the_https_example_points_its_name_at_the_load_balancer_and_says_so() -> None:
    template = _https_app()[SERVING]
    (record,) = [
        r for r in template["Resources"].values() if r["Type"] == "AWS::Route53::RecordSet"
    ]
    assert record["Properties"] == {
        "AliasTarget": {
            "DNSName": {"Fn::GetAtt": ["ModelReadinessClusterWaitF1FEB97D", "Address"]},
            "EvaluateTargetHealth": True,
            "HostedZoneId": "Z35SXDOTRQ7X7K",  # us-east-1's ALB zone (ELB endpoints page)
        },
        "HostedZoneId": "Z0123456789ABCDEFGHIJ",
        "Name": "llm.example.com",
        "Type": "A",
    }
    outputs = {k: v["Value"] for k, v in template["Outputs"].items()}
    assert outputs["EndpointUrl"] == "https://llm.example.com"
    assert outputs["CheckCommand"] == (
        "mlcc endpoint check --url https://llm.example.com --model qwen3-8b --api-key-env LLM_KEY"
    )
    assert outputs["ApiKeyCommand"] == (
        "export LLM_KEY=$(aws secretsmanager get-secret-value --secret-id mlcc/api-key "
        "--region us-east-1 --query SecretString --output text)"
    )
    assert outputs["ApiKeySecret"] == "mlcc/api-key"


@pytest.mark.parametrize(
    ("endpoint", "messages"),
    [
        (
            Endpoint(hostname="llm.example.com", hosted_zone_id="zone"),
            [
                "/endpoint/hosted_zone_id: not a Route 53 hosted zone id (got 'zone'; allowed: "
                "Z followed by 1-31 upper-case letters and digits; fix: copy the Id from `aws "
                "route53 list-hosted-zones-by-name` (without /hostedzone/))"
            ],
        ),
        (
            Endpoint(hosted_zone_id="Z0123456789ABCDEFGHIJ"),
            [
                "/endpoint/hosted_zone_id: an alias record needs the one hostname it points at "
                "the load balancer (got 'Z0123456789ABCDEFGHIJ'; allowed: hosted_zone_id with "
                "endpoint.hostname (not a *. wildcard); fix: set endpoint.hostname to a name of "
                "the zone, e.g. llm.example.com)"
            ],
        ),
        (Endpoint(hostname="llm.example.com", hosted_zone_id="Z0123456789ABCDEFGHIJ"), []),
    ],
)
def test_a_hosted_zone_needs_a_zone_id_and_the_hostname(
    endpoint: Endpoint, messages: list[str]
) -> None:
    problems = endpoint_problems(endpoint, api_key=False, region="us-east-1")
    assert [str(p) for p in problems] == messages


@pytest.mark.parametrize(
    ("endpoint", "api_key", "warned"),
    [
        (Endpoint(), True, True),  # an internal endpoint: the key in clear text, warned
        (Endpoint(), False, False),
        (Endpoint(scheme="none"), True, False),  # no load balancer: in-cluster callers
        (
            Endpoint(
                certificate_arn="arn:aws:acm:us-east-1:123456789012:certificate/abc",
                hostname="llm.example.com",
            ),
            True,
            False,
        ),
    ],
)
def test_an_api_key_over_plain_http_is_warned(
    endpoint: Endpoint, api_key: bool, warned: bool
) -> None:
    warnings = endpoint_warnings(endpoint, api_key=api_key)
    assert bool(warnings) is warned
    if warned:
        assert warnings[0].startswith("the API key crosses the internal load balancer in clear")


def test_an_api_key_over_plain_http_to_the_internet_is_refused() -> None:
    (problem,) = endpoint_problems(
        Endpoint(scheme="internet-facing"), api_key=True, region="us-east-1"
    )
    assert problem.pointer == "/endpoint/scheme"
    assert "needs HTTPS and an API key" in problem.message


def test_an_alias_in_a_region_without_a_zone_on_record_is_refused() -> None:
    from mlcc_constructs.core.platform.load_balancing import alb_hosted_zone

    assert alb_hosted_zone("us-west-2", where="w", pointer="/p") == "Z1H1FL5HABSF5"
    with pytest.raises(MlccError) as caught:
        alb_hosted_zone("eu-central-1", where="w", pointer="/p")
    assert str(caught.value).startswith(
        "w:/p: no Application Load Balancer hosted zone id of region eu-central-1 is on record"
    )
