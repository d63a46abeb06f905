"""The instance catalog's network columns: every type has a baseline bandwidth, the "up to"
bursts are recorded as such (above the baseline, only where AWS states one), the figures match
their sources, and planning uses the baseline."""

from __future__ import annotations

import json

import pytest

from mlcc_constructs.core._resources import data_path
from mlcc_constructs.core.platform.catalog import instance_names, lookup

DOCUMENT = json.loads(data_path("instance_catalog.json").read_text(encoding="utf-8"))
SOURCES = DOCUMENT["sources"]


@pytest.mark.parametrize(
    ("name", "baseline", "burst"),
    [
        # Sizes AWS documents as "up to N Gbps": the baseline, and the burst beside it.
        ("g5.xlarge", 2.5, 10),
        ("g5.2xlarge", 5, 10),
        ("g5.4xlarge", 10, 25),
        ("g6.xlarge", 2.5, 10),
        ("g6.2xlarge", 5, 10),
        ("g6e.xlarge", 2.5, 20),
        ("g6e.2xlarge", 5, 20),
        # A fixed bandwidth: no burst.
        ("g5.8xlarge", 25, None),
        ("g5.12xlarge", 40, None),
        ("g5.16xlarge", 25, None),
        ("g5.24xlarge", 50, None),
        ("g5.48xlarge", 100, None),
        ("g6.12xlarge", 40, None),
        ("g6.24xlarge", 50, None),
        ("g6.48xlarge", 100, None),
        ("g6e.12xlarge", 100, None),
        ("g6e.24xlarge", 200, None),
        ("g6e.48xlarge", 400, None),
        ("p4d.24xlarge", 400, None),
        ("p4de.24xlarge", 400, None),
        ("p5.48xlarge", 3200, None),
        ("p5e.48xlarge", 3200, None),
        ("p5en.48xlarge", 3200, None),
        ("p6-b200.48xlarge", 3200, None),
    ],
)
def test_the_network_columns(name: str, baseline: float, burst: float | None) -> None:
    entry = lookup(name)
    assert (entry.network_gbps, entry.network_burst_gbps) == (baseline, burst)
    assert entry.network_bytes_per_second == int(baseline * 1e9) // 8
    # Every figure is in its source's text (megabits for the baseline table).
    assert f"{int(baseline * 1000)}" in SOURCES["network_gbps"]
    if burst is not None:
        assert f"up to {burst}" in SOURCES["network_burst_gbps"]


def test_every_type_has_a_baseline_and_only_smaller_bursts() -> None:
    sagemaker = [n for n in instance_names() if n.startswith("ml.")]
    assert len(sagemaker) == 24
    for name in sagemaker:
        entry = lookup(name)
        assert entry.network_gbps > 0
        if entry.network_burst_gbps is not None:
            assert entry.network_burst_gbps > entry.network_gbps
            assert entry.vcpus <= 16  # "up to" is for 4xlarge and smaller


def test_the_catalog_says_planning_uses_the_baseline() -> None:
    assert "Cold-start formulas use network_gbps, never the burst" in DOCUMENT["description"]
