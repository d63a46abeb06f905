"""The endpoint a deployment gets on eks: its Ingress, NetworkPolicy, API key and Secrets
Manager values (SecretProviderClass, CSI volume, Secret references), and every bad input of
them refused with the field, the value, what is allowed and the fix."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from mlcc_constructs.core.engines.manifests import EngineRegistry
from mlcc_constructs.core.platform.load_balancing import (
    IDLE_TIMEOUT_SECONDS,
    REFERENCE_CIDRS,
    ingress_class_objects,
)
from mlcc_constructs.core.serving.kinds.registry import Readiness, kind_named, object_problems
from mlcc_constructs.core.serving.kinds.secret_provider_class import RULES
from mlcc_constructs.core.serving.prepared import PreparedDeployment, prepare
from mlcc_constructs.core.serving.spec.app_deployments import prepare_deployments
from mlcc_constructs.core.serving.spec.context import RenderContext
from mlcc_constructs.core.serving.spec.deployment import SecretRef
from mlcc_constructs.core.serving.spec.endpoint import Endpoint, SecretsManagerSecret
from mlcc_constructs.core.serving.spec.files import spec_from_layers, spec_from_mapping
from mlcc_constructs.core.support.errors import MlccError
from tests._flat import flat_spec

HF_MODEL = "meta-llama/Llama-3.1-8B-Instruct"
S3_MODEL = "s3://mlcc-models-dev-123456789012-us-east-1/models/meta-llama/Llama-3.1-8B-Instruct/"
CONTEXT = RenderContext(account="123456789012", region="us-east-1", profile="dev")
CERT = "arn:aws:acm:us-east-1:123456789012:certificate/0f3b9a2c-1d4e-4f5a-8b6c-7d8e9f0a1b2c"
KEY_ARN = "arn:aws:secretsmanager:us-east-1:123456789012:secret:team/llm-key-AbC123"


def _prepared(*, context: RenderContext = CONTEXT, **values: Any) -> PreparedDeployment:
    fields: dict[str, Any] = {
        "engine": "vllm",
        "model": HF_MODEL,
        "instance_type": "g5.xlarge",
        "name": "chat",
        "namespace": "inference",
        **values,
    }
    return prepare(flat_spec(**fields), context=context)


def _one(prepared: PreparedDeployment, kind: str) -> Mapping[str, Any]:
    (found,) = [e.object for e in prepared.objects if e.object["kind"] == kind]
    return found


def _kinds(prepared: PreparedDeployment) -> list[str]:
    return [e.object["kind"] for e in prepared.objects]


def _problems(**values: Any) -> list[tuple[str, Any]]:
    with pytest.raises(MlccError) as caught:
        _prepared(**values)
    return [(p.pointer, p.value) for p in caught.value.problems]


def _engine_container(prepared: PreparedDeployment) -> Mapping[str, Any]:
    containers = _one(prepared, "Deployment")["spec"]["template"]["spec"]["containers"]
    return next(c for c in containers if c["name"] == "engine")


# --- Ingress ---------------------------------------------------------------------------


def test_the_default_endpoint_is_an_internal_http_ingress_of_the_inference_api_only() -> None:
    prepared = _prepared()
    ingress = _one(prepared, "Ingress")
    assert ingress["spec"]["ingressClassName"] == "mlcc-internal"
    annotations = ingress["metadata"]["annotations"]
    assert annotations == {
        "alb.ingress.kubernetes.io/healthcheck-path": "/health",
        "alb.ingress.kubernetes.io/listen-ports": '[{"HTTP":80}]',
        "alb.ingress.kubernetes.io/success-codes": "200",
        "alb.ingress.kubernetes.io/target-group-attributes": (
            "deregistration_delay.timeout_seconds=600"
        ),
        "alb.ingress.kubernetes.io/target-type": "ip",
    }
    (rule,) = ingress["spec"]["rules"]
    assert "host" not in rule
    paths = [p["path"] for p in rule["http"]["paths"]]
    assert paths == list(prepared.resolution.manifest.api_paths)
    assert not any("lora" in path for path in paths)  # admin routes stay in the cluster
    for entry in rule["http"]["paths"]:
        assert entry["backend"] == {"service": {"name": "chat", "port": {"name": "http"}}}
    assert object_problems(ingress) == []


def test_a_certificate_gives_https_with_http_redirected_and_a_modern_tls_policy() -> None:
    ingress = _one(
        _prepared(
            endpoint=Endpoint(scheme="internal", certificate_arn=CERT, hostname="llm.example.com")
        ),
        "Ingress",
    )
    annotations = ingress["metadata"]["annotations"]
    assert annotations["alb.ingress.kubernetes.io/certificate-arn"] == CERT
    assert annotations["alb.ingress.kubernetes.io/listen-ports"] == '[{"HTTP":80},{"HTTPS":443}]'
    assert annotations["alb.ingress.kubernetes.io/ssl-redirect"] == "443"
    assert annotations["alb.ingress.kubernetes.io/ssl-policy"].startswith("ELBSecurityPolicy-TLS13")
    assert ingress["spec"]["rules"][0]["host"] == "llm.example.com"


def test_a_group_names_the_shared_class_and_scheme_none_renders_no_ingress() -> None:
    grouped = _one(_prepared(endpoint=Endpoint(scheme="internal", group="team-a")), "Ingress")
    assert grouped["spec"]["ingressClassName"] == "mlcc-internal-team-a"
    assert "Ingress" not in _kinds(_prepared(endpoint=Endpoint(scheme="none")))


def test_the_sglang_health_path_is_its_own() -> None:
    ingress = _one(_prepared(engine="sglang"), "Ingress")
    assert ingress["metadata"]["annotations"]["alb.ingress.kubernetes.io/healthcheck-path"] == (
        "/health"
    )


def test_an_engine_without_api_paths_is_routed_whole_inside_and_refused_on_the_internet(
    tmp_path: Path,
) -> None:
    builtin = dict(EngineRegistry.load(use_env=False).get("vllm").raw)
    plugin = {**builtin, "engine": "bare", "env_var_prefix": "BARE_"}
    plugin.pop("api_paths")
    (tmp_path / "bare").mkdir()
    (tmp_path / "bare" / "manifest.json").write_text(json.dumps(plugin))
    registry = EngineRegistry.load([tmp_path], use_env=False)
    spec = flat_spec(
        engine="bare", model=HF_MODEL, instance_type="g5.xlarge", name="bare",
        image="example.com/bare:1",
    )  # fmt: skip
    prepared = prepare(spec, context=CONTEXT, registry=registry)
    paths = _one(prepared, "Ingress")["spec"]["rules"][0]["http"]["paths"]
    assert [p["path"] for p in paths] == ["/"]
    assert any("declares no api_paths" in w for w in prepared.warnings)
    exposed = dataclasses.replace(
        spec,
        endpoint=Endpoint(
            scheme="internet-facing", certificate_arn=CERT, api_key_secret="team/key"
        ),
    )
    with pytest.raises(MlccError) as caught:
        prepare(exposed, context=CONTEXT, registry=registry)
    assert [(p.pointer, p.value) for p in caught.value.problems] == [
        ("/endpoint/scheme", "internet-facing")
    ]


def test_the_cluster_side_classes_name_the_subnets_and_the_streaming_timeout() -> None:
    params, ingress_class = ingress_class_objects("internal", "team-a", subnet_ids=["s-1", "s-2"])
    assert params["kind"] == "IngressClassParams"
    assert params["apiVersion"] == "eks.amazonaws.com/v1"
    assert params["spec"] == {
        "scheme": "internal",
        "subnets": {"ids": ["s-1", "s-2"]},
        "loadBalancerAttributes": [
            {"key": "idle_timeout.timeout_seconds", "value": str(IDLE_TIMEOUT_SECONDS)}
        ],
        "group": {"name": "mlcc-internal-team-a"},
    }
    assert ingress_class["spec"]["controller"] == "eks.amazonaws.com/alb"
    assert ingress_class["spec"]["parameters"]["name"] == params["metadata"]["name"]
    assert IDLE_TIMEOUT_SECONDS > 60  # the ALB's default would cut a slow first token
    (ungrouped, _) = ingress_class_objects("internet-facing", None, subnet_ids=["s-1", "s-2"])
    assert "group" not in ungrouped["spec"]
    assert ungrouped["metadata"]["name"] == "mlcc-internet-facing"


# --- NetworkPolicy ---------------------------------------------------------------------


def _selects(policy: Mapping[str, Any], prepared: PreparedDeployment) -> bool:
    """checkov CKV2_K8S_6's edge: every podSelector.matchLabels entry is a pod label."""
    selector = policy["spec"]["podSelector"].get("matchLabels", {})
    labels = _one(prepared, "Deployment")["spec"]["template"]["metadata"]["labels"]
    return all(labels.get(k) == v for k, v in selector.items())


