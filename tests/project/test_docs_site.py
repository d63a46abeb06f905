"""The docs site (mkdocs.yml, docs/, tools/docs_reference.py): its generated reference covers
every public name, spec field and ``mlcc`` command; its strict build fails on a broken link, a
missing nav page and a missing Python name; and in headless Chromium (tests/docs_site_browser.js)
it shows no console error, reaches every nav page from the index by links, and its search finds
a spec field. Screenshots of the index and a guide stay in site/_screenshots/ for review."""

from __future__ import annotations

import argparse
import ast
import functools
import json
import re
import shutil
import subprocess
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml

import mlcc_constructs
from mlcc_constructs.cli import build_parser
from tools import docs_reference

ROOT = Path(__file__).resolve().parents[2]

CHROMIUM = Path("/usr/bin/chromium")
DRIVER = ROOT / "tests" / "docs_site_browser.js"
SEARCH_FIELD = "gpu_memory_utilization"
GUIDE = "guides/engines/"


def build_site(site_dir: Path, docs_dir: Path | None = None) -> None:
    """``mkdocs build`` with the repository's mkdocs.yml (strict), in this process."""
    from mkdocs.commands.build import build
    from mkdocs.config import load_config

    overrides: dict[str, Any] = {"site_dir": str(site_dir)}
    if docs_dir is not None:
        overrides["docs_dir"] = str(docs_dir)
    config = load_config(str(ROOT / "mkdocs.yml"), **overrides)
    config.plugins.on_startup(command="build", dirty=False)
    try:
        build(config)
    finally:
        config.plugins.on_shutdown()


def nav_pages() -> list[str]:
    """Every page path of mkdocs.yml's nav."""
    nav = yaml.safe_load((ROOT / "mkdocs.yml").read_text())["nav"]

    def walk(node: Any) -> Iterator[str]:
        if isinstance(node, str):
            yield node
        elif isinstance(node, list):
            for item in node:
                yield from walk(item)
        elif isinstance(node, dict):
            for value in node.values():
                yield from walk(value)

    return list(walk(nav))


def assert_nav_pages_exist() -> None:
    """Every nav page is in docs/ or generated (else the strict build fails on each one)."""
    made = generated()
    missing = [p for p in nav_pages() if p not in made and not (ROOT / "docs" / p).is_file()]
    assert not missing, f"mkdocs.yml's nav names pages missing from docs/: {missing}"


def page_url(page: str) -> str:
    """A page's URL path on the built site (use_directory_urls)."""
    stem = page.removesuffix(".md")
    stem = stem.removesuffix("index").rstrip("/")
    return f"/{stem}/" if stem else "/"


SITE_SHAPE = """
index.md quick-start.md
guides/engines.md guides/model-and-compute.md guides/lora.md guides/endpoint.md
guides/scaling-and-disruption.md guides/cold-start.md guides/cache.md guides/multi-node.md
guides/hyperpod.md guides/cdk-app.md guides/cdk8s-charts.md guides/reviewing-cdk-diff.md
guides/fleet.md
operations/preflight.md operations/cost.md operations/teardown.md operations/troubleshooting.md
operations/not-verified.md operations/performance.md
contributing/layout.md contributing/add-an-engine.md contributing/add-a-kind.md
contributing/bump-a-pinned-version.md contributing/docs-site.md
reference/index.md reference/constructs.md reference/charts.md reference/core.md
reference/spec.md reference/cli.md
"""  # issue 36's shape of the site, in nav order (plus the layout page the README's section became)


def test_the_nav_has_the_sites_shape() -> None:
    assert nav_pages() == SITE_SHAPE.split()


# --- what the reference must cover, found independently of the generator ----------------------


def schema_field_paths() -> list[str]:
    """Every field path of deployment-spec.schema.json (``a.b``; list items ``a[].b``)."""
    schema = json.loads(docs_reference.SCHEMA.read_text())

    def deref(node: dict[str, Any]) -> dict[str, Any]:
        while "$ref" in node:
            target: Any = schema
            for part in node["$ref"].removeprefix("#/").split("/"):
                target = target[part]
            node = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
        return node

    def walk(node: dict[str, Any], prefix: str) -> Iterator[str]:
        node = deref(node)
        for name, child in node.get("properties", {}).items():
            if name == "$schema":
                continue
            yield prefix + name
            child = deref(child)
            for shape in child.get("anyOf", child.get("oneOf", [child])):
                shape = deref(shape)
                yield from walk(shape, f"{prefix}{name}.")
                if isinstance(shape.get("items"), dict):
                    yield from walk(shape["items"], f"{prefix}{name}[].")

    return list(walk(schema, ""))


