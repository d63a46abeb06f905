"""Calls in the first release's form (commit 6f6d00e: loose ``spec=``, ``context=``,
``registry=``, ``config_map=``; ``name=``, ``spec=``, ``namespace=``, ``labels=`` on
``CacheBackend``) get an error that names the construct, the keywords, the props class, the
migrated call and CHANGELOG.md; any other wrong keyword keeps Python's own ``TypeError``; the
constructors keep their signatures; nothing of it costs the pure commands anything."""

from __future__ import annotations

import inspect
import json
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from mlcc_constructs.core.serving.spec.context import RenderContext
from mlcc_constructs.core.support.errors import MlccError
from mlcc_constructs.core.support.migration import (
    LegacyKeywordError,
    PropsMigration,
    replaced_keywords,
)
from tests._flat import flat_spec

REPO = Path(__file__).resolve().parents[3]
SPEC = flat_spec(engine="vllm", model="org/name", instance_type="g5.xlarge", name="m")
CONTEXT = RenderContext(profile="dev")
TAIL = 'from mlcc_constructs; CHANGELOG.md "cdk8s constructs take props" shows each construct)'

# The first release's keyword-only parameters of each construct, read from
# `git show 6f6d00e:mlcc_constructs/k8s/<module>.py` (the state before the props refactor).
FIRST_RELEASE_KEYWORDS = {
    "EngineConfigMap": ("spec", "context", "registry"),
    "EngineDeployment": ("spec", "config_map", "context", "registry"),
    "InferenceEndpointConfig": ("spec", "context", "registry"),
    "ServingChart": ("spec", "context", "registry"),
    "CacheBackend": ("name", "spec", "namespace", "labels"),
}


# -- the decorator on its own (no jsii) ---------------------------------------------------


class _Widget:
    """A stand-in construct."""

    @replaced_keywords(
        PropsMigration(construct="_Widget", props="WidgetProps", prepared=True, optional=("x",))
    )
    def __init__(self, scope: object, id: str, *, props: object) -> None:
        """Build it."""
        self.props = props


def test_a_current_call_passes_through() -> None:
    assert _Widget(None, "w", props=1).props == 1


def test_a_keyword_no_release_had_keeps_pythons_own_error() -> None:
    with pytest.raises(TypeError) as caught:
        _Widget(None, "w", props=1, colour="red")  # type: ignore[call-arg]
    assert type(caught.value) is TypeError
    assert str(caught.value) == "_Widget.__init__() got an unexpected keyword argument 'colour'"


def test_a_missing_props_keeps_pythons_own_error() -> None:
    with pytest.raises(TypeError) as caught:
        _Widget(None, "w")  # type: ignore[call-arg]
    assert type(caught.value) is TypeError
    assert "missing 1 required keyword-only argument: 'props'" in str(caught.value)


def test_the_error_is_a_type_error_and_an_mlcc_error() -> None:
    with pytest.raises(LegacyKeywordError) as caught:
        _Widget(None, "w", registry=None, spec=SPEC, colour="red")  # type: ignore[call-arg]
    error = caught.value
    assert isinstance(error, TypeError) and isinstance(error, MlccError)
    assert error.keywords == ("spec", "registry")  # the old signature's order, legacy only
    (problem,) = error.problems
    assert (problem.where, problem.value, problem.allowed) == (
        "_Widget",
        ["spec", "registry"],
        "props",
    )
    assert problem.fix.startswith(
        "_Widget(scope, id, props=WidgetProps(deployment=prepare(spec, registry=...)))"
    )


def test_the_wrapped_init_keeps_its_name_doc_and_signature() -> None:
    init: Any = _Widget.__init__
    assert (init.__name__, init.__qualname__, init.__doc__) == (
        "__init__",
        "_Widget.__init__",
        "Build it.",
    )
    assert (
        str(inspect.signature(init))
        == "(self, scope: 'object', id: 'str', *, props: 'object') -> 'None'"
    )


@pytest.mark.parametrize(
    ("migration", "given", "expected"),
    [
        (
            PropsMigration(construct="A", props="AProps", prepared=True),
            {"spec"},
            "A(scope, id, props=AProps(deployment=prepare(spec)))",
        ),
        (
            PropsMigration(construct="A", props="AProps", prepared=True),
            {"context"},  # with props=: the spec stays the prepared deployment's
            "A(scope, id, props=AProps(deployment=prepare(spec, context=...)))",
        ),
        (
            PropsMigration(construct="A", props="AProps", required=("spec",), optional=("c",)),
            {"c"},
            "A(scope, id, props=AProps(spec=..., c=...))",
        ),
    ],
)
def test_the_migrated_call(migration: PropsMigration, given: set[str], expected: str) -> None:
    assert migration.migrated_call(given) == expected