def test_only_the_load_balancer_subnets_and_allowed_namespaces_reach_the_engine() -> None:
    prepared = _prepared(allow_from=("monitoring", "gateway"))
    policy = _one(prepared, "NetworkPolicy")
    assert _selects(policy, prepared)
    assert policy["spec"]["policyTypes"] == ["Ingress", "Egress"]
    lb, namespaces = policy["spec"]["ingress"]
    assert [b["ipBlock"]["cidr"] for b in lb["from"]] == list(REFERENCE_CIDRS["internal"])
    assert lb["ports"] == [{"protocol": "TCP", "port": 8000}]
    assert [n["namespaceSelector"]["matchLabels"] for n in namespaces["from"]] == [
        {"kubernetes.io/metadata.name": "monitoring"},
        {"kubernetes.io/metadata.name": "gateway"},
    ]
    assert object_problems(policy) == []


def test_the_scheme_and_the_context_choose_the_admitted_subnets() -> None:
    cidrs = {"internet-facing": ("10.8.0.0/24", "10.8.1.0/24")}
    context = dataclasses.replace(CONTEXT, load_balancer_cidrs=cidrs)
    policy = _one(
        _prepared(
            context=context,
            endpoint=Endpoint(scheme="internet-facing", certificate_arn=CERT),
            api_key_secret="team/key",
        ),
        "NetworkPolicy",
    )
    (lb,) = policy["spec"]["ingress"]
    assert [b["ipBlock"]["cidr"] for b in lb["from"]] == ["10.8.0.0/24", "10.8.1.0/24"]
    # no load balancer and no allowed namespace: only the cluster's Prometheus scraper (its
    # interfaces in the internal load balancer subnets, which hold no pod) reads /metrics
    closed = _one(_prepared(endpoint=Endpoint(scheme="none")), "NetworkPolicy")
    (scraper,) = closed["spec"]["ingress"]
    assert [b["ipBlock"]["cidr"] for b in scraper["from"]] == list(REFERENCE_CIDRS["internal"])