def cli_commands() -> dict[str, list[str]]:
    """Every ``mlcc`` command path -> its option strings and positional names."""
    found: dict[str, list[str]] = {}

    def walk(parser: argparse.ArgumentParser, prefix: str) -> None:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    path = f"{prefix}{name}"
                    found[path] = [
                        flag
                        for a in sub._actions
                        if not isinstance(a, argparse._HelpAction | argparse._SubParsersAction)
                        for flag in (a.option_strings or [a.metavar or a.dest])
                    ]
                    walk(sub, f"{path} ")

    walk(build_parser(), "")
    return found


def layer_classes() -> dict[str, list[str]]:
    """mlcc_constructs/aws and k8s: public module -> its public classes."""
    found = {}
    for layer in ("aws", "k8s"):
        for module_file in sorted((ROOT / "mlcc_constructs" / layer).glob("[!_]*.py")):
            tree = ast.parse(module_file.read_text())
            names = [n.name for n in tree.body if isinstance(n, ast.ClassDef)]
            found[f"mlcc_constructs.{layer}.{module_file.stem}"] = [
                n for n in names if not n.startswith("_")
            ]
    return found


@functools.cache
def generated() -> dict[str, str]:
    return docs_reference.pages()


def test_the_reference_documents_every_root_name_and_every_construct_class() -> None:
    api = "\n".join(generated()[f"reference/{p}.md"] for p in ("constructs", "charts", "core"))
    documented = set(re.findall(r"^::: (\S+)$", api, re.M))
    missing = [n for n in mlcc_constructs.__all__ if f"mlcc_constructs.{n}" not in documented]
    assert not missing, f"not in the reference: {missing}"
    exported = set(mlcc_constructs.__all__)
    for module, classes in layer_classes().items():
        for name in classes:
            path = f"mlcc_constructs.{name}" if name in exported else f"{module}.{name}"
            assert path in documented, f"{module}.{name} is not in the reference"
    # each root name once, on the page of its layer
    assert len(documented) == len(re.findall(r"^::: ", api, re.M))
    assert "::: mlcc_constructs.ServedModel" in generated()["reference/constructs.md"]
    assert "::: mlcc_constructs.ServingChart" in generated()["reference/charts.md"]
    assert "::: mlcc_constructs.render" in generated()["reference/core.md"]


def test_the_spec_reference_has_every_schema_field_with_its_facts() -> None:
    page = generated()["reference/spec.md"]
    paths = schema_field_paths()
    assert "endpoint.max_request_seconds" in paths and "compute.instance_type" in paths
    for path in paths:
        anchor = docs_reference.field_anchor(path)
        assert f"`{path}` {{#{anchor}}}" in page, f"spec field {path} is not in spec.md"
    anchor = docs_reference.field_anchor("endpoint.max_request_seconds")
    heading = f"`endpoint.max_request_seconds` {{#{anchor}}}"
    section = page.split(heading, 1)[1].split("\n## ")[0]
    assert "type: integer" in section
    assert "default: <code>600</code>" in section
    assert "bounds: &gt;= 1; &lt;= 3600" in section
    assert "drains this long before the engine gets SIGTERM" in section


def test_the_spec_walker_follows_refs_defs_items_and_enums() -> None:
    schema = {
        "$defs": {
            "Scaling": {
                "type": "object",
                "required": ["max"],
                "properties": {
                    "max": {"type": "integer", "minimum": 1, "maximum": 8, "description": "most"},
                    "mode": {"enum": ["a", "b"], "default": "a"},
                },
            }
        },
        "type": "object",
        "properties": {
            "scaling": {"$ref": "#/$defs/Scaling", "description": "how it scales"},
            "items": {"type": "array", "items": {"$ref": "#/$defs/Scaling"}},
            "optional": {"anyOf": [{"$ref": "#/$defs/Scaling"}, {"type": "null"}]},
        },
    }
    rows = {f.path: f for f in docs_reference.spec_fields(schema)}
    assert list(rows) == [
        "scaling",
        "scaling.max",
        "scaling.mode",
        "items",
        "items[].max",
        "items[].mode",
        "optional",
        "optional.max",
        "optional.mode",
    ]
    assert rows["optional"].type == "object or null"
    assert rows["scaling"].description == "how it scales"
    assert rows["scaling.max"].required and rows["scaling.max"].bounds == ">= 1; <= 8"
    assert rows["scaling.mode"].type == 'one of "a", "b"'
    assert rows["scaling.mode"].default == "<code>a</code>"
    assert rows["items"].type == "array of object"


def test_sphinx_roles_in_docstrings_render_as_code() -> None:
    text = "an :class:`~mlcc_constructs.aws.imported_cluster.IServingCluster`, :func:`render`"
    assert docs_reference.markdown_roles(text) == "an `IServingCluster`, `render`"
    page = generated()["reference/constructs.md"]
    assert ":class:" not in page and ":mod:" not in page


