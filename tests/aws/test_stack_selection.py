"""The reviewer's loop (``-c deployments=...``): the app builds the shared stacks and only the
named deployments' serving stacks, each exactly as the whole app synthesises it (same name,
same logical ids, same template); an unknown name is refused with the known ones."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mlcc_constructs.core.serving.stack_selection import select_stacks
from mlcc_constructs.core.support.errors import MlccError
from tests._cdk_app import cdk_context, synthesised

SHARED = {
    "mlcc-dev-buckets",
    "mlcc-dev-eks-cluster",
    "mlcc-dev-hyperpod-cluster",
    "mlcc-dev-inference-operator",
    "mlcc-dev-serving",
}
EKS_LLAMA = "mlcc-dev-serving-eks-inference-llama-vllm"
HYPERPOD_LLAMA = "mlcc-dev-serving-hyperpod-eks-inference-llama-vllm"
SGLANG = "mlcc-dev-serving-hyperpod-eks-inference-llama-sglang"
MISTRAL = "mlcc-dev-serving-eks-inference-mistral-vllm-args"
MULTI_NODE = "mlcc-dev-serving-eks-inference-llama-405b-vllm"

# -- the rule --------------------------------------------------------------------------------

STACKS = [("s-eks-a", "a"), ("s-hyperpod-a", "a"), ("s-eks-b", "b")]


@pytest.mark.parametrize(
    ("names", "built"),
    [
        ((), (True, True, True)),  # no selection: every stack
        (("a",), (True, True, False)),  # a deployment's name: each of its stacks
        (("s-hyperpod-a",), (False, True, False)),  # a stack's name: that stack
        (("b", "s-eks-a"), (True, False, True)),
        (("b", "b"), (False, False, True)),
    ],
)
def test_selection_builds_the_named_stacks(names: tuple[str, ...], built: tuple[bool, ...]) -> None:
    assert select_stacks(names, STACKS) == built


GENERIC_FIX = "name a deployment or its serving stack (cdk ls), or drop -c deployments"


@pytest.mark.parametrize(
    ("names", "refused"),
    [
        (("c",), {"/deployments/0": GENERIC_FIX}),
        (
            ("a", "zz", "s-hyperpd-a"),
            {"/deployments/1": GENERIC_FIX, "/deployments/2": "did you mean 's-hyperpod-a'?"},
        ),
    ],
)
def test_unknown_names_are_refused_at_once_with_the_known_ones(
    names: tuple[str, ...], refused: dict[str, str]
) -> None:
    with pytest.raises(MlccError) as raised:
        select_stacks(names, STACKS, where="-c deployments")
    problems = raised.value.problems
    assert {p.pointer: p.fix for p in problems} == refused
    for problem in problems:
        assert problem.where == "-c deployments"
        assert problem.allowed == "a, b, s-eks-a, s-eks-b, s-hyperpod-a"


def test_an_app_without_deployments_says_so() -> None:
    with pytest.raises(MlccError, match="none: the app has no deployments"):
        select_stacks(("a",), [])


# -- the app ---------------------------------------------------------------------------------


def _selected(selection: Any) -> Any:
    import aws_cdk as cdk

    from app import build_app

    context = {**cdk_context(), "deployments": selection}
    return build_app(cdk.App(context=context, builtin_cloud_formation_validation=False))


def _stack_names(app: Any) -> set[str]:
    import aws_cdk as cdk

    return {child.stack_name for child in app.node.children if isinstance(child, cdk.Stack)}


@pytest.mark.parametrize(
    ("selection", "serving"),
    [
        ("llama-vllm", {EKS_LLAMA, HYPERPOD_LLAMA}),  # -c deployments=NAME (the CLI's string)
        (f"{MISTRAL},llama-sglang", {MISTRAL, SGLANG}),
        ([EKS_LLAMA], {EKS_LLAMA}),  # cdk.json: a JSON list
        (f'["{SGLANG}"]', {SGLANG}),  # -c deployments='["..."]'
        ("", {EKS_LLAMA, HYPERPOD_LLAMA, SGLANG, MISTRAL, MULTI_NODE}),  # empty: every one
    ],
)
def test_the_app_builds_the_shared_and_the_selected_serving_stacks(
    selection: Any, serving: set[str]
) -> None:
    assert _stack_names(_selected(selection)) == SHARED | serving


@pytest.mark.parametrize(
    ("selection", "serving"),
    [
        ("llama-vllm", {EKS_LLAMA, HYPERPOD_LLAMA}),  # the autoscaled mistral left out
        (SGLANG, {SGLANG}),
        (MISTRAL, {MISTRAL}),
        (MULTI_NODE, {MULTI_NODE}),  # the LWS install stays: the app still has a 2-node model
    ],
)
def test_every_stack_of_a_selection_synthesises_exactly_as_in_the_whole_app(
    selection: str, serving: set[str]
) -> None:
    # The external contract: a selected stack's name and every logical id (its whole
    # template) are the whole app's, so `cdk diff -c deployments=...` diffs the real thing;
    # the shared stacks too (no export goes missing with the stacks left out).
    _, whole = synthesised()
    assembly = _selected(selection).synth()
    selected = {s.stack_name: json.dumps(s.template, indent=1) for s in assembly.stacks}
    assert set(selected) == SHARED | serving
    for name in serving:
        assert selected[name] == whole[name], name
    for name in SHARED:  # an export kept for a stack left out may come first in Outputs
        assert json.loads(selected[name]) == json.loads(whole[name]), name


def test_an_unknown_name_is_refused_before_any_stack() -> None:
    with pytest.raises(MlccError) as raised:
        _selected("llama-vlm,mistral-vllm-args")
    (problem,) = raised.value.problems
    text = str(problem)
    assert text.startswith(
        "-c deployments:/deployments/0: no serving stack or deployment of this name "
        "(got 'llama-vlm'; allowed: llama-405b-vllm, llama-sglang, llama-vllm, "
    )
    assert EKS_LLAMA in text and MISTRAL in text and "did you mean 'llama-vllm'?" in text


def test_dist_with_a_selection_writes_only_the_selected_and_keeps_the_rest(
    tmp_path: Path,
) -> None:
    from app import write_reference_manifests

    (tmp_path / "eks-inference-mistral-vllm-args.k8s.yaml").write_text("earlier\n")
    written = write_reference_manifests(_selected("llama-sglang"), outdir=str(tmp_path))
    assert sorted(Path(f).name for f in written) == [
        "hyperpod-eks-inference-llama-sglang.k8s.yaml",
        "namespaces.k8s.yaml",
    ]
    assert (tmp_path / "eks-inference-mistral-vllm-args.k8s.yaml").read_text() == "earlier\n"
