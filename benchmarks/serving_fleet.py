"""``make bench`` section "pipeline stages (ServingFleet)": what a :class:`~mlcc_constructs.aws.
serving_fleet.ServingFleet` costs to synthesise per stage, at 1 and 30 stages.

Each measurement is one process, as ``cdk synth`` runs the app: build the fleet (its pipeline
stack and N stages, each the app's four stacks for one deployment) and synthesise it. Stages
cycle over 2 accounts and 2 regions, 3 waves; every stage has its own profile. The figures are
the wall time and peak resident memory of the process tree; the section reports the cost per
stage at N stages (``(cost(N) - cost(1)) / (N - 1)``) against the whole 1-stage fleet.

Run one measurement by hand: ``python benchmarks/serving_fleet.py 30``.
"""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks._measure import (  # noqa: E402 (the repository first on the path)
    PYTHON,
    load_average,
    measure_processes,
)

ACCOUNTS = ("111111111111", "222222222222")
REGIONS = ("us-east-1", "eu-west-1")
WAVES = ("canary", "early", "rest")


def build(app: Any, stages: int) -> Any:
    """A fleet of ``stages`` stages on ``app`` (module doc)."""
    import aws_cdk as cdk
    from aws_cdk import pipelines

    from mlcc_constructs.aws.serving_fleet import ServingFleet, ServingFleetProps
    from mlcc_constructs.core.platform.fleet import CheckNetwork, FleetStage
    from mlcc_constructs.core.platform.fleet_pin import ModelPin

    network = CheckNetwork(
        vpc_id="vpc-0123456789abcdef0",
        subnet_ids=("subnet-0123456789abcdef0", "subnet-0123456789abcdef1"),
        availability_zones=("us-east-1a", "us-east-1b"),
    )
    fleet_stages = []
    for index in range(stages):
        account, region = ACCOUNTS[index % 2], REGIONS[(index // 2) % 2]
        fleet_stages.append(
            FleetStage(
                name=f"s{index}",
                wave=WAVES[min(index, len(WAVES) - 1)] if stages >= len(WAVES) else WAVES[0],
                account=account,
                region=region,
                profile=f"s{index}",
                availability_zones=(f"{region}a", f"{region}b"),
                check_role_arn=f"arn:aws:iam::{account}:role/mlcc-fleet-check",
                check_network=network,
            )
        )
    waves = tuple(w for w in WAVES if any(s.wave == w for s in fleet_stages))
    stack = cdk.Stack(
        app, "mlcc-fleet-pipeline", env=cdk.Environment(account=ACCOUNTS[0], region=REGIONS[0])
    )
    return ServingFleet(
        stack,
        "Fleet",
        props=ServingFleetProps(
            source=pipelines.CodePipelineSource.connection(
                "example/serving",
                "main",
                connection_arn=f"arn:aws:codeconnections:us-east-1:{ACCOUNTS[0]}:connection/"
                "00000000-0000-0000-0000-000000000000",
            ),
            stages=tuple(fleet_stages),
            waves=waves,
            deployments=(
                {
                    "name": "qwen3-8b",
                    "target": "eks",
                    "engine": {"name": "vllm"},
                    "model": {"bytes": 16381470720},
                    "compute": {"instance_type": "ml.g6.xlarge"},
                    "namespace": "inference",
                },
            ),
            models={
                "qwen3-8b": ModelPin(
                    project="chat",
                    name="qwen3-8b-sft",
                    home=f"s3://mlcc-models-s0-{ACCOUNTS[0]}-us-east-1/models/mlcc-chat/"
                    "qwen3-8b-sft/",
                    content_hash="a" * 64,
                    engine_image="public.ecr.aws/example/vllm:v0.33.0@sha256:" + "b" * 64,
                    engine_version="0.33.0",
                )
            },
        ),
    )


def synth(stages: int) -> None:
    """Build and synthesise a fleet of ``stages`` stages in a temporary folder."""
    import aws_cdk as cdk

    with tempfile.TemporaryDirectory(prefix="mlcc-fleet-bench-") as outdir:
        app = cdk.App(
            context={"@aws-cdk/core:defaultCrossStackReferences": "strong"}, outdir=outdir
        )
        build(app, stages)
        app.synth()


def serving_fleet_stages(runs: int, sizes: Sequence[int] = (1, 30)) -> dict[str, Any]:
    """The section (module doc): one figure per fleet size, the cost per stage at the largest
    against the whole 1-stage fleet."""
    small, large = min(sizes), max(sizes)
    commands = {f"{n} stages": [PYTHON, str(Path(__file__).resolve()), str(n)] for n in sizes}
    load = load_average()
    figures = measure_processes(commands, runs)
    one, many = figures[f"{small} stages"], figures[f"{large} stages"]
    one_mib, many_mib = (sorted(f.peak_mib)[len(f.peak_mib) // 2] for f in (one, many))
    per_stage_s = (many.median - one.median) / (large - small)
    per_stage_mib = (many_mib - one_mib) / (large - small)
    return {
        "figures": {f.name: f.summary() for f in figures.values()},
        "per_stage_s": round(per_stage_s, 3),
        "per_stage_mib": round(per_stage_mib, 1),
        f"{small}_stage_fleet_s": round(one.median, 3),
        f"s_per_stage_at_{large}": round(many.median / large, 3),
        f"mib_per_stage_at_{large}": round(many_mib / large, 1),
        "per_stage_vs_one_stage_fleet": round(per_stage_s / one.median, 3),
        "load_average": load,
        "target": f"each stage beyond the first costs no more than a whole {small}-stage fleet "
        "(per_stage_vs_one_stage_fleet <= 1)",
        "met": per_stage_s <= one.median,
    }


if __name__ == "__main__":
    synth(int(sys.argv[1]))
