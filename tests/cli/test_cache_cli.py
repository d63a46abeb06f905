"""``mlcc cache reserved`` and ``mlcc cache check`` as a user runs them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from mlcc_constructs import cli
from tests.core.cache.test_cache_admission import seed_safe_spec


@pytest.fixture(autouse=True)
def _only_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    # Other command groups are built elsewhere; the cache group stands on its own.
    monkeypatch.setattr(cli, "COMMAND_MODULES", ("cache",))


def mlcc(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = cli.main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_the_cache_group_is_registered() -> None:
    # Read the real tuple from the source: the fixture above replaces it at runtime.
    assert '"cache"' in Path(cli.__file__).read_text().split("COMMAND_MODULES", 1)[1][:200]


def test_reserved_vllm_table(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = mlcc(capsys, "cache", "reserved", "--runtime", "VLLM")
    assert code == 0
    assert out.splitlines() == [
        "ADAPTER          RUNTIME  TYPE     KIND  RESERVED",
        "vllm-lmcache-mp  VLLM     LMCache  arg   --kv-transfer-config",
        "vllm-lmcache-mp  VLLM     LMCache  arg   --disable-hybrid-kv-cache-manager",
        "vllm-lmcache-mp  VLLM     LMCache  env   PYTHONHASHSEED",
        "vllm-lmcache-mp  VLLM     LMCache  env   INFERENCECACHE_FAIL_OPEN",
    ]


def test_reserved_json_lists_every_adapter(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = mlcc(capsys, "cache", "reserved", "--format", "json")
    assert code == 0
    report = json.loads(out)
    assert (report["command"], report["ok"]) == ("cache reserved", True)
    rows = report["adapters"]
    assert [(r["adapter"], r["runtime"]) for r in rows] == [
        ("vllm-lmcache-mp", "VLLM"),
        ("sglang-lmcache-mp", "SGLang"),
    ]
    assert rows[1]["reserved_args"] == [
        "--enable-lmcache",
        "--lmcache-config-file",
        "--enable-metrics",
    ]


def test_reserved_runtime_is_case_sensitive(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        mlcc(capsys, "cache", "reserved", "--runtime", "vllm")
    assert caught.value.code == 1  # a bad value, as every flag's (test_cli_errors)
    assert "--runtime: not a valid value (got 'vllm'; allowed: " in capsys.readouterr().err


def write(tmp_path: Path, spec: dict[str, Any], name: str = "cb.yaml") -> Path:
    path = tmp_path / name
    document = {
        "apiVersion": "inferencecache.io/v1alpha1",
        "kind": "CacheBackend",
        "metadata": {"name": "vllm-mp"},
        "spec": spec,
    }
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path


def test_check_admits_the_seed_example(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, seed_safe_spec())
    code, out, _ = mlcc(capsys, "cache", "check", str(path))
    assert code == 0
    assert out == f"{path}: CacheBackend vllm-mp: admitted (vllm-lmcache-mp (VLLM + LMCache))\n"


def test_check_refuses_a_pythonhashseed_override(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = seed_safe_spec()
    overrides = spec["integration"]["engineOverrides"]
    overrides["env"].append({"name": "PYTHONHASHSEED", "value": "42"})
    overrides["suppressArgs"] = ["--disable-hybrid-kv-cache-manager"]
    path = write(tmp_path, spec)
    code, out, err = mlcc(capsys, "cache", "check", str(path))
    assert code == 1
    assert out == ""
    lines = err.splitlines()
    assert [line.split(" (got")[0] for line in lines] == [
        f"mlcc: error: {path}:/spec/integration/engineOverrides/env/1: replaces reserved env "
        "PYTHONHASHSEED of adapter vllm-lmcache-mp (VLLM + LMCache)",
        f"mlcc: error: {path}:/spec/integration/engineOverrides/suppressArgs/0: suppresses "
        "reserved argument --disable-hybrid-kv-cache-manager of adapter vllm-lmcache-mp "
        "(VLLM + LMCache)",
    ]


def test_check_the_upstream_sample(shared_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = shared_dir / "examples" / "example-cachebackend-vllm-podlocal.yaml"
    code, out, _ = mlcc(capsys, "cache", "check", str(path))
    assert code == 0
    assert "CacheBackend vllm-podlocal-host-only: admitted" in out


def test_check_a_file_without_a_cachebackend(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "cm.yaml"
    path.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")
    code, _, err = mlcc(capsys, "cache", "check", str(path))
    assert code == 1
    assert err == (
        f"mlcc: error: {path}: no CacheBackend object in the file (fix: add a document with "
        "apiVersion inferencecache.io/v1alpha1 and kind CacheBackend)\n"
    )
