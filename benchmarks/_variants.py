"""One process of the "libraries vs ours" benchmark: ``python _variants.py VARIANT TOOL ...``.

VARIANT ``ours`` runs the library as it is; every other variant swaps one module of
``core/support`` for another library doing the same job, as an adoption would:

- ``fastjsonschema``: the yes/no on rendered objects (Kubernetes strict schemas, the CRD rules)
  and on engine manifests, instead of jsonschema-rs (``schema_verdict``, adopted); the same
  JSON-data guard first, and jsonschema still words the problems of an invalid document;
- ``CSafeDumper``: ``to_yaml`` is PyYAML's ``dump_all`` with libyaml's emitter alone (the
  same bytes), instead of ``yaml_emit``'s layout;
- ``typeguard`` / ``beartype``: ``check_fields``'s per-field predicate, instead of
  ``typecheck._matches`` (our messages kept, so only the check differs).

A swap is applied when its module is first imported (a meta-path hook, installed for every
variant, ``ours`` included) and a library is imported on first use, so each process imports
exactly what the command would import with that library adopted.

TOOL: ``mlcc ARGS...`` (the command line, as the ``mlcc`` script runs it), ``dist N OUT
[TARGETS]`` (``make synth``'s dist/ writer, see ``_workers.dist``) or ``micro`` (the swapped
steps alone, warm, in process: prints JSON).
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import json
import sys
import time
from collections.abc import Callable, Sequence
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

Check = Callable[[Any], bool]
Patch = Callable[[ModuleType], None]
SCHEMAS = "mlcc_constructs.core.serving.kinds._schemas"
CRD_RULES = "mlcc_constructs.core.serving.kinds._crd_rules"
MANIFEST_CHECKS = "mlcc_constructs.core.engines.manifest_checks"
YAML_OUTPUT = "mlcc_constructs.core.support.yaml_output"
TYPECHECK = "mlcc_constructs.core.support.typecheck"
_DEFS = "#/$defs/"

# The schema pair "schema_compile (ours) vs jsonschema-rs" is decided: jsonschema-rs was adopted
# (2026-12-01; the figures, and why, at the top of core/support/schema_verdict.py), so that
# variant is gone and `ours` runs jsonschema-rs. fastjsonschema stays as the re-check against it.


def _fastjsonschema(schema: Any) -> Check:
    import fastjsonschema

    from mlcc_constructs.core.support.schema_verdict import _json_data

    # fastjsonschema knows drafts 4, 6 and 7: the same keywords, definitions under another name
    text = json.dumps({k: v for k, v in schema.items() if k != "$schema"})
    draft7 = json.loads(text.replace('"$defs"', '"definitions"').replace(_DEFS, "#/definitions/"))
    validate = fastjsonschema.compile(
        {**draft7, "$schema": "http://json-schema.org/draft-07/schema#"}
    )

    def check(instance: Any) -> bool:
        if not _json_data(instance):  # as schema_verdict: jsonschema judges the rest
            return False
        try:
            validate(instance)
        except Exception:  # invalid: jsonschema words it
            return False
        return True

    return check


def _schema_library(build: Callable[[Any], Check]) -> dict[str, Patch]:
    """The verdicts of the three callers (core kinds, CRD rules, engine manifests) from
    ``build`` instead of ``schema_verdict.verdict``, on the same schema documents."""

    def schemas(module: ModuleType) -> None:
        @cache
        def core_verdict(kind: str, api_version: str) -> Check | None:
            document = module._core_schema(kind, api_version)
            return None if document is None else build(document)

        module._core_verdict = core_verdict

    def crd_rules(module: ModuleType) -> None:
        module._verdict = cache(lambda file: build(module._strict_schema(file)))

    def manifest_checks(module: ModuleType) -> None:
        module._schema_verdict = cache(lambda: build(module._schema()))

    return {SCHEMAS: schemas, CRD_RULES: crd_rules, MANIFEST_CHECKS: manifest_checks}


def _csafedumper(module: ModuleType) -> None:
    pyyaml = module._pyyaml  # dump_all with the CSafeDumper-based dumper and the same options
    module.to_yaml = lambda objects: pyyaml([dict(obj) for obj in objects])


def _typeguard_matches(value: Any, hint: Any) -> bool:
    import typeguard

    try:
        typeguard.check_type("value", value, hint)
    except TypeError:
        return False
    return True


def _beartype_matches(value: Any, hint: Any) -> bool:
    from beartype.door import is_bearable

    return bool(is_bearable(value, hint))


def _predicate(matches: Callable[[Any, Any], bool]) -> Patch:
    def patch(module: ModuleType) -> None:
        module._matches = matches

    return patch


VARIANTS: dict[str, dict[str, Patch]] = {
    "ours": {},
    "fastjsonschema": _schema_library(_fastjsonschema),
    "CSafeDumper": {YAML_OUTPUT: _csafedumper},
    "typeguard": {TYPECHECK: _predicate(_typeguard_matches)},
    "beartype": {TYPECHECK: _predicate(_beartype_matches)},
}


class _Swap(importlib.abc.MetaPathFinder):
    """Applies a variant's patch to its module right after the module runs."""

    def __init__(self, patches: dict[str, Patch]) -> None:
        self._patches = patches

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        patch = self._patches.get(fullname)
        if patch is None:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        assert spec is not None and isinstance(spec.loader, importlib.abc.Loader)
        run_module = spec.loader.exec_module

        def exec_module(module: ModuleType) -> None:
            run_module(module)
            patch(module)

        spec.loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


