"""Every code block of README.md and docs/ runs as written (tests/_doc_blocks.py says how blocks
are labelled):

- a ``python`` block runs as its own program (with the blocks it continues); some named examples
  are also checked for what they make;
- a ``yaml`` block is a deployment spec (or a list of them): ``mlcc render -f`` renders it;
- a ``json`` block parses, and a cdk.json context in it is read by the app's own reader;
- a shell block (``sh``, ``bash``) runs with bash from the repository root, offline, unless it
  is labelled ``not-run`` with its reason; either way no placeholder is shell syntax (``<x>``)
  and every ``mlcc`` command in it parses with the real parser;
- a ``text`` block is output or a formula, not code.

Every relative link of those pages resolves to a file, and to a heading of it when it names one.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import unicodedata
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests._cdk_app import manifest_object
from tests._doc_blocks import (
    DOCS,
    REPO,
    Block,
    all_blocks,
    named,
    pages,
    program,
    shell_commands,
    unsafe_operators,
)

BLOCKS = all_blocks()
SHELL = ("sh", "bash")
KNOWN = ("python", "yaml", "json", "text", *SHELL)
# A Prometheus query URL for specs that autoscale (a ServingCluster's, in an app).
PROMETHEUS = "https://aps-workspaces.us-east-1.amazonaws.com/workspaces/ws-0123/"
PROMETHEUS_FLAG = ("--prometheus-url", PROMETHEUS)
# Pages another part of the docs site generates (mkdocs, the API reference): a link into them
# is checked once they exist.
GENERATED = ("docs/reference/", "docs/index.md", "docs/contributing/docs-site.md")


def _env(tmp_path: Path) -> dict[str, str]:
    # PYTHONPATH: the example imports this checkout, whatever copy the venv has installed.
    return {
        **os.environ,
        "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION": "20",
        "PYTHONPATH": str(REPO),
        "CDK_OUTDIR": str(tmp_path / "cdk.out"),
    }


def _of(lang: tuple[str, ...] | str) -> list[Block]:
    langs = (lang,) if isinstance(lang, str) else lang
    return [b for b in BLOCKS if b.lang in langs]


def test_every_block_is_of_a_known_kind() -> None:
    assert [b.id for b in BLOCKS if b.lang not in KNOWN] == []


def test_the_docs_have_examples_of_every_kind() -> None:
    counts = {lang: len(_of(lang)) for lang in KNOWN}
    assert all(counts[lang] for lang in ("python", "yaml", "json", "sh")), counts


# -- python -------------------------------------------------------------------------------------


def _run_python(block: Block, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    (tmp_path / "example.py").write_text(program(block), encoding="utf-8")
    return subprocess.run(
        [sys.executable, "example.py"],
        cwd=tmp_path,
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


CHECKED = {"cdk8s-chart", "cdk8s-plus", "serving-cluster", "readme-team-stack"}


@pytest.mark.parametrize(
    "block",
    [b for b in _of("python") if b.labels.get("example") not in CHECKED],
    ids=lambda b: b.id,
)
def test_python_block_runs(block: Block, tmp_path: Path) -> None:
    done = _run_python(block, tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]


def test_the_cdk8s_example_runs_and_matches_the_core(tmp_path: Path) -> None:
    from mlcc_constructs.core.serving.render import render
    from mlcc_constructs.core.serving.spec.deployment import DeploymentSpec

    done = _run_python(named("cdk8s-chart"), tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    documents = list(yaml.safe_load_all((tmp_path / "dist" / "llama.k8s.yaml").read_text()))
    spec = DeploymentSpec(
        name="llama",
        engine={"name": "vllm", "config_delivery": "args"},
        model={"uri": "meta-llama/Llama-3.1-8B-Instruct"},
        compute={"instance_type": "ml.g6e.xlarge"},
    )
    assert documents == list(render(spec).objects)
    team = list(yaml.safe_load_all((tmp_path / "dist" / "team.k8s.yaml").read_text()))
    assert team == documents


def test_the_cdk8s_plus_example_runs_and_scales_the_library_deployment(tmp_path: Path) -> None:
    done = _run_python(named("cdk8s-plus"), tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    documents = list(yaml.safe_load_all((tmp_path / "dist" / "team.k8s.yaml").read_text()))
    by_kind = {d["kind"]: d for d in documents}
    assert by_kind["HorizontalPodAutoscaler"]["spec"]["scaleTargetRef"] == {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "name": "llama",
    }
    assert by_kind["NetworkPolicy"]["spec"]["podSelector"] == {
        "matchLabels": {"app.kubernetes.io/name": "llama"}
    }
    assert "replicas" not in by_kind["Deployment"]["spec"]  # the HPA owns the count


def _manifests(template: dict[str, Any], namespace: str) -> list[dict[str, Any]]:
    found = [
        manifest_object(r)
        for r in template["Resources"].values()
        if r["Type"] == "Custom::AWSCDK-EKS-KubernetesResource"
    ]
    return [m for m in found if m["metadata"].get("namespace") == namespace]


def test_the_serving_cluster_example_synthesises(tmp_path: Path) -> None:
    done = _run_python(named("serving-cluster"), tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    template = json.loads((tmp_path / "cdk.out" / "AcmeServing.template.json").read_text())
    types = [r["Type"] for r in template["Resources"].values()]
    assert types.count("AWS::EC2::VPC") == 1  # the team's VPC, not a second one
    assert [m["kind"] for m in _manifests(template, "team-a")][-5:] == [
        "Deployment",
        "Service",
        "Ingress",
        "Role",  # the readiness waiter's, after the objects
        "RoleBinding",
    ]


def test_the_readme_example_synthesises_a_served_model(tmp_path: Path) -> None:
    block = named("readme-team-stack")
    assert block.page == "README.md"
    assert len(block.text.splitlines()) <= 40
    done = _run_python(block, tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    (template_file,) = [
        p for p in (tmp_path / "cdk.out").glob("*.template.json") if "Nested" not in p.name
    ]
    template = json.loads(template_file.read_text())
    kinds = [m["kind"] for m in _manifests(template, "team-a")]
    assert {"Deployment", "Service", "Ingress"} <= set(kinds)


# -- yaml: deployment specs --------------------------------------------------------------------


def _render(text: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    spec = tmp_path / "spec.yaml"
    spec.write_text(text, encoding="utf-8")
    return subprocess.run(
        [sys.executable, "-m", "mlcc_constructs.cli", "render", "-f", str(spec), *PROMETHEUS_FLAG],
        cwd=REPO,
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


@pytest.mark.parametrize("block", _of("yaml"), ids=lambda b: b.id)
def test_yaml_block_is_a_spec_that_renders(block: Block, tmp_path: Path) -> None:
    document = yaml.safe_load(block.text)
    entries = document if isinstance(document, list) else [document]
    assert all(isinstance(e, dict) and "engine" in e for e in entries), block.id
    done = _render(block.text, tmp_path)
    assert done.returncode == 0, done.stderr
    assert list(yaml.safe_load_all(done.stdout))


def test_the_https_api_key_example_combines_them(tmp_path: Path) -> None:
    """The endpoint guide's example: one model behind HTTPS with an API key, on its own name."""
    block = named("https-api-key")
    assert block.page == "docs/guides/endpoint.md"
    done = _render(block.text, tmp_path)
    assert done.returncode == 0, done.stderr
    objects = {d["kind"]: d for d in yaml.safe_load_all(done.stdout)}
    ingress = objects["Ingress"]
    annotations = ingress["metadata"]["annotations"]
    assert ingress["spec"]["ingressClassName"] == "mlcc-internet-facing"
    assert annotations["alb.ingress.kubernetes.io/ssl-redirect"] == "443"
    assert annotations["alb.ingress.kubernetes.io/certificate-arn"].startswith("arn:aws:acm:")
    assert [rule["host"] for rule in ingress["spec"]["rules"]] == ["llm.example.com"]
    (provider,) = [o for o in yaml.safe_load_all(done.stdout) if o["kind"] == "SecretProviderClass"]
    assert "mlcc/api-key" in provider["spec"]["parameters"]["objects"]
    env = objects["Deployment"]["spec"]["template"]["spec"]["containers"][0]["env"]
    (key,) = [e for e in env if e["name"] == "VLLM_API_KEY"]
    assert key["valueFrom"]["secretKeyRef"]["key"] == "api-key"  # a Secret, never a value
    # The file the quick start deploys is this example, as a list entry.
    (entry,) = yaml.safe_load((REPO / "examples" / "https-endpoint.yaml").read_text())
    example = yaml.safe_load(block.text)
    assert {k: entry[k] for k in example if k in entry} == {
        k: v for k, v in example.items() if k in entry
    }