def test_egress_is_dns_and_the_hub_only_for_a_hub_model() -> None:
    dns = {"ports": [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}]}
    hub = _one(_prepared(), "NetworkPolicy")["spec"]["egress"]
    assert hub == [dns, {"ports": [{"protocol": "TCP", "port": 443}]}]
    s3 = _one(_prepared(model=S3_MODEL, model_load="mount"), "NetworkPolicy")["spec"]["egress"]
    assert s3 == [dns]  # Mountpoint reads the model in the CSI driver's pods
    streamed = _one(_prepared(model=S3_MODEL), "NetworkPolicy")["spec"]["egress"]
    # The engine reads S3 itself, as its own role: S3 over HTTPS, and the EKS Pod Identity
    # agent at its link-local addresses on TCP 80, nothing more.
    agent = {
        "to": [
            {"ipBlock": {"cidr": "169.254.170.23/32"}},
            {"ipBlock": {"cidr": "fd00:ec2::23/128"}},
        ],
        "ports": [{"protocol": "TCP", "port": 80}],
    }
    assert streamed == [*hub, agent]


@pytest.mark.parametrize("engine", ["vllm", "sglang", "tensorrt-llm", "lmi", "llama-cpp"])
@pytest.mark.parametrize("model", [HF_MODEL, S3_MODEL])
def test_every_rendered_deployment_has_a_policy_selecting_its_pods(engine: str, model: str) -> None:
    image = {"image": "example.com/llama-cpp:1"} if engine == "llama-cpp" else {}
    prepared = _prepared(engine=engine, model=model, **image)
    assert _selects(_one(prepared, "NetworkPolicy"), prepared)


# --- API keys and Secrets Manager ------------------------------------------------------