def _per_item(call: Callable[[Any], object], items: Sequence[Any], rounds: int = 5) -> float:
    """Seconds per item of ``call`` over ``items``, warm (the best of ``rounds`` passes)."""
    for item in items:
        call(item)
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        for item in items:
            call(item)
        best = min(best, time.perf_counter() - start)
    return best / len(items)


def micro() -> dict[str, float]:
    """The swapped steps alone, warm: validating and writing one deployment's objects (eks and
    hyperpod-eks in turn), building one DeploymentSpec."""
    from benchmarks.specs import deployment_entries
    from mlcc_constructs.core.serving.kinds.registry import validate_objects
    from mlcc_constructs.core.serving.spec.app_deployments import prepare_deployments
    from mlcc_constructs.core.serving.spec.deployment import (
        ComputeSpec,
        DeploymentSpec,
        EngineSpec,
        LoraSpec,
        ModelSpec,
    )
    from mlcc_constructs.core.support import yaml_output

    defaults = {"account": "123456789012", "region": "us-east-1", "profile": "dev"}
    prepared = prepare_deployments(
        deployment_entries(200, targets=("eks", "hyperpod-eks")), defaults=defaults
    )
    objects = [[entry.object for entry in d.prepared.objects] for d in prepared]
    engine = EngineSpec(name="vllm", env={"VLLM_MAX_NUM_SEQS": "64"})
    compute = ComputeSpec(instance_type="ml.g5.12xlarge")
    lora = LoraSpec(enabled=True)

    def spec(uri: str) -> DeploymentSpec:  # the sections' and the spec's own type checks
        model = ModelSpec(uri=uri)
        return DeploymentSpec(engine=engine, model=model, compute=compute, name="m", lora=lora)

    return {
        "schema_ms_per_deployment": _per_item(validate_objects, objects) * 1e3,
        "yaml_ms_per_deployment": _per_item(yaml_output.to_yaml, objects) * 1e3,
        "typecheck_us_per_spec": _per_item(spec, ["s3://mlcc-models/models/org/name/"] * 2000)
        * 1e6,
    }


def main(argv: Sequence[str]) -> int:
    variant, tool, *args = argv
    sys.meta_path.insert(0, _Swap(VARIANTS[variant]))
    if tool == "mlcc":
        from mlcc_constructs.cli import main as mlcc

        return mlcc(args)
    if tool == "dist":
        sys.path.insert(0, str(REPO / "benchmarks"))
        import _workers

        _workers.dist(int(args[0]), args[1], tuple(args[2].split(",")) if len(args) > 2 else ())
        return 0
    if tool == "micro":
        print(json.dumps(micro()))
        return 0
    raise SystemExit(f"unknown tool {tool!r}")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
