"""The engine version follows the image (issue 39): the release whose flags are checked is the
one the pod runs, derived from the image's tag (else the pinned default image's); a version that
contradicts the image is refused, an image whose tag names no version needs one, and only
releases with recorded parser facts are served."""

from __future__ import annotations

from typing import Any

import pytest

from mlcc_constructs.core.engines.image_version import image_tag, tag_version
from mlcc_constructs.core.engines.parser_facts import recorded_versions
from mlcc_constructs.core.platform.versions import pinned
from mlcc_constructs.core.serving.prepared import PreparedDeployment, prepare
from mlcc_constructs.core.serving.resolve.engine_config import resolve_deployment_for_its_target
from mlcc_constructs.core.serving.spec.context import RenderContext
from mlcc_constructs.core.support.errors import MlccError
from tests._flat import flat_spec

CONTEXT = RenderContext(account="123456789012", region="us-east-1", profile="dev")
S3_MODEL = "s3://mlcc-models-123456789012-us-east-1/models/meta-llama/Llama-3.1-8B-Instruct/"
DIGEST = "sha256:" + "0123456789abcdef" * 4


def _prepare(**fields: Any) -> PreparedDeployment:
    values: dict[str, Any] = {
        "engine": "vllm",
        "model": S3_MODEL,
        "instance_type": "ml.g5.12xlarge",
        "name": "chat",
        **fields,
    }
    return prepare(flat_spec(**values), context=CONTEXT)


def _errors(**fields: Any) -> list[str]:
    with pytest.raises(MlccError) as caught:
        _prepare(**fields)
    return [str(p) for p in caught.value.problems]


def test_an_image_tag_sets_the_release_its_flags_are_checked_against() -> None:
    # --disable-log-requests is a flag of vllm 0.33.0, not of 0.31.0 (the pinned image)
    env = {"VLLM_DISABLE_LOG_REQUESTS": "true"}
    prepared = _prepare(image="vllm/vllm-openai:v0.33.0", env=env)
    assert prepared.spec.engine.version == "0.33.0"
    assert ("VLLM_DISABLE_LOG_REQUESTS", "true") in prepared.resolution.tier2
    (error,) = _errors(env=env)  # the pinned image: 0.31.0
    assert "--disable-log-requests is not a flag of vllm 0.31.0" in error


def test_without_an_image_the_pinned_images_release_applies() -> None:
    assert _prepare().spec.engine.version == pinned().engine_versions["vllm"] == "0.31.0"


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        (
            {"engine_version": "0.33.0"},
            "/engine/version: engine.version 0.33.0 contradicts the pinned image "
            "vllm/vllm-openai:v0.31.0, which runs vllm 0.31.0 (its tag): the flags would be "
            "checked against one release while the pod runs another (got '0.33.0'; allowed: "
            "0.31.0 (the image's tag); fix: drop engine.version (it follows the image), or set "
            "engine.image to an image of vllm 0.33.0)",
        ),
        (
            {"engine_version": "0.31.0", "image": "vllm/vllm-openai:v0.33.0"},
            "/engine/version: engine.version 0.31.0 contradicts the image "
            "vllm/vllm-openai:v0.33.0, which runs vllm 0.33.0 (its tag): the flags would be "
            "checked against one release while the pod runs another (got '0.31.0'; allowed: "
            "0.33.0 (the image's tag); fix: drop engine.version (it follows the image), or set "
            "engine.image to an image of vllm 0.31.0)",
        ),
        (
            {"image": f"registry.example.com/team/vllm@{DIGEST}"},
            "/engine/image: the image's tag names no vllm version (untagged, digest only or a "
            "moving tag), so the release whose flags to check is unknown (got "
            f"'registry.example.com/team/vllm@{DIGEST}'; allowed: a tag with the version (e.g. "
            ":v0.33.0), or engine.version set (recorded: 0.31.0, 0.33.0); fix: set "
            "engine.version (--engine-version) to the vllm version the image holds)",
        ),
        (
            {"image": "registry.example.com:5000/team/vllm"},
            "/engine/image: the image's tag names no vllm version (untagged, digest only or a "
            "moving tag), so the release whose flags to check is unknown (got "
            "'registry.example.com:5000/team/vllm'; allowed: a tag with the version (e.g. "
            ":v0.33.0), or engine.version set (recorded: 0.31.0, 0.33.0); fix: set "
            "engine.version (--engine-version) to the vllm version the image holds)",
        ),
        (
            {"image": "vllm/vllm-openai:v0.32.0"},
            "/engine/image: vllm 0.32.0 has no recorded parser facts: its flags and values "
            "cannot be checked (got 'vllm/vllm-openai:v0.32.0'; allowed: a vllm release with "
            "recorded facts: 0.31.0, 0.33.0; fix: use an image of vllm 0.31.0 or 0.33.0, or "
            "record the release's parser (tools/engine_parser_facts.py writes "
            "mlcc_constructs/data/engine_parsers/vllm/0.32.0.json))",
        ),
        (
            {"engine_version": "0.32.0", "image": "registry.example.com/team/vllm:latest"},
            "/engine/version: vllm 0.32.0 has no recorded parser facts: its flags and values "
            "cannot be checked (got '0.32.0'; allowed: a vllm release with recorded facts: "
            "0.31.0, 0.33.0; fix: use an image of vllm 0.31.0 or 0.33.0, or record the "
            "release's parser (tools/engine_parser_facts.py writes "
            "mlcc_constructs/data/engine_parsers/vllm/0.32.0.json))",
        ),
    ],
)
def test_a_version_the_image_does_not_tell_or_contradicts_is_refused(
    fields: dict[str, Any], expected: str
) -> None:
    assert _errors(**fields) == [expected]