# -- the five constructs ------------------------------------------------------------------


@pytest.fixture(scope="module")
def k8s() -> Iterator[dict[str, Any]]:
    import cdk8s

    import mlcc_constructs as api
    from mlcc_constructs.core.cache import load_cache_backends

    app = cdk8s.App()
    chart = cdk8s.Chart(app, "team")
    prepared = api.prepare(SPEC, context=CONTEXT)
    yield {
        "api": api,
        "app": app,
        "chart": chart,
        "prepared": prepared,
        "config_map": api.EngineConfigMap(
            chart, "Shared", props=api.EngineConfigMapProps(deployment=prepared)
        ),
        "cache_spec": load_cache_backends(REPO / "examples" / "cachebackend.yaml")[0].spec,
    }


@dataclass(frozen=True)
class _Ref:
    """A value of the call: the module's spec or context, or a fixture value, by name."""

    name: str


@dataclass(frozen=True)
class _Props:
    """A correct props object of this class (from the fixture's prepared deployment)."""

    name: str


def _fix(call: str, imports: str) -> str:
    return f"{call} with {imports} {TAIL}"


# (construct, the call's keywords, the exact error text)
CASES = [
    (
        "EngineConfigMap",
        {"spec": _Ref("spec"), "context": _Ref("context")},
        "EngineConfigMap: the first release's keyword arguments are gone; the construct takes "
        "props=EngineConfigMapProps(...) (got ['spec', 'context']; allowed: props; fix: "
        + _fix(
            "EngineConfigMap(scope, id, props=EngineConfigMapProps(deployment=prepare(spec, "
            "context=...)))",
            "EngineConfigMapProps and prepare",
        ),
    ),
    (
        "EngineConfigMap",
        {"props": _Props("EngineConfigMapProps"), "registry": None},
        "EngineConfigMap: the first release's keyword arguments are gone; the construct takes "
        "props=EngineConfigMapProps(...) (got ['registry']; allowed: props; fix: "
        + _fix(
            "EngineConfigMap(scope, id, props=EngineConfigMapProps(deployment=prepare(spec, "
            "registry=...)))",
            "EngineConfigMapProps and prepare",
        ),
    ),
    (
        "EngineDeployment",
        {
            "spec": _Ref("spec"),
            "config_map": _Ref("config_map"),
            "context": _Ref("context"),
            "registry": None,
        },
        "EngineDeployment: the first release's keyword arguments are gone; the construct takes "
        "props=EngineDeploymentProps(...) (got ['spec', 'context', 'registry', 'config_map']; "
        "allowed: props; fix: "
        + _fix(
            "EngineDeployment(scope, id, props=EngineDeploymentProps(deployment=prepare(spec, "
            "context=..., registry=...), config_map=...))",
            "EngineDeploymentProps and prepare",
        ),
    ),
    (
        "EngineDeployment",
        {"spec": _Ref("spec")},
        "EngineDeployment: the first release's keyword arguments are gone; the construct takes "
        "props=EngineDeploymentProps(...) (got ['spec']; allowed: props; fix: "
        + _fix(
            "EngineDeployment(scope, id, props=EngineDeploymentProps(deployment=prepare(spec)))",
            "EngineDeploymentProps and prepare",
        ),
    ),
    (
        "InferenceEndpointConfig",
        {"spec": _Ref("spec"), "context": _Ref("context")},
        "InferenceEndpointConfig: the first release's keyword arguments are gone; the construct "
        "takes props=InferenceEndpointConfigProps(...) (got ['spec', 'context']; allowed: props; "
        "fix: "
        + _fix(
            "InferenceEndpointConfig(scope, id, props=InferenceEndpointConfigProps("
            "deployment=prepare(spec, context=...)))",
            "InferenceEndpointConfigProps and prepare",
        ),
    ),
    (
        "ServingChart",
        {"spec": _Ref("spec")},
        "ServingChart: the first release's keyword arguments are gone; the construct takes "
        "props=ServingChartProps(...) (got ['spec']; allowed: props; fix: "
        + _fix("ServingChart(scope, id, props=ServingChartProps(spec=...))", "ServingChartProps"),
    ),
    (
        "ServingChart",
        {"spec": _Ref("spec"), "context": _Ref("context"), "registry": None},
        "ServingChart: the first release's keyword arguments are gone; the construct takes "
        "props=ServingChartProps(...) (got ['spec', 'context', 'registry']; allowed: props; fix: "
        + _fix(
            "ServingChart(scope, id, props=ServingChartProps(spec=..., context=..., registry=...))",
            "ServingChartProps",
        ),
    ),
    (
        "CacheBackend",
        {"name": "lmcache", "spec": _Ref("cache_spec"), "namespace": "inference"},
        "CacheBackend: the first release's keyword arguments are gone; the construct takes "
        "props=CacheBackendProps(...) (got ['name', 'spec', 'namespace']; allowed: props; fix: "
        + _fix(
            "CacheBackend(scope, id, props=CacheBackendProps(name=..., spec=..., namespace=...))",
            "CacheBackendProps",
        ),
    ),
    (
        "CacheBackend",
        {"name": "lmcache", "spec": _Ref("cache_spec"), "labels": {"team": "a"}},
        "CacheBackend: the first release's keyword arguments are gone; the construct takes "
        "props=CacheBackendProps(...) (got ['name', 'spec', 'labels']; allowed: props; fix: "
        + _fix(
            "CacheBackend(scope, id, props=CacheBackendProps(name=..., spec=..., labels=...))",
            "CacheBackendProps",
        ),
    ),
]


