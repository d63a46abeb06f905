"""The HyperPod Inference Gateway with JWT auth (``endpoint.gateway``, issue 21 item 7): the
rendered InferenceGatewayConfig, its rule data (the documented v1alpha1 CRD reference), every
bad input with its exact error, the refusal on targets and engines without a gateway, readiness,
and the add-on's gateway configuration."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from mlcc_constructs.core.platform.inference_operator import addon_configuration
from mlcc_constructs.core.serving.kinds.inference_gateway_config import RULES, readiness
from mlcc_constructs.core.serving.kinds.registry import kind_named
from mlcc_constructs.core.serving.render import render
from mlcc_constructs.core.serving.spec.context import RenderContext
from mlcc_constructs.core.serving.spec.deployment import DeploymentSpec
from mlcc_constructs.core.serving.spec.endpoint import Endpoint
from mlcc_constructs.core.serving.spec.files import spec_from_mapping
from mlcc_constructs.core.serving.spec.gateway import ClaimRule, Gateway, JwtAuth
from mlcc_constructs.core.support.errors import MlccError
from tests._flat import flat_spec, replace_flat

MODEL = "s3://mlcc-models-dev-123456789012-us-east-1/models/meta-llama/Llama-3.1-8B-Instruct/"
CONTEXT = RenderContext(account="123456789012", region="us-east-1", profile="dev")
ISSUER = "https://cognito-idp.us-east-1.amazonaws.com/us-east-1_EXAMPLE"
JWKS = f"{ISSUER}/.well-known/jwks.json"
CERTIFICATE = "arn:aws:acm:us-east-1:123456789012:certificate/0123abcd-0123-4567-89ab-0123456789ab"


def jwt(**values: Any) -> JwtAuth:
    fields: dict[str, Any] = {"issuer": ISSUER, "jwks_uri": JWKS, "audiences": ("llm-clients",)}
    return JwtAuth(**{**fields, **values})


def spec(*, gateway: Gateway | None = None, **values: Any) -> DeploymentSpec:
    endpoint = values.pop("endpoint", {})
    fields: dict[str, Any] = {
        "engine": {"name": "vllm"},
        "model": {"uri": MODEL},
        "compute": {"instance_type": "ml.g5.12xlarge"},
        "name": "llama",
        "namespace": "inference",
        "target": "hyperpod-eks",
    }
    return flat_spec(
        **{**fields, **values},
        endpoint=Endpoint(gateway=gateway or Gateway(jwt=jwt()), **endpoint),
    )


def gateway_of(deployment: DeploymentSpec) -> dict[str, Any]:
    rendered = render(deployment, context=CONTEXT)
    (found,) = [o for o in rendered.objects if o["kind"] == "InferenceGatewayConfig"]
    return found


def errors(deployment: DeploymentSpec) -> list[str]:
    with pytest.raises(MlccError) as caught:
        render(deployment, context=CONTEXT)
    return [str(p) for p in caught.value.problems]


# -- what is rendered -------------------------------------------------------------------------


def test_the_gateway_checks_a_jwt_and_routes_to_the_iec_pods() -> None:
    rendered = render(spec(), context=CONTEXT)
    assert [o["kind"] for o in rendered.objects] == [
        "InferenceEndpointConfig",
        "InferenceGatewayConfig",
    ]
    iec, gateway = rendered.objects
    assert gateway["apiVersion"] == "inference.sagemaker.aws.amazon.com/v1alpha1"
    assert gateway["metadata"]["name"] == iec["metadata"]["name"] == "llama"
    assert gateway["metadata"]["namespace"] == "inference"
    assert gateway["spec"] == {
        "bbr": {"enabled": False},
        "tls": {},
        "auth": {
            "jwt": {
                "provider": {
                    "name": "llama",
                    "issuer": ISSUER,
                    "remoteJWKS": {"uri": JWKS},
                    "audiences": ["llm-clients"],
                }
            }
        },
        "schedulers": [
            {
                "name": "llama",
                "modelName": "llama",
                "modelSelector": {"matchLabels": {"app": "llama"}},
                "targetPort": iec["spec"]["worker"]["modelInvocationPort"]["containerPort"],
                "scheduler": "llm-d",
                "engineType": "vllm",
            }
        ],
    }
    assert RULES.problems(gateway) == []


def test_no_gateway_renders_none() -> None:
    plain = flat_spec(
        engine="vllm", model=MODEL, instance_type="ml.g5.12xlarge", name="llama",
        target="hyperpod-eks",
    )  # fmt: skip
    assert [o["kind"] for o in render(plain, context=CONTEXT).objects] == [
        "InferenceEndpointConfig"
    ]


@pytest.mark.parametrize(
    ("values", "pointer", "expected"),
    [
        ({"served_model_name": "chat-8b"}, ("schedulers", 0, "modelName"), "chat-8b"),
        (
            {"endpoint": {"certificate_arn": CERTIFICATE, "hostname": "llm.example.com"}},
            ("tls",),
            {"acmArn": CERTIFICATE},
        ),
        ({"engine": "sglang", "env": {"SGLANG_ENABLE_METRICS": "true"}}, ("schedulers", 0), None),
        (
            {
                "gateway": Gateway(
                    jwt=jwt(
                        audiences=(),
                        required_claims=(
                            ClaimRule(
                                name="groups", values=("ml", "ops"), value_type="StringArray"
                            ),
                        ),
                    )
                )
            },
            ("auth", "jwt", "provider"),
            {
                "name": "llama",
                "issuer": ISSUER,
                "remoteJWKS": {"uri": JWKS},
                "requiredClaims": [
                    {"name": "groups", "valueType": "StringArray", "values": ["ml", "ops"]}
                ],
            },
        ),
    ],
    ids=["served-name", "team-certificate", "sglang", "claims-only"],
)
def test_what_the_spec_changes(
    values: dict[str, Any], pointer: tuple[Any, ...], expected: Any
) -> None:
    found: Any = gateway_of(spec(**values))["spec"]
    for part in pointer:
        found = found[part]
    if values.get("engine") == "sglang":
        assert (found["engineType"], found["targetPort"]) == ("sglang", 30000)
    else:
        assert found == expected


def test_sglang_without_its_metrics_flag_is_warned() -> None:
    warning = (
        "endpoint.gateway: sglang publishes the metrics the gateway's Endpoint Picker scores "
        "pods with only when SGLANG_ENABLE_METRICS=true; without it requests are still routed, "
        "but not by load (set env SGLANG_ENABLE_METRICS: 'true')"
    )
    # hyperpod-eks scrapes metrics, so SGLang gets them by default (Tier 1 metrics_enable)
    assert warning not in render(spec(engine="sglang"), context=CONTEXT).warnings
    turned_off = replace_flat(spec(engine="sglang"), env={"SGLANG_ENABLE_METRICS": "false"})
    assert warning in render(turned_off, context=CONTEXT).warnings


def test_the_spec_file_form() -> None:
    document = {
        "engine": {"name": "vllm"},
        "model": {"uri": MODEL},
        "compute": {"instance_type": "ml.g5.12xlarge"},
        "name": "llama",
        "target": "hyperpod-eks",
        "endpoint": {
            "gateway": {
                "jwt": {
                    "issuer": ISSUER,
                    "jwks_uri": JWKS,
                    "audiences": ["llm-clients"],
                    "required_claims": [{"name": "scope", "values": ["llm/invoke"]}],
                }
            }
        },
    }
    loaded = spec_from_mapping(document, where="llama.yaml").spec
    assert loaded.endpoint.gateway == Gateway(
        jwt=jwt(required_claims=(ClaimRule(name="scope", values=("llm/invoke",)),))
    )
    document["endpoint"]["gateway"]["jwt"]["jwks"] = JWKS  # type: ignore[index]
    with pytest.raises(MlccError) as caught:
        spec_from_mapping(document, where="llama.yaml")
    assert [p.pointer for p in caught.value.problems] == ["/endpoint/gateway/jwt"]
    assert "'jwks' was unexpected" in str(caught.value)


# -- bad input: every problem names the field, the value, what is allowed and the fix ----------


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        (
            {"gateway": Gateway(jwt=jwt(issuer="http://issuer.example.com"))},
            "/endpoint/gateway/jwt/issuer: not an https URL (the OIDC issuer URL: the gateway "
            "fetches keys and checks tokens over TLS only) (got 'http://issuer.example.com'; "
            "allowed: https://<host>[/<path>], no user information or fragment; fix: e.g. "
            "https://cognito-idp.us-east-1.amazonaws.com/us-east-1_EXAMPLE)",
        ),
        (
            {"gateway": Gateway(jwt=jwt(jwks_uri="https://user@keys.example.com/jwks#x"))},
            "/endpoint/gateway/jwt/jwks_uri: not an https URL (the issuer's JWKS URL: the "
            "gateway fetches keys and checks tokens over TLS only) (got "
            "'https://user@keys.example.com/jwks#x'; allowed: https://<host>[/<path>], no user "
            "information or fragment; fix: the jwks_uri of the issuer's "
            "/.well-known/openid-configuration)",
        ),
        (
            {"gateway": Gateway(jwt=jwt(audiences=()))},
            "/endpoint/gateway/jwt: a token check needs accepted audiences or required claims: "
            "with neither, any token the issuer signs for anyone would pass (got {'audiences': "
            "[], 'required_claims': []}; allowed: audiences (up to 8) and/or required_claims "
            "(up to 16); fix: set endpoint.gateway.jwt.audiences to the client id or API "
            "identifier your identity provider puts in aud)",
        ),
        (
            {"gateway": Gateway(jwt=jwt(audiences=tuple(f"a{i}" for i in range(9))))},
            "/endpoint/gateway/jwt/audiences: too many audiences for the gateway (got 9; "
            "allowed: at most 8; fix: accept one shared audience, or check a claim with "
            "required_claims)",
        ),
        (
            {"gateway": Gateway(jwt=jwt(audiences=(" llm",)))},
            "/endpoint/gateway/jwt/audiences/0: an audience is a non-empty string without "
            "surrounding spaces (got ' llm')",
        ),
        (
            {
                "gateway": Gateway(
                    jwt=jwt(
                        required_claims=tuple(
                            ClaimRule(name=f"c{i}", values=("v",)) for i in range(17)
                        )
                    )
                )
            },
            "/endpoint/gateway/jwt/required_claims: too many required claims for the gateway "
            "(got 17; allowed: at most 16)",
        ),
        (
            {"gateway": Gateway(jwt=jwt(required_claims=(ClaimRule(name="a b", values=("v",)),)))},
            "/endpoint/gateway/jwt/required_claims/0/name: not a claim name (got 'a b'; "
            "allowed: 1-253 printable characters without spaces, e.g. scope)",
        ),
        (
            {
                "gateway": Gateway(
                    jwt=jwt(
                        required_claims=(
                            ClaimRule(name="scope", values=("a",)),
                            ClaimRule(name="scope", values=("b",)),
                        )
                    )
                )
            },
            "/endpoint/gateway/jwt/required_claims/1/name: a claim is listed twice: its values "
            "would be checked twice (got 'scope'; fix: merge the two entries' values into one)",
        ),
        (
            {"gateway": Gateway(jwt=jwt(required_claims=(ClaimRule(name="scope", values=()),)))},
            "/endpoint/gateway/jwt/required_claims/0/values: a required claim needs accepted "
            "values (got 0; allowed: 1..128 values)",
        ),
        (
            {
                "gateway": Gateway(
                    jwt=jwt(required_claims=(ClaimRule(name="scope", values=("x" * 1025,)),))
                )
            },
            "/endpoint/gateway/jwt/required_claims/0/values/0: a claim value is 1-1024 "
            "characters (got 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx...'; allowed: 1..1024 "
            "characters)",
        ),
        (
            {"target": "eks"},
            "/endpoint/gateway: target eks renders no Inference Gateway (the HyperPod inference "
            "add-on runs it) (got 'eks'; allowed: targets hyperpod-eks; fix: drop "
            "endpoint.gateway (on eks the engine checks an API key from api_key_secret behind "
            "the Ingress), or deploy to hyperpod-eks)",
        ),
        (
            {"engine": "tensorrt-llm"},
            "/endpoint/gateway: the Inference Gateway's Endpoint Picker cannot read "
            "tensorrt-llm's metrics (its engine manifest declares no inference_gateway) (got "
            "'tensorrt-llm'; allowed: engines whose manifest declares inference_gateway (the "
            "engineType of the gateway's scheduler); fix: drop endpoint.gateway, or serve the "
            "model with such an engine)",
        ),
    ],
    ids=[
        "http-issuer",
        "jwks-user-fragment",
        "no-audience-no-claim",
        "nine-audiences",
        "spaced-audience",
        "seventeen-claims",
        "claim-name",
        "claim-twice",
        "claim-no-values",
        "claim-value-too-long",
        "eks",
        "engine-without-gateway",
    ],
)
def test_bad_input(values: dict[str, Any], expected: str) -> None:
    assert expected in errors(spec(**values))


def test_a_claim_value_type_is_checked_at_construction() -> None:
    with pytest.raises(MlccError) as caught:
        ClaimRule(name="scope", values=("a",), value_type="Strings")  # type: ignore[arg-type]
    assert [p.pointer for p in caught.value.problems] == ["/value_type"]


# -- the rule data: the documented v1alpha1 reference -----------------------------------------

BASE = gateway_of(spec())


def _set(obj: dict[str, Any], path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    changed = copy.deepcopy(obj)
    target: Any = changed
    for part in path[:-1]:
        target = target[part]
    target[path[-1]] = value
    return changed


SCHEDULER = BASE["spec"]["schedulers"][0]
PROVIDER = ("spec", "auth", "jwt", "provider")


@pytest.mark.parametrize(
    ("path", "value", "pointer", "fix"),
    [
        ((*PROVIDER, "issuer"), "http://x", "/spec/auth/jwt/provider/issuer", "https:// URL"),
        ((*PROVIDER, "remoteJWKS", "uri"), "x", "/spec/auth/jwt/provider/remoteJWKS/uri",
         "https:// URL"),
        ((*PROVIDER, "audiences"), [f"a{i}" for i in range(9)], "/spec/auth/jwt/provider/audiences",
         "at most"),
        ((*PROVIDER, "requiredClaims"), [{"name": "s", "valueType": "Str", "values": ["v"]}],
         "/spec/auth/jwt/provider/requiredClaims/0/valueType", "one of the values"),
        ((*PROVIDER, "requiredClaims"), [{"name": "s", "valueType": "String", "values": []}],
         "/spec/auth/jwt/provider/requiredClaims/0/values", "at least"),
        (("spec", "schedulers"), [], "/spec/schedulers", "at least"),
        (("spec", "schedulers"), [SCHEDULER, {**SCHEDULER, "name": "b", "modelName": "b"}],
         "/spec/bbr/enabled", "Body-Based Router"),
        (("spec", "schedulers", 0, "modelName"), "m" * 254, "/spec/schedulers/0/modelName",
         "shorten"),
        (("spec", "schedulers", 0, "name"), "n" * 64, "/spec/schedulers/0/name", "shorten"),
        (("spec", "schedulers", 0, "targetPort"), 0, "/spec/schedulers/0/targetPort", "range"),
        (("spec", "schedulers", 0, "scheduler"), "round-robin", "/spec/schedulers/0/scheduler",
         "one of the values"),
        (("spec", "schedulers", 0, "engineType"), "trtllm", "/spec/schedulers/0/engineType",
         "one of the values"),
        (("spec", "tls", "acmArn"), "arn:aws:iam::1:role/x", "/spec/tls/acmArn",
         "ACM certificate ARN"),
        (("spec", "auth", "jwt", "providers"), [], "/spec/auth/jwt", "does not define it"),
        (("spec", "bbr"), {}, "/spec/bbr", "set the missing field"),
    ],
    ids=[
        "http-issuer", "jwks-not-url", "nine-audiences", "claim-value-type", "claim-no-values",
        "no-scheduler", "two-schedulers-bbr-off", "model-name-long", "scheduler-name-long",
        "port-zero", "scheduler-type", "engine-type", "acm-arn", "misspelt-providers",
        "bbr-enabled",
    ],
)  # fmt: skip
def test_the_rules_refuse_what_the_reference_refuses(
    path: tuple[Any, ...], value: Any, pointer: str, fix: str
) -> None:
    problems = RULES.problems(_set(BASE, path, value))
    assert [p.pointer for p in problems] == [pointer]
    assert problems[0].where == "InferenceGatewayConfig/llama"
    assert "(InferenceGatewayConfig v1alpha1 CRD rules)" in problems[0].message
    assert fix in problems[0].fix


def test_the_rules_need_an_audience_or_a_claim() -> None:
    provider = copy.deepcopy(BASE)
    del provider["spec"]["auth"]["jwt"]["provider"]["audiences"]
    assert [p.fix for p in RULES.problems(provider)] == [
        "set auth.jwt.provider.audiences or auth.jwt.provider.requiredClaims"
    ]


def test_the_reference_examples_pass_the_rules() -> None:
    # The reference's "Minimal multi-model configuration" (its one scheduler), with namespace.
    example = {
        "apiVersion": "inference.sagemaker.aws.amazon.com/v1alpha1",
        "kind": "InferenceGatewayConfig",
        "metadata": {"name": "inference-gateway-demo", "namespace": "inference-gateway"},
        "spec": {
            "bbr": {"enabled": True},
            "tls": {},
            "schedulers": [
                {
                    "name": "llama",
                    "modelName": "meta-llama/Llama-3.2-1B-Instruct",
                    "modelSelector": {"matchLabels": {"app": "vllm-llama"}},
                    "targetPort": 8000,
                    "scheduler": "llm-d",
                }
            ],
        },
    }
    assert RULES.problems(example) == []


def test_the_rule_data_names_its_doc() -> None:
    document = RULES.document
    assert "sagemaker-hyperpod-model-deployment-inference-gateway" in document["source"]
    assert "v2.0.0-eksbuild.2" in document["source"]


# -- readiness ----------------------------------------------------------------------------------


def _live(conditions: list[dict[str, Any]], *, auth: bool = True) -> dict[str, Any]:
    live = copy.deepcopy(BASE)
    live["metadata"]["generation"] = 2
    if not auth:
        del live["spec"]["auth"]
    live["status"] = {"conditions": conditions}
    return live


@pytest.mark.parametrize(
    ("live", "state"),
    [
        (_live([{"type": "Ready", "status": "True", "observedGeneration": 2}]), "ready"),
        (_live([{"type": "Ready", "status": "True", "observedGeneration": 1}]), "progressing"),
        (_live([{"type": "Accepted", "status": "True"}]), "progressing"),
        (_live([{"type": "Ready", "status": "True"}], auth=False), "failed"),
    ],
    ids=["ready", "old-generation", "no-ready-condition", "auth-pruned"],
)
def test_readiness(live: dict[str, Any], state: str) -> None:
    assert readiness(live).state == state
    assert kind_named("InferenceGatewayConfig").readiness(live).state == state


def test_a_pruned_token_check_says_why() -> None:
    assert "checks no token" in readiness(_live([], auth=False)).detail


# -- the add-on turns the gateway on with the controller's role ---------------------------------


@pytest.mark.parametrize(
    ("role", "expected"),
    [
        (None, {"enabled": False}),
        ("arn:aws:iam::1:role/g",
         {"enabled": True, "serviceAccount": {"roleArn": "arn:aws:iam::1:role/g"}}),
    ],
    ids=["off", "on"],
)  # fmt: skip
def test_the_addon_configuration(role: str | None, expected: dict[str, Any]) -> None:
    configuration = addon_configuration(
        execution_role_arn="e", tls_bucket="t", hyperpod_cluster_arn="h", alb_role_arn="a",
        keda_role_arn="k", gateway_role_arn=role,
    )  # fmt: skip
    assert configuration["inferenceGateway"] == expected


# -- mlcc render: the same objects from a spec file -------------------------------------------


def test_mlcc_render_shows_the_gateway(capsys: pytest.CaptureFixture[str], tmp_path: Any) -> None:
    import yaml

    from mlcc_constructs import cli

    document = {
        "engine": {"name": "vllm"},
        "model": {"uri": MODEL},
        "compute": {"instance_type": "ml.g5.12xlarge"},
        "name": "llama",
        "namespace": "inference",
        "target": "hyperpod-eks",
        "account": "123456789012",
        "region": "us-east-1",
        "profile": "dev",
        "endpoint": {
            "gateway": {"jwt": {"issuer": ISSUER, "jwks_uri": JWKS, "audiences": ["llm-clients"]}}
        },
    }
    path = tmp_path / "llama.yaml"
    path.write_text(yaml.safe_dump(document), encoding="utf-8")
    capsys.readouterr()
    code = cli.main(["render", "-f", str(path)])
    out, err = capsys.readouterr()
    assert code == 0, err
    objects = list(yaml.safe_load_all(out))
    assert [o["kind"] for o in objects] == ["InferenceEndpointConfig", "InferenceGatewayConfig"]
    assert objects[1] == gateway_of(spec())
