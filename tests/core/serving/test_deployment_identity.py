"""One rule for a deployment list that repeats a deployment (core/serving/identity.py), the same
on every path: ``mlcc render -f LIST`` to stdout and to ``--out``, ``dist/`` and the serving
stacks of the CDK app."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from mlcc_constructs import cli
from mlcc_constructs.core.serving.identity import (
    DeclaredDeployment,
    DeploymentKey,
    duplicate_problems,
)
from mlcc_constructs.core.support.errors import MlccError
from tests._cdk_app import cdk_context
from tests._flat import sectioned_doc

BASE = {
    "engine": {"name": "vllm"},
    "model": {"uri": "mistralai/Mistral-7B-Instruct-v0.3", "bytes": 14496047104},
    "compute": {"instance_type": "ml.g5.2xlarge"},
}
FLAGS = ["--account", "123456789012", "--region", "us-east-1", "--profile", "dev"]


def _entry(name: str, namespace: str, **extra: Any) -> dict[str, Any]:
    return sectioned_doc({**BASE, "name": name, "namespace": namespace, **extra})


# (id, entries, the deployments' files and stacks, or the problems with "#<index>" for the entry)
CASES: list[tuple[str, list[dict[str, Any]], list[str] | None, list[str] | None]] = [
    (
        "one name in two namespaces: two deployments",
        [_entry("llama", "team-a"), _entry("llama", "team-b")],
        ["eks-team-a-llama", "eks-team-b-llama"],
        None,
    ),
    (
        "an identical copy",
        [_entry("llama", "team-a"), _entry("llama", "team-a")],
        None,
        [
            "#1:/name: deployment team-a/llama on eks is declared twice: this entry is a copy of "
            "#0; one would overwrite the other's objects, file and stack (got 'llama'; allowed: "
            "one entry per target, namespace and name; fix: remove one of the two entries, or "
            "give this one another name or namespace (the other: #0))"
        ],
    ),
    (
        "a conflicting duplicate",
        [
            _entry("llama", "team-a"),
            _entry("other", "team-a"),
            _entry("llama", "team-a", replicas=2),
        ],
        None,
        [
            "#2:/name: deployment team-a/llama on eks is declared twice: this entry is another "
            "deployment with the target, namespace and name of #0; one would overwrite the "
            "other's objects, file and stack (got 'llama'; allowed: one entry per target, "
            "namespace and name; fix: remove one of the two entries, or give this one another "
            "name or namespace (the other: #0))"
        ],
    ),
    (
        "names that read alike once joined with '-'",
        [_entry("b-c", "a"), _entry("c", "a-b")],
        None,
        [
            "#1:/name: deployment a-b/c on eks and a/b-c on eks (#0) would both be written to "
            "the file eks-a-b-c.k8s.yaml (names are joined with '-'): one would overwrite the "
            "other (got 'c'; allowed: a name and namespace whose file no other entry has; fix: "
            "rename this deployment or the other (#0))"
        ],
    ),
]
IDS = [case[0] for case in CASES]


def _normalise(text: str) -> str:
    """A problem with its entry as ``#<index>``, whichever path reported it."""
    text = re.sub(r"cdk\.json:/context/reference_deployments/(\d+)", r"#\1", text)
    return re.sub(r"[^\s(]*list\.yaml#(\d+)", r"#\1", text)


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = cli.main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _errors(err: str) -> list[str]:
    return [_normalise(line.removeprefix("mlcc: error: ")) for line in err.splitlines()]


@pytest.mark.parametrize(("case", "entries", "stems", "problems"), CASES, ids=IDS)
def test_render_to_stdout_and_to_out_follow_one_rule(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    case: str,
    entries: list[dict[str, Any]],
    stems: list[str] | None,
    problems: list[str] | None,
) -> None:
    path = tmp_path / "list.yaml"
    path.write_text(yaml.safe_dump(entries), encoding="utf-8")
    out = tmp_path / "out"
    code, text, err = _run(capsys, "render", "-f", str(path), *FLAGS)
    out_code, out_text, out_err = _run(capsys, "render", "-f", str(path), *FLAGS, "--out", str(out))
    if problems is not None:
        assert (code, text, _errors(err)) == (1, "", problems)
        assert (out_code, out_text, _errors(out_err)) == (1, "", problems)
        assert not out.exists()  # nothing half-written
        return
    assert stems is not None
    assert (code, out_code) == (0, 0)
    rendered = {
        (d["kind"], d["metadata"].get("namespace"), d["metadata"]["name"])
        for d in yaml.safe_load_all(text)
    }
    for entry in entries:
        assert ("Deployment", entry["namespace"], entry["name"]) in rendered
    assert sorted(p.name for p in out.iterdir()) == [
        ".mlcc-render.json",
        *(f"{stem}.k8s.yaml" for stem in stems),
    ]
    # Each file holds its own deployment's objects, and nothing is lost between them.
    written = [
        d for stem in stems for d in yaml.safe_load_all((out / f"{stem}.k8s.yaml").read_text())
    ]
    assert written == list(yaml.safe_load_all(text))


def _build(entries: list[dict[str, Any]]) -> Any:
    import aws_cdk as cdk

    from app import build_app

    values = {**cdk_context(), "deployments_file": None, "reference_deployments": entries}
    return build_app(cdk.App(context=values, builtin_cloud_formation_validation=False))