def test_vllm_reads_its_key_from_its_own_variable_through_the_synced_secret() -> None:
    prepared = _prepared(api_key_secret=KEY_ARN)
    container = _engine_container(prepared)
    key_env = [e for e in container["env"] if e["name"] == "VLLM_API_KEY"]
    assert key_env == [
        {"name": "VLLM_API_KEY", "valueFrom": {"secretKeyRef": {"name": "chat-secrets",
                                                                "key": "api-key"}}}
    ]  # fmt: skip
    assert "args" not in container or not any("key" in a for a in container["args"])
    spc = _one(prepared, "SecretProviderClass")
    assert RULES.problems(spc) == []
    assert spc["spec"]["provider"] == "aws"
    assert spc["spec"]["parameters"]["usePodIdentity"] == "true"
    assert json.loads(spc["spec"]["parameters"]["objects"]) == [
        {"objectName": KEY_ARN, "objectType": "secretsmanager", "objectAlias": "api-key"}
    ]
    (synced,) = spc["spec"]["secretObjects"]
    assert synced["secretName"] == "chat-secrets"
    assert synced["data"] == [{"key": "api-key", "objectName": "api-key"}]
    template = _one(prepared, "Deployment")["spec"]["template"]["spec"]
    (volume,) = [v for v in template["volumes"] if v["name"] == "secrets"]
    assert volume["csi"] == {
        "driver": "secrets-store.csi.k8s.io",
        "readOnly": True,
        "volumeAttributes": {"secretProviderClass": "chat-secrets"},
    }
    assert {"name": "secrets", "mountPath": "/mnt/secrets-store", "readOnly": True} in container[
        "volumeMounts"
    ]


def test_no_secret_value_or_secret_name_is_a_plain_value_anywhere() -> None:
    prepared = _prepared(
        api_key_secret="team/llm-key",
        secret_env={"HF_TOKEN": SecretsManagerSecret(secret="team/hf", json_key="token")},
    )
    for entry in prepared.objects:
        if entry.object["kind"] in ("ConfigMap", "SecretProviderClass"):
            continue  # the SecretProviderClass names the secrets (not their values) by design
        text = json.dumps(entry.object)
        assert "team/llm-key" not in text and "team/hf" not in text, entry.id
    container = _engine_container(prepared)
    by_name = {e["name"]: e for e in container["env"]}
    assert "value" not in by_name["HF_TOKEN"] and "value" not in by_name["VLLM_API_KEY"]


def test_json_keys_of_one_secret_are_read_once_through_jmes_paths() -> None:
    prepared = _prepared(
        secret_env={
            "HF_TOKEN": SecretsManagerSecret(secret="team/bundle", json_key="hf"),
            "OTHER_TOKEN": SecretsManagerSecret(secret="team/bundle", json_key="other"),
            "PLAIN": SecretRef(name="existing", key="k"),
        }
    )
    spc = _one(prepared, "SecretProviderClass")
    assert json.loads(spc["spec"]["parameters"]["objects"]) == [
        {
            "objectName": "team/bundle",
            "objectType": "secretsmanager",
            "jmesPath": [
                {"path": "hf", "objectAlias": "hf-token"},
                {"path": "other", "objectAlias": "other-token"},
            ],
            "objectAlias": "hf-token-source",
        }
    ]
    env = {e["name"]: e for e in _engine_container(prepared)["env"]}
    assert env["PLAIN"]["valueFrom"]["secretKeyRef"] == {"name": "existing", "key": "k"}
    assert env["OTHER_TOKEN"]["valueFrom"]["secretKeyRef"] == {
        "name": "chat-secrets",
        "key": "other-token",
    }


def test_without_secrets_manager_values_no_provider_class_or_volume_is_rendered() -> None:
    prepared = _prepared(secret_env={"HF_TOKEN": SecretRef(name="hf", key="token")})
    assert "SecretProviderClass" not in _kinds(prepared)
    volumes = _one(prepared, "Deployment")["spec"]["template"]["spec"]["volumes"]
    assert "secrets" not in [v["name"] for v in volumes]