def test_the_cli_reference_has_every_command_and_flag() -> None:
    page = generated()["reference/cli.md"]
    sections = dict(
        (m.group(1), m.group(2))
        for m in re.finditer(r"^## `mlcc ([^`]+)`\n(.*?)(?=^## |\Z)", page, re.M | re.S)
    )
    commands = cli_commands()
    assert {"render", "adapter promote", "endpoint check"} <= set(commands)
    assert set(sections) == set(commands)
    for path, flags in commands.items():
        for flag in flags:
            assert f"<code>{flag}</code>" in sections[path], f"mlcc {path} {flag} is not in cli.md"


# --- the strict build ------------------------------------------------------------------------


def _docs_copy(tmp_path: Path) -> Path:
    docs = tmp_path / "docs"
    shutil.copytree(ROOT / "docs", docs)
    return docs


@pytest.mark.parametrize(
    ("breakage", "warning"),
    [
        ("link", "contains a link 'nowhere.md', but the target 'guides/nowhere.md' is not found"),
        ("nav", "A reference to 'guides/lora.md' is included in the 'nav' configuration"),
        ("name", "mlcc_constructs.NoSuchName"),
    ],
)
def test_the_strict_build_fails_on(
    breakage: str, warning: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from mkdocs.exceptions import Abort, PluginError

    assert_nav_pages_exist()
    docs = _docs_copy(tmp_path)
    lora = docs / "guides" / "lora.md"
    if breakage == "link":
        lora.write_text(lora.read_text() + "\n[gone](nowhere.md)\n")
    elif breakage == "nav":
        lora.unlink()
    else:
        lora.write_text(lora.read_text() + "\n::: mlcc_constructs.NoSuchName\n")
    with pytest.raises((Abort, PluginError)) as raised:
        build_site(tmp_path / "site", docs)
    assert warning in caplog.text + str(raised.value)
    # and nothing else failed it: every warning is about the one breakage
    culprits = {"link": ("nowhere.md",), "nav": ("guides/lora.md",), "name": ("NoSuchName", "lora")}
    messages = [r.getMessage() for r in caplog.records if r.levelno >= 30]
    assert all(any(c in m for c in culprits[breakage]) for m in messages), messages


def test_the_built_reference_renders_every_name_field_and_command(tmp_path: Path) -> None:
    assert_nav_pages_exist()
    build_site(tmp_path / "site")
    html = {
        p: (tmp_path / "site" / "reference" / p / "index.html").read_text()
        for p in ("constructs", "charts", "core", "spec", "cli")
    }
    api = html["constructs"] + html["charts"] + html["core"]
    for name in mlcc_constructs.__all__:
        assert f'id="mlcc_constructs.{name}"' in api, f"{name} has no rendered heading"
    for path in schema_field_paths():
        assert f'id="{docs_reference.field_anchor(path)}"' in html["spec"], path
    for command in cli_commands():
        assert f"<code>mlcc {command}</code>" in html["cli"], command


# --- the browser ------------------------------------------------------------------------------


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def served_site() -> Iterator[str]:
    """The site built into site/ (kept for review with its screenshots), served on loopback."""
    assert_nav_pages_exist()
    site = ROOT / "site"
    build_site(site)
    handler = functools.partial(_QuietHandler, directory=str(site))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


def test_the_site_in_headless_chromium(served_site: str) -> None:
    assert CHROMIUM.exists(), "no /usr/bin/chromium: run `make test-debs` (apt: chromium)"
    assert (ROOT / "node_modules" / "playwright-core").is_dir(), "run `npm ci` (make bootstrap)"
    shots = ROOT / "site" / "_screenshots"
    run = subprocess.run(
        ["node", str(DRIVER), served_site, str(shots), SEARCH_FIELD, GUIDE],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    report = json.loads(run.stdout)
    assert report["problems"] == []
    unreached = [p for p in nav_pages() if page_url(p) not in report["visited"]]
    assert not unreached, f"nav pages not reachable from the index by links: {unreached}"
    search = report["search"]
    # the field's own heading, at the top level or in its section (compute.gpu_memory_utilization)
    assert search["landed"], f"search for {SEARCH_FIELD} found no spec field: {search['hits']}"
    fragment = search["landed"].split("/reference/spec/#", 1)[1]
    assert fragment.rsplit(".", 1)[-1] == SEARCH_FIELD, search["landed"]
    assert search["landed_has_target"]
    for name in ("index.png", "guide.png"):
        png = (shots / name).read_bytes()
        assert png.startswith(b"\x89PNG") and len(png) > 10_000, name