@pytest.mark.parametrize(("case", "entries", "stems", "problems"), CASES, ids=IDS)
def test_dist_and_the_stacks_follow_the_same_rule(
    tmp_path: Path,
    case: str,
    entries: list[dict[str, Any]],
    stems: list[str] | None,
    problems: list[str] | None,
) -> None:
    from app import write_reference_manifests

    if problems is not None:
        with pytest.raises(MlccError) as caught:
            _build(entries)
        assert [_normalise(str(p)) for p in caught.value.problems] == problems
        return
    assert stems is not None
    app = _build(entries)
    stacks = sorted(s.stack_name for s in app.node.children if hasattr(s, "stack_name"))
    assert [s for s in stacks if "-serving-" in s] == [f"mlcc-dev-serving-{s}" for s in stems]
    files = write_reference_manifests(app, outdir=str(tmp_path / "dist"))
    assert sorted(Path(f).name for f in files) == sorted(
        ["namespaces.k8s.yaml", *(f"{stem}.k8s.yaml" for stem in stems)]
    )
    for stem, entry in zip(stems, entries, strict=True):
        documents = list(yaml.safe_load_all((tmp_path / "dist" / f"{stem}.k8s.yaml").read_text()))
        assert {d["metadata"].get("namespace") for d in documents} <= {entry["namespace"], None}
        assert ("Deployment", entry["name"]) in {
            (d["kind"], d["metadata"]["name"]) for d in documents
        }


def _key(target: str, namespace: str, name: str) -> DeploymentKey:
    return DeploymentKey(target=target, namespace=namespace, name=name)


def _object(kind: str, namespace: str, name: str) -> dict[str, Any]:
    metadata = {"name": name, **({"namespace": namespace} if namespace else {})}
    return {"kind": kind, "metadata": metadata}


# (id, entries as (key, objects), the problems' (where, first words))
CORE: list[tuple[str, list[tuple[DeploymentKey, list[dict[str, Any]]]], list[tuple[str, str]]]] = [
    ("distinct", [(_key("eks", "a", "x"), []), (_key("eks", "b", "x"), [])], []),
    (
        "one name on two targets",
        [(_key("eks", "a", "x"), []), (_key("hyperpod-eks", "a", "x"), [])],
        [],
    ),
    (
        "the same key",
        [(_key("eks", "a", "x"), []), (_key("eks", "a", "x"), [])],
        [("e1", "deployment a/x on eks is declared twice: this entry is another")],
    ),
    (
        "the same copy",
        [
            (_key("eks", "a", "x"), [_object("Service", "a", "x")]),
            (_key("eks", "a", "x"), [_object("Service", "a", "x")]),
        ],
        [("e1", "deployment a/x on eks is declared twice: this entry is a copy of e0")],
    ),
    (
        "names and targets joined with '-' (stack suffix)",
        [(_key("eks", "a", "b-c"), []), (_key("eks", "a-b", "c"), [])],
        [("e1", "deployment a-b/c on eks and a/b-c on eks (e0) would both be written to the file")],
    ),
    (
        "a cluster-scoped object of two deployments",
        [
            (_key("eks", "a", "b-c"), [_object("PersistentVolume", "", "a-b-c-model")]),
            (_key("hyperpod-eks", "a-b", "c"), [_object("PersistentVolume", "", "a-b-c-model")]),
        ],
        [
            (
                "e1",
                "deployment a-b/c on hyperpod-eks and a/b-c on eks (e0) both apply the "
                "PersistentVolume a-b-c-model",
            )
        ],
    ),
    (
        "a long name whose stack suffix is hashed stays distinct",
        [(_key("eks", "n" * 63, "m" * 63), []), (_key("eks", "n" * 63, "m" * 62 + "x"), [])],
        [],
    ),
    (
        "three entries, the third repeats the first",
        [(_key("eks", "a", "x"), []), (_key("eks", "a", "y"), []), (_key("eks", "a", "x"), [])],
        [("e2", "deployment a/x on eks is declared twice: this entry is another")],
    ),
]


@pytest.mark.parametrize(("case", "entries", "expected"), CORE, ids=[c[0] for c in CORE])
def test_the_rule(
    case: str,
    entries: list[tuple[DeploymentKey, list[dict[str, Any]]]],
    expected: list[tuple[str, str]],
) -> None:
    declared = [
        DeclaredDeployment(where=f"e{index}", key=key, objects=tuple(objects))
        for index, (key, objects) in enumerate(entries)
    ]
    problems = duplicate_problems(declared)
    assert [(p.where, p.pointer) for p in problems] == [(where, "/name") for where, _ in expected]
    for problem, (_, start) in zip(problems, expected, strict=True):
        assert problem.message.startswith(start), problem.message


def test_one_entry_given_twice_is_a_repeat() -> None:
    entry = DeclaredDeployment(where="e0", key=_key("eks", "a", "x"))
    assert [p.where for p in duplicate_problems([entry, entry])] == ["e0"]


def test_a_deployment_s_file_and_stack_read_alike() -> None:
    key = _key("hyperpod-eks", "inference", "llama")
    assert key.file_name() == "hyperpod-eks-inference-llama.k8s.yaml"
    assert key.stack_suffix() == "serving-hyperpod-eks-inference-llama"