def test_sglang_gets_its_key_in_a_private_config_file_the_wrapper_writes(tmp_path: Path) -> None:
    prepared = _prepared(engine="sglang", api_key_secret="team/key")
    container = _engine_container(prepared)
    assert "args" not in container  # nothing on the command line
    (key_env,) = [e for e in container["env"] if e["name"] == "MLCC_API_KEY"]
    assert key_env["valueFrom"]["secretKeyRef"] == {"name": "chat-secrets", "key": "api-key"}
    # run the real wrapper the pod runs, with the env the pod gets
    maps = {e.object["metadata"]["name"]: e.object for e in prepared.objects if e.id.endswith(
        "ConfigMap")}  # fmt: skip
    wrapper = maps["chat-wrapper"]["data"]
    (tmp_path / "wrapper.py").write_text(wrapper["wrapper.py"])
    env = {**maps["chat-config"]["data"], "PATH": os.environ["PATH"], "TMPDIR": str(tmp_path)}
    env |= {e["name"]: e["value"] for e in container["env"] if "value" in e}
    env |= {"MLCC_ENGINE_MANIFEST_JSON": wrapper["manifest.json"], "MLCC_API_KEY": "s3cr3t"}
    run = [sys.executable, str(tmp_path / "wrapper.py")]
    argv = json.loads(subprocess.run([*run, "--print"], env=env, check=True,
                                     capture_output=True, text=True).stdout)  # fmt: skip
    assert "s3cr3t" not in argv and "--api-key" not in argv
    config = Path(argv[argv.index("--config") + 1])
    assert config.parent == tmp_path and config.suffix == ".yaml"
    assert json.loads(config.read_text()) == {"api-key": "s3cr3t"}
    assert config.stat().st_mode & 0o777 == 0o600
    exec_env = subprocess.run([*run, "--print-env"], env=env, check=True,
                              capture_output=True, text=True).stdout  # fmt: skip
    assert "s3cr3t" not in exec_env and "MLCC_API_KEY" not in json.loads(exec_env)


def test_a_config_file_key_needs_the_wrapper() -> None:
    problems = _problems(engine="sglang", api_key_secret="team/key", config_delivery="args")
    assert problems == [("/engine/config_delivery", "args")]


def test_an_engine_without_a_key_setting_is_refused_a_key() -> None:
    problems = _problems(engine="tensorrt-llm", api_key_secret="team/key")
    assert problems == [("/endpoint/api_key_secret", "team/key")]


def test_secrets_manager_values_are_refused_where_pods_mount_nothing() -> None:
    problems = _problems(target="hyperpod-eks", model=S3_MODEL, api_key_secret="team/key")
    assert ("/endpoint/api_key_secret", "hyperpod-eks") in problems


# --- bad input -------------------------------------------------------------------------

BAD_ENDPOINTS = [
    # internet-facing without a certificate, without a key, without both
    (
        {"endpoint": Endpoint(scheme="internet-facing", certificate_arn=CERT)},
        [("/endpoint/scheme", "internet-facing")],
    ),
    (
        {"endpoint": Endpoint(scheme="internet-facing"), "api_key_secret": "team/key"},
        [("/endpoint/scheme", "internet-facing")],
    ),
    ({"endpoint": Endpoint(scheme="internet-facing")}, [("/endpoint/scheme", "internet-facing")]),
    # a certificate of another region, of another partition, malformed
    (
        {"endpoint": Endpoint(certificate_arn=CERT.replace("us-east-1", "eu-west-1"))},
        [("/endpoint/certificate_arn", CERT.replace("us-east-1", "eu-west-1"))],
    ),
    (
        {"endpoint": Endpoint(certificate_arn=CERT.replace("arn:aws:", "arn:aws-cn:"))},
        [("/endpoint/certificate_arn", CERT.replace("arn:aws:", "arn:aws-cn:"))],
    ),
    (
        {"endpoint": Endpoint(certificate_arn="arn:aws:acm:us-east-1:1234:certificate/x")},
        [("/endpoint/certificate_arn", "arn:aws:acm:us-east-1:1234:certificate/x")],
    ),
    # a hostname that is not a DNS name, a group that cannot name a class
    (
        {"endpoint": Endpoint(hostname="LLM.example.com")},
        [("/endpoint/hostname", "LLM.example.com")],
    ),
    (
        {"endpoint": Endpoint(hostname="llm_1.example.com")},
        [("/endpoint/hostname", "llm_1.example.com")],
    ),
    ({"endpoint": Endpoint(group="Team A")}, [("/endpoint/group", "Team A")]),
    # load balancer fields without a load balancer
    (
        {"endpoint": Endpoint(scheme="none", hostname="llm.example.com")},
        [("/endpoint/scheme", "none")],
    ),
    # malformed secrets
    ({"api_key_secret": "team key"}, [("/endpoint/api_key_secret", "team key")]),
    (
        {"api_key_secret": "arn:aws:secretsmanager:us-east-1:123456789012:secret:team/key"},
        [
            (
                "/endpoint/api_key_secret",
                "arn:aws:secretsmanager:us-east-1:123456789012:secret:team/key",
            )
        ],
    ),
    (
        {"api_key_secret": KEY_ARN.replace("us-east-1", "us-west-2")},
        [("/endpoint/api_key_secret", KEY_ARN.replace("us-east-1", "us-west-2"))],
    ),
    (
        {"api_key_secret": KEY_ARN.replace("123456789012", "210987654321")},
        [("/endpoint/api_key_secret", KEY_ARN.replace("123456789012", "210987654321"))],
    ),
    (
        {"secret_env": {"HF_TOKEN": SecretsManagerSecret(secret="bad secret")}},
        [("/engine/secret_env/HF_TOKEN/secret", "bad secret")],
    ),
    ({"allow_from": ("Monitoring",)}, [("/endpoint/allow_from/0", "Monitoring")]),
    (
        {"api_key_secret": "team/key", "env": {"VLLM_API_KEY": "plain"}},
        [("/engine/env/VLLM_API_KEY", "VLLM_API_KEY")],  # a key in plain env is refused as such
    ),
]


