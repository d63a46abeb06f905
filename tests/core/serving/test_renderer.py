"""The persistent render (core/serving/renderer.py): a list rendered in one process gives every
deployment exactly what render() gives its spec alone, and it is the one path of mlcc render -f
(stdout and --out) and of dist/."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from mlcc_constructs.cli import main
from mlcc_constructs.core.cache import CacheBackendSpec
from mlcc_constructs.core.serving import renderer as rendering
from mlcc_constructs.core.serving.render import render
from mlcc_constructs.core.serving.renderer import RenderEntry, Renderer, RenderOptions
from mlcc_constructs.core.serving.spec.app_deployments import prepare_deployments
from mlcc_constructs.core.serving.spec.context import RenderContext
from mlcc_constructs.core.serving.spec.deployment import DeploymentSpec
from mlcc_constructs.core.support.errors import MlccError
from mlcc_constructs.core.support.json_types import json_copy
from mlcc_constructs.core.support.yaml_output import to_yaml
from tests._cdk_app import reference_entries
from tests._flat import flat_spec
from tests.core.cache.test_cache_admission import seed_safe_spec

REPO = Path(__file__).resolve().parents[3]
MODEL = "s3://mlcc-models-dev-123456789012-us-east-1/models/meta-llama/Llama-3.1-8B-Instruct/"
CONTEXT = RenderContext(account="123456789012", region="us-east-1", profile="dev")
ENGINES = ("vllm", "sglang", "lmi", "tensorrt-llm", "llama-cpp")
TARGETS = ("eks", "hyperpod-eks")
CACHES = {"vllm": ("VLLM", "0.31.0"), "sglang": ("SGLang", "0.5.21")}


def _specs() -> Iterator[tuple[str, DeploymentSpec]]:
    """engines x targets x LoRA, and the engines with a CacheBackend (eks)."""
    for index, (engine, target, lora) in enumerate(
        itertools.product(ENGINES, TARGETS, (False, True))
    ):
        spec = flat_spec(
            engine=engine,
            model=MODEL,
            instance_type="ml.g5.12xlarge",
            name=f"d{index}",
            target=target,
            lora=lora,
        )
        yield f"{engine}-{target}-{'lora' if lora else 'base'}", spec
    for engine, (runtime, version) in CACHES.items():
        spec = flat_spec(
            engine=engine,
            model=MODEL,
            instance_type="ml.g5.12xlarge",
            name=f"cached-{engine}",
            engine_version=version,
            cache_backend=CacheBackendSpec.from_dict(seed_safe_spec(runtime)),
        )
        yield f"{engine}-eks-cache", spec


SPECS = dict(_specs())


def _alone(spec: DeploymentSpec) -> tuple[str, tuple[str, ...]] | list[str]:
    """render()'s YAML and notes for ``spec`` alone, or its problems."""
    try:
        rendered = render(spec, context=CONTEXT)
    except MlccError as error:
        return [str(p) for p in error.problems]
    return to_yaml(rendered.objects), rendered.warnings


def test_the_table_renders_something() -> None:
    # The table would prove nothing if every row were refused.
    rendered = [name for name, spec in SPECS.items() if not isinstance(_alone(spec), list)]
    assert len(rendered) >= len(SPECS) // 2
    assert {"vllm-eks-cache", "sglang-eks-cache", "vllm-hyperpod-eks-lora"} <= set(rendered)


@pytest.mark.parametrize("name", sorted(SPECS))
def test_a_renderer_gives_what_render_gives_each_spec(name: str) -> None:
    spec = SPECS[name]
    expected = _alone(spec)
    renderer = Renderer()
    for _ in range(2):  # the second call finds everything compiled and cached: same bytes
        try:
            rendered = renderer.render(spec, context=CONTEXT)
        except MlccError as error:
            assert [str(p) for p in error.problems] == expected
            continue
        assert (to_yaml(rendered.objects), rendered.warnings) == expected


def test_a_list_renders_each_entry_as_alone() -> None:
    good = {n: s for n, s in SPECS.items() if not isinstance(_alone(s), list)}
    entries = [RenderEntry(where=n, spec=s, context=CONTEXT) for n, s in good.items()]
    rendered = Renderer().render_list(entries)
    assert [r.where for r in rendered] == list(good)
    for entry in rendered:
        assert (to_yaml(entry.rendered.objects), entry.rendered.warnings) == _alone(
            good[entry.where]
        )
    files = rendering.list_files(rendered)
    assert list(files) == [r.file_name for r in rendered]
    assert rendering.stream_text(rendered) == to_yaml(
        [o for r in rendered for o in r.rendered.objects]
    )


def test_render_many_is_a_renderer_s_list() -> None:
    spec = SPECS["vllm-eks-lora"]
    (entry,) = rendering.render_many(
        [RenderEntry(where="one", spec=spec, context=CONTEXT)], RenderOptions(validate=False)
    )
    assert to_yaml(entry.rendered.objects) == _alone(spec)[0]


def test_a_bad_entry_is_named_and_nothing_is_returned() -> None:
    good = SPECS["vllm-eks-base"]
    bad = flat_spec(engine="vllm", model=MODEL, instance_type="ml.g5.12xlarge", name="B")
    entries = [
        RenderEntry(where="list#0", spec=good, context=CONTEXT),
        RenderEntry(where="list#1", spec=bad, context=CONTEXT, locate=_named("list#1")),
    ]
    outcome = Renderer().render_each(entries)
    assert [r.where for r in outcome.rendered] == ["list#0"]
    assert [(p.where, p.pointer) for p in outcome.problems] == [("list#1", "/name")]
    with pytest.raises(MlccError) as raised:
        Renderer().render_list(entries)
    assert [(p.where, p.pointer) for p in raised.value.problems] == [("list#1", "/name")]


