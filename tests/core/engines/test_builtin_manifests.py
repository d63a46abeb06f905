"""The shipped engine manifests load without jsonschema (start-up fast path), so this test is
what proves each one passes the full check a plugin gets: the schema and the semantic rules."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from mlcc_constructs.core.engines.manifests import (
    builtin_engines,
    builtin_manifest_files,
    load_manifest,
)

FILES = builtin_manifest_files()


def test_every_engine_folder_is_loaded() -> None:
    assert [m.source for m in builtin_engines()] == [str(p) for p in FILES]
    assert len(FILES) == 5


@pytest.mark.parametrize("path", FILES, ids=lambda p: Path(p).parent.name)
def test_builtin_passes_schema_and_semantic_checks(path: Path) -> None:
    checked = load_manifest(path)  # raises MlccError naming every problem
    fast = next(m for m in builtin_engines() if m.source == str(path))
    assert fast == checked


def test_pure_commands_do_not_import_jsonschema_or_jsii() -> None:
    code = (
        "import sys\n"
        "from mlcc_constructs import cli\n"
        "for command in ('env', 'argv'):\n"
        "    cli.main([command, '--engine', 'vllm', '--model', 's3://b/m/',"
        " '--instance-type', 'ml.g5.12xlarge'])\n"
        "heavy = sorted(m for m in ('jsonschema', 'jsonschema_rs', 'jsii', 'yaml', 'difflib')\n"
        "    if m in sys.modules)\n"
        "print(heavy, file=sys.stderr)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stderr.strip().splitlines()[-1] == "[]"