@pytest.mark.parametrize(("values", "expected"), BAD_ENDPOINTS)
def test_bad_endpoint_and_secret_input_is_refused_naming_the_field(
    values: dict[str, Any], expected: list[tuple[str, Any]]
) -> None:
    with pytest.raises(MlccError) as caught:
        _prepared(**values)
    problems = caught.value.problems
    assert [(p.pointer, p.value) for p in problems] == expected
    for problem in problems:  # what is wrong, the value, and what to do
        assert problem.message and (problem.allowed or problem.fix), problem


def test_a_bad_load_balancer_cidr_is_refused_in_the_context() -> None:
    with pytest.raises(MlccError) as caught:
        RenderContext(load_balancer_cidrs={"internal": ["10.0.16.1/24", "10.0.17.0/24"],
                                           "public": ["10.0.0.0/24", "10.0.1.0/24"],
                                           "internet-facing": ["10.0.20.0/24"]})  # fmt: skip
    assert [p.pointer for p in caught.value.problems] == [
        "/load_balancer_cidrs/internal/0",
        "/load_balancer_cidrs/public",
        "/load_balancer_cidrs/internet-facing",
    ]


# --- spec files and flags --------------------------------------------------------------


def test_a_spec_file_reads_the_endpoint_the_key_and_both_secret_forms() -> None:
    loaded = spec_from_mapping(
        {
            "engine": {"name": "vllm", "secret_env": {
                "HF_TOKEN": {"secrets_manager": "team/hf", "json_key": "token"},
                "OTHER": {"name": "existing", "key": "k"},
            }},
            "model": {"uri": HF_MODEL}, "compute": {"instance_type": "g5.xlarge"}, "name": "chat",
            "endpoint": {
                "scheme": "internet-facing", "certificate_arn": CERT, "group": "a",
                "api_key_secret": "team/key", "allow_from": ["monitoring"],
            },
        },
        where="spec.yaml",
    )  # fmt: skip
    spec = loaded.spec
    assert spec.endpoint == Endpoint(
        scheme="internet-facing",
        certificate_arn=CERT,
        group="a",
        api_key_secret="team/key",
        allow_from=("monitoring",),
    )
    assert spec.endpoint.allow_from == ("monitoring",)
    assert spec.engine.secret_env == {
        "HF_TOKEN": SecretsManagerSecret(secret="team/hf", json_key="token"),
        "OTHER": SecretRef(name="existing", key="k"),
    }