def _named(where: str) -> Any:
    def locate(error: MlccError) -> MlccError:
        return MlccError(p.__class__(**{**vars(p), "where": where}) for p in error.problems)

    return locate


def test_a_list_that_repeats_a_deployment_is_refused() -> None:
    spec = SPECS["vllm-eks-base"]
    entries = [RenderEntry(where=f"list#{i}", spec=spec, context=CONTEXT) for i in range(2)]
    with pytest.raises(MlccError) as raised:
        Renderer().render_list(entries)
    assert {p.where for p in raised.value.problems} == {"list#1"}


@pytest.mark.parametrize(
    "value",
    [
        {"a": [1, {"b": None}], "c": "x"},
        [{"k": True}, [], {}],
        {"t": (1, 2), "s": 1.5},
    ],
)
def test_json_copy_is_an_equal_copy_of_fresh_containers(value: Any) -> None:
    copied = json_copy(value)
    assert copied == value and copied is not value
    assert json.dumps(copied, default=list) == json.dumps(value, default=list)
    first = copied["a"] if isinstance(copied, dict) and "a" in copied else copied
    assert first is not (value["a"] if isinstance(value, dict) and "a" in value else value)


# -- one path: mlcc render -f (stdout, --out) and dist/ --------------------------------------


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The entries of every Renderer.render_each call made."""
    counted: list[int] = []
    original = Renderer.render_each

    def spy(self: Renderer, entries: Any) -> rendering.RenderOutcome:
        listed = list(entries)
        counted.append(len(listed))
        return original(self, listed)

    monkeypatch.setattr(Renderer, "render_each", spy)
    return counted


BASE = {
    "engine": {"name": "vllm"},
    "model": {"uri": "org/name"},
    "compute": {"instance_type": "g5.xlarge"},
    "profile": "dev",
}
FLAGS = ["--account", "123456789012", "--region", "us-east-1"]


def _list(tmp_path: Path, entries: list[dict[str, Any]]) -> Path:
    path = tmp_path / "list.yaml"
    path.write_text(yaml.safe_dump(entries), encoding="utf-8")
    return path


def test_render_list_to_stdout_and_out_go_through_the_renderer(
    calls: list[int], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _list(tmp_path, [{**BASE, "name": "a"}, {**BASE, "name": "b"}])
    assert main(["render", "-f", str(path), *FLAGS]) == 0
    stdout = capsys.readouterr().out
    assert main(["render", "-f", str(path), *FLAGS, "--out", str(tmp_path / "o")]) == 0
    assert calls == [2, 2]
    files = {p.name: p.read_text() for p in (tmp_path / "o").glob("*.k8s.yaml")}
    assert sorted(files) == ["eks-default-a.k8s.yaml", "eks-default-b.k8s.yaml"]
    assert "---\n".join(files[n] for n in sorted(files)) == stdout


def test_bad_list_entries_are_named_and_nothing_is_written(
    calls: list[int], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # entry 1 fails to load (the schema), entry 2 to render (its name): both named, no file
    entries = [
        {**BASE, "name": "a"},
        {**BASE, "name": "b", "scaling": {"replicas": 0}},
        {**BASE, "name": "C"},
    ]
    path = _list(tmp_path, entries)
    out = tmp_path / "o"
    assert main(["render", "-f", str(path), *FLAGS, "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert [line.split(": ")[2] for line in err.splitlines()] == [
        f"{path}#1:/scaling/replicas",
        f"{path}#2:/name",
    ]
    assert calls == [3] and not out.exists()  # the refused entry passes as its error


def test_the_app_s_deployments_go_through_the_renderer(calls: list[int]) -> None:
    entries = [{**BASE, "name": "a"}, {**BASE, "name": "b", "target": "hyperpod-eks"}]
    found = prepare_deployments(
        entries, defaults={"account": "123456789012", "region": "us-east-1"}
    )
    assert calls == [2]
    for deployment, entry in zip(found, entries, strict=True):
        spec = flat_spec(**{k: v for k, v in entry.items() if k != "profile"})
        alone = render(spec, context=deployment.context)
        assert to_yaml(deployment.rendered.rendered.objects) == to_yaml(alone.objects)


def test_an_app_entry_s_problem_names_the_entry(calls: list[int]) -> None:
    entries = [{**BASE, "name": "a"}, {**BASE, "name": "b", "instance_type": "ml.nope"}]
    with pytest.raises(MlccError) as raised:
        prepare_deployments(entries, defaults={"region": "us-east-1"}, where="here")
    assert {p.where for p in raised.value.problems} == {"here/1"}


def test_dist_is_written_from_the_renderer(
    calls: list[int], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import app as cdk_app
    from tests._cdk_app import build

    listed: list[int] = []
    original = rendering.list_files

    def spy(rendered: Any, **kwargs: Any) -> dict[str, str]:
        listed.append(len(rendered))
        return original(rendered, **kwargs)

    monkeypatch.setattr(rendering, "list_files", spy)
    built = build()
    files = cdk_app.write_reference_manifests(built, outdir=str(tmp_path))
    references = reference_entries()
    assert calls == [len(references)] and listed == [len(references)]
    assert len(files) == len(references) + 1  # and namespaces.k8s.yaml