def _value(k8s: dict[str, Any], value: object) -> object:
    if isinstance(value, _Props):  # a correct props object beside the old keywords
        return getattr(k8s["api"], value.name)(deployment=k8s["prepared"])
    if isinstance(value, _Ref):
        return {"spec": SPEC, "context": CONTEXT}.get(value.name) or k8s[value.name]
    return value


@pytest.mark.parametrize(("construct", "call", "expected"), CASES)
def test_the_first_release_form_names_the_migration(
    k8s: dict[str, Any], construct: str, call: dict[str, object], expected: str
) -> None:
    cls = getattr(k8s["api"], construct)
    scope = k8s["app"] if construct == "ServingChart" else k8s["chart"]
    kwargs = {key: _value(k8s, value) for key, value in call.items()}
    children = len(scope.node.children)
    with pytest.raises(LegacyKeywordError) as caught:
        cls(scope, "Legacy", **kwargs)
    assert str(caught.value) == expected
    assert len(scope.node.children) == children  # refused before anything was built


@pytest.mark.parametrize("construct", sorted(FIRST_RELEASE_KEYWORDS))
def test_every_first_release_keyword_is_recognised(k8s: dict[str, Any], construct: str) -> None:
    cls = getattr(k8s["api"], construct)
    scope = k8s["app"] if construct == "ServingChart" else k8s["chart"]
    for keyword in FIRST_RELEASE_KEYWORDS[construct]:
        with pytest.raises(LegacyKeywordError) as caught:
            cls(scope, "Legacy", **{keyword: None})
        assert caught.value.keywords == (keyword,)
        assert caught.value.migration.construct == construct
        assert caught.value.migration.props == f"{construct}Props"
        assert set(caught.value.migration.keywords) == set(FIRST_RELEASE_KEYWORDS[construct])


@pytest.mark.parametrize("construct", sorted(FIRST_RELEASE_KEYWORDS))
def test_an_unknown_keyword_keeps_pythons_type_error(k8s: dict[str, Any], construct: str) -> None:
    cls = getattr(k8s["api"], construct)
    with pytest.raises(TypeError) as caught:
        cls(k8s["chart"], "Unknown", props=None, replicas=2)
    assert type(caught.value) is TypeError
    assert str(caught.value) == (
        f"{construct}.__init__() got an unexpected keyword argument 'replicas'"
    )


@pytest.mark.parametrize("construct", sorted(FIRST_RELEASE_KEYWORDS))
def test_the_constructors_keep_their_signature(k8s: dict[str, Any], construct: str) -> None:
    init = getattr(k8s["api"], construct).__init__
    parameters = inspect.signature(init).parameters
    assert list(parameters) == ["self", "scope", "id", "props"]
    assert parameters["props"].kind is inspect.Parameter.KEYWORD_ONLY
    assert parameters["props"].annotation == f"{construct}Props"


def test_the_props_form_still_builds(k8s: dict[str, Any]) -> None:
    api = k8s["api"]
    served = api.EngineDeployment(
        k8s["chart"],
        "Served",
        props=api.EngineDeploymentProps(deployment=k8s["prepared"], config_map=k8s["config_map"]),
    )
    assert served.config_map is k8s["config_map"]


# -- no cost on the pure paths ------------------------------------------------------------


def test_the_pure_cli_and_the_package_root_never_load_it() -> None:
    code = (
        "import sys, json, contextlib, io\n"
        "import mlcc_constructs\n"
        "from mlcc_constructs.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    code = main(['env', '--engine', 'vllm', '--model', 'org/name',\n"
        "                 '--instance-type', 'g5.xlarge'])\n"
        "print(json.dumps([code, sorted(sys.modules)]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO
    )
    exit_code, modules = json.loads(done.stdout)
    assert exit_code == 0
    assert "mlcc_constructs.core.support.migration" not in modules
    assert [m for m in modules if m.split(".")[0] in ("jsii", "cdk8s", "constructs")] == []