# -- json ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("block", _of("json"), ids=lambda b: b.id)
def test_json_block_parses_and_its_context_is_read(block: Block) -> None:
    from mlcc_constructs.core.platform.hyperpod import GROUPS_KEY, instance_groups

    document = json.loads(block.text)
    context = document.get("context", {})
    if GROUPS_KEY in context:
        assert instance_groups(context[GROUPS_KEY])


# -- shell ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("block", _of(SHELL), ids=lambda b: b.id)
def test_no_placeholder_breaks_on_paste(block: Block) -> None:
    for command in shell_commands(block.text):
        assert unsafe_operators(command) == [], f"{block.id}: {command}"


def _mlcc_words(block: Block) -> list[list[str]]:
    """The words of each ``mlcc`` command, with the variables the block sets expanded."""
    found, variables = [], {"HOME": "/home/user"}
    for command in shell_commands(block.text):
        assignment = re.fullmatch(r"([A-Z_]+)=(.*)", command.strip())
        if assignment:
            value = shlex.split(assignment[2], comments=True)
            variables[assignment[1]] = _expand(value[0] if value else "", variables)
            continue
        for part in re.split(r"\s*(?:&&|\|\||;|\|)\s*", command):
            words = shlex.split(_expand(part.rstrip(" &"), variables), comments=True)
            if words and words[0].endswith("mlcc"):
                found.append(words[1:])
    return found