def test_an_untagged_image_with_its_version_given_renders() -> None:
    image = f"registry.example.com/team/vllm@{DIGEST}"
    prepared = _prepare(image=image, engine_version="0.33.0")
    assert prepared.spec.engine.version == "0.33.0"


def test_mlcc_env_and_argv_follow_the_image_too() -> None:
    spec = flat_spec(
        engine="vllm",
        model=S3_MODEL,
        instance_type="ml.g5.12xlarge",
        image="vllm/vllm-openai:v0.33.0",
        env={"VLLM_DISABLE_LOG_REQUESTS": "true"},
    )
    resolved, resolution, _ = resolve_deployment_for_its_target(spec, registry=_registry())
    assert resolved.engine.version == "0.33.0"
    assert ("VLLM_DISABLE_LOG_REQUESTS", "true") in resolution.tier2


def test_an_engine_without_recorded_facts_keeps_an_untagged_image_with_a_warning() -> None:
    prepared = _prepare(engine="lmi", image="registry.example.com/team/lmi:latest")
    assert prepared.spec.engine.version is None
    assert any(w.startswith("engine version not given") for w in prepared.warnings)


@pytest.mark.parametrize(
    ("image", "tag", "version"),
    [
        ("vllm/vllm-openai:v0.33.0", "v0.33.0", "0.33.0"),
        ("lmsysorg/sglang:v0.5.21-cu129", "v0.5.21-cu129", "0.5.21"),
        ("nvcr.io/nvidia/tensorrt-llm/release:1.0.0", "1.0.0", "1.0.0"),
        (f"registry.example.com:5000/vllm:v0.31.0@{DIGEST}", "v0.31.0", "0.31.0"),
        (f"registry.example.com:5000/vllm@{DIGEST}", None, None),
        ("vllm/vllm-openai:latest", "latest", None),
        ("vllm/vllm-openai", None, None),
    ],
)
def test_the_version_an_image_tag_names(image: str, tag: str | None, version: str | None) -> None:
    assert (image_tag(image), tag_version(image)) == (tag, version)


@pytest.mark.parametrize("engine", sorted(pinned().engine_images))
def test_each_pinned_image_tag_names_the_pinned_version(engine: str) -> None:
    image, version = pinned().engine_images[engine], pinned().engine_versions[engine]
    assert tag_version(image) == version
    recorded = recorded_versions(engine)
    assert not recorded or version in recorded  # a pinned release with facts has its own


def _registry() -> Any:
    from mlcc_constructs.core.engines.manifests import EngineRegistry

    return EngineRegistry.load(use_env=False)


def test_an_image_tag_below_the_min_version_is_refused_at_the_image() -> None:
    image = "registry.example.com/team/lmi:0.28.0-lmi14.0.0"
    assert _errors(engine="lmi", image=image) == [
        f"/engine/image: lmi 0.28.0 is below the engine's min_version (got '{image}'; allowed: "
        ">= 0.29.0; fix: use a lmi image of version 0.29.0 or later)"
    ]
