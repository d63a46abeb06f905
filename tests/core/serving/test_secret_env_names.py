"""``secret_env`` names take the env keys' rule (shape, reserved names, the case of an engine
prefix) and may not also be plain ``env``: table-driven, each refusal at its JSON pointer."""

from __future__ import annotations

import pytest

from mlcc_constructs.core.serving.render import render
from mlcc_constructs.core.serving.spec.context import RenderContext
from mlcc_constructs.core.serving.spec.deployment import SecretRef
from mlcc_constructs.core.support.errors import MlccError
from tests._flat import flat_spec

CONTEXT = RenderContext(account="123456789012", region="us-east-1", profile="dev")
MODEL = "s3://mlcc-models-dev-123456789012-us-east-1/models/meta-llama/Llama-3.1-8B-Instruct/"


def _render(name: str, env: dict[str, str] | None = None) -> list[str]:
    spec = flat_spec(
        engine="vllm",
        model=MODEL,
        instance_type="ml.g5.2xlarge",
        name="chat",
        secret_env={name: SecretRef(name="creds", key="token")},
        env=env or {},
    )
    try:
        rendered = render(spec, context=CONTEXT)
    except MlccError as error:
        return [str(p) for p in error.problems]
    pod = next(o for o in rendered.objects if o["kind"] == "Deployment")["spec"]["template"]
    (engine,) = (c for c in pod["spec"]["containers"] if c["name"] == "engine")
    assert {"name": name, "valueFrom": {"secretKeyRef": {"name": "creds", "key": "token"}}} in (
        engine["env"]
    )
    return []


REFUSED = {
    "not a name": ("bad name", "/engine/secret_env/bad name: not an environment variable name"),
    "leading digit": ("1TOKEN", "/engine/secret_env/1TOKEN: not an environment variable name"),
    # A Secret's value would replace the wrapper's own variable, or one every pod gets.
    "wrapper's": ("MLCC_ENGINE", "/engine/secret_env/MLCC_ENGINE: MLCC_ENGINE is reserved"),
    "pod's": ("HOME", "/engine/secret_env/HOME: HOME is reserved: the rendered pod sets it"),
    "lower-case engine prefix": (
        "vllm_api_key",
        "/engine/secret_env/vllm_api_key: an engine key must be upper-case",
    ),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_a_bad_secret_env_name_is_refused_at_its_pointer(case: str) -> None:
    name, message = REFUSED[case]
    (problem,) = _render(name)
    assert problem.startswith(message)


@pytest.mark.parametrize("name", ["OPENAI_API_KEY", "VLLM_API_KEY", "HF_TOKEN", "_PRIVATE"])
def test_a_good_secret_env_name_reaches_the_engine_from_its_secret(name: str) -> None:
    assert _render(name) == []


def test_a_name_in_env_and_secret_env_is_refused() -> None:
    (problem,) = _render("NCCL_SOCKET_IFNAME", env={"NCCL_SOCKET_IFNAME": "eth0"})
    assert problem.startswith(
        "/engine/secret_env/NCCL_SOCKET_IFNAME: NCCL_SOCKET_IFNAME is set twice: in env and in "
        "secret_env"
    )
    assert "drop NCCL_SOCKET_IFNAME from env" in problem