def _expand(text: str, variables: dict[str, str]) -> str:
    return re.sub(r"\$\{?([A-Z_]+)\}?", lambda m: variables.get(m[1], f"${m[1]}"), text)


@pytest.mark.parametrize("block", [b for b in _of(SHELL) if _mlcc_words(b)], ids=lambda b: b.id)
def test_every_mlcc_command_parses(block: Block) -> None:
    from mlcc_constructs.cli import build_parser

    for words in _mlcc_words(block):
        try:
            build_parser().parse_args(words)
        except SystemExit as stop:  # argparse's way of refusing
            pytest.fail(f"{block.id}: mlcc {' '.join(words)} does not parse ({stop})")


def test_every_shell_block_runs_or_says_why_not() -> None:
    unlabelled = [
        b.id
        for b in _of(SHELL)
        if "not-run" not in b.labels and not all(_runs_offline(c) for c in shell_commands(b.text))
    ]
    assert unlabelled == []
    assert all(b.labels["not-run"] for b in _of(SHELL) if "not-run" in b.labels)


def _runs_offline(command: str) -> bool:
    """An ``mlcc`` command of the repository's venv, or a variable set for the ones after."""
    words = shlex.split(command, comments=True)
    return words[0] == ".venv/bin/mlcc" or bool(re.fullmatch(r"[A-Z_]+=\S*", command.strip()))


RUN = [
    b
    for b in _of(SHELL)
    if "not-run" not in b.labels and all(_runs_offline(c) for c in shell_commands(b.text))
]


@pytest.mark.parametrize("block", RUN, ids=lambda b: b.id)
def test_shell_block_runs(block: Block, tmp_path: Path) -> None:
    env = {**_env(tmp_path), "HOME": str(tmp_path)}
    done = subprocess.run(
        ["bash", "-e", "-c", block.text],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, f"{block.id}:\n{done.stderr[-3000:]}"


# -- links ---------------------------------------------------------------------------------------


LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")


def _slug(heading: str) -> str:
    """The anchor Python-Markdown's toc extension (mkdocs) gives a heading."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).replace("`", "")
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    text = re.sub(r"[^\w\s-]", "", text).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def _anchors(path: Path) -> set[str]:
    anchors, fence = set(), False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.lstrip().startswith("```"):
            fence = not fence
        elif not fence and line.startswith("#"):
            anchors.add(_slug(line.lstrip("#").strip()))
    return anchors


def _links(path: Path) -> list[str]:
    text = re.sub(r"```.*?```", "", path.read_text(encoding="utf-8"), flags=re.S)
    text = re.sub(r"`[^`\n]*`", "", text)
    return LINK.findall(text)


@pytest.mark.parametrize("page", pages(), ids=lambda p: str(p.relative_to(REPO)))
def test_every_relative_link_resolves(page: Path) -> None:
    broken = []
    for target in _links(page):
        if re.match(r"[a-z]+:", target):
            continue  # https:, mailto:
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        relative = str(file.relative_to(REPO)) if file.is_relative_to(REPO) else str(file)
        if not file.exists():
            if not relative.startswith(GENERATED):
                broken.append(target)
            continue
        if anchor and anchor not in _anchors(file):
            broken.append(target)
    assert broken == []


def test_the_docs_pages_are_under_docs() -> None:
    assert (DOCS / "quick-start.md").is_file()
    assert len(pages()) > 20


def test_the_readme_is_a_landing_page() -> None:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 200
    assert "pip install mlcc-constructs" in text and "make docs" in text


def test_every_docs_page_the_library_names_exists() -> None:
    """The library's messages and docstrings point at docs pages (``docs/guides/cache.md``),
    never at README sections, and each page they name exists."""
    # The spec modules are being regrouped into sections (issue 36); their docstrings move then.
    later = REPO / "mlcc_constructs" / "core" / "serving" / "spec"
    named_pages = {}
    for source in [*(REPO / "mlcc_constructs").rglob("*.py"), *(REPO / "stacks").rglob("*.py")]:
        text = source.read_text(encoding="utf-8")
        if not source.is_relative_to(later):
            assert not re.search(r"\(README[,)]|the README's", text), source
        for page in re.findall(r"docs/(?:guides|operations|contributing)/[\w-]+\.md", text):
            named_pages.setdefault(page, source)
    assert named_pages
    missing = {p: str(s) for p, s in named_pages.items() if not (REPO / p).is_file()}
    assert missing == {}