def test_a_mixed_secret_entry_names_the_variable_and_both_forms() -> None:
    with pytest.raises(MlccError) as caught:
        spec_from_mapping(
            {
                "engine": {
                    "name": "vllm",
                    "secret_env": {"HF_TOKEN": {"name": "hf", "secrets_manager": "team/hf"}},
                },
                "model": {"uri": HF_MODEL},
                "compute": {"instance_type": "g5.xlarge"},
            },
            where="spec.yaml",
        )
    (problem,) = caught.value.problems
    assert (problem.where, problem.pointer) == ("spec.yaml", "/engine/secret_env/HF_TOKEN")
    assert problem.allowed == "{name, key} or {secrets_manager[, json_key]}"


def test_flags_override_endpoint_fields_one_by_one() -> None:
    base = {
        "engine": {"name": "vllm"},
        "model": {"uri": HF_MODEL},
        "compute": {"instance_type": "g5.xlarge"},
    }
    file_layer = {**base, "endpoint": {"scheme": "internal", "hostname": "llm.example.com"}}
    loaded = spec_from_layers(
        [("spec.yaml", file_layer), ("--load-balancer-group", {"endpoint": {"group": "a"}})]
    )
    assert loaded.spec.endpoint == Endpoint(hostname="llm.example.com", group="a")
    assert loaded.sources["/endpoint/group"] == "--load-balancer-group"


def test_deployments_sharing_a_group_need_hosts_of_their_own() -> None:
    entry = {
        "engine": {"name": "vllm"},
        "model": {"uri": HF_MODEL},
        "compute": {"instance_type": "g5.xlarge"},
        "endpoint": {"group": "shared"},
    }
    with pytest.raises(MlccError) as caught:
        prepare_deployments(
            [{**entry, "name": "a"}, {**entry, "name": "b"}], defaults={"region": "us-east-1"}
        )
    (problem,) = caught.value.problems
    assert problem.where == "cdk.json:/context/reference_deployments/1"
    assert problem.pointer == "/endpoint/hostname"
    hosts = [
        {**entry, "name": name, "endpoint": {"group": "shared", "hostname": f"{name}.example.com"}}
        for name in ("a", "b")
    ]
    assert len(prepare_deployments(hosts, defaults={"region": "us-east-1"})) == 2


# --- hyperpod-eks ----------------------------------------------------------------------


def _iec(**values: Any) -> Mapping[str, Any]:
    return _one(
        _prepared(target="hyperpod-eks", model=S3_MODEL, **values), "InferenceEndpointConfig"
    )


def test_an_iec_gets_the_teams_certificate_for_its_hostname() -> None:
    iec = _iec(endpoint=Endpoint(certificate_arn=CERT, hostname="llm.example.com"))
    assert iec["spec"]["tlsConfig"]["customCertificateConfig"] == {
        "acmArn": CERT,
        "domainName": "llm.example.com",
    }
    assert iec["spec"]["tlsConfig"]["tlsCertificateOutputS3Uri"].startswith("s3://mlcc-tls-")
    assert object_problems(iec) == []
    assert "customCertificateConfig" not in _iec()["spec"]["tlsConfig"]


@pytest.mark.parametrize(
    ("endpoint", "pointer"),
    [
        (Endpoint(scheme="internet-facing", certificate_arn=CERT, hostname="a.example.com"),
         "/endpoint/scheme"),
        (Endpoint(scheme="none"), "/endpoint/scheme"),
        (Endpoint(group="shared"), "/endpoint/group"),
        (Endpoint(certificate_arn=CERT), "/endpoint/hostname"),
        (Endpoint(certificate_arn=CERT, hostname="*.example.com"), "/endpoint/hostname"),
    ],
)  # fmt: skip
def test_what_the_operator_cannot_do_is_refused_on_hyperpod(
    endpoint: Endpoint, pointer: str
) -> None:
    with pytest.raises(MlccError) as caught:
        _prepared(target="hyperpod-eks", model=S3_MODEL, endpoint=endpoint)
    assert [p.pointer for p in caught.value.problems] == [pointer]


def test_an_ingress_is_ready_once_its_load_balancer_has_an_address() -> None:
    kind = kind_named("Ingress")
    assert kind.readiness({"status": {}}) == Readiness(
        "progressing", "no load balancer address yet"
    )
    live = {
        "status": {"loadBalancer": {"ingress": [{"hostname": "internal-k8s.elb.amazonaws.com"}]}}
    }
    assert kind.readiness(live) == Readiness("ready", "internal-k8s.elb.amazonaws.com")
