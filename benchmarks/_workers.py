"""Workloads the benchmark times, each run in a fresh process (``python _workers.py NAME ...``).

Kept separate from ``run.py`` so every measured process pays exactly its own import and
jsii start-up cost, the same way ``cdk synth`` pays it.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))


def floor() -> None:
    """The unavoidable cost: Python, jsii, an empty CDK app and an empty cdk8s app."""
    import aws_cdk as cdk
    import cdk8s

    with tempfile.TemporaryDirectory() as out:
        cdk.App(outdir=f"{out}/cdk.out").synth()
        cdk8s.App(outdir=f"{out}/dist").synth()


def reference_app() -> None:
    """``python app.py`` as ``cdk synth`` runs it: every stack and the reference charts."""
    import aws_cdk as cdk

    import app

    context = json.loads((REPO / "cdk.json").read_text())["context"]
    with tempfile.TemporaryDirectory() as out:
        cdk_app = app.build_app(cdk.App(outdir=f"{out}/cdk.out", context=context))
        app.write_reference_manifests(cdk_app, outdir=f"{out}/dist")
        cdk_app.synth()


def scale(count: int) -> None:
    """cdk8s synthesis of ``count`` deployments (one ServingChart each) in one app."""
    import cdk8s

    from benchmarks.specs import deployment_specs
    from mlcc_constructs.core.context import RenderContext
    from mlcc_constructs.k8s.serving_chart import ServingChart, ServingChartProps

    context = RenderContext(account="123456789012", region="us-east-1", profile="dev")
    with tempfile.TemporaryDirectory() as out:
        charts = cdk8s.App(outdir=out)
        for index, spec in enumerate(deployment_specs(count, cache=False)):
            ServingChart(charts, f"d{index}", props=ServingChartProps(spec=spec, context=context))
        charts.synth()


def scale_floor(count: int) -> None:
    """The jsii floor of :func:`scale`: the same construct tree (a chart, two constructs and six
    ``ApiObject`` s with only a name per deployment), nothing rendered or validated."""
    import cdk8s
    import constructs

    with tempfile.TemporaryDirectory() as out:
        charts = cdk8s.App(outdir=out)
        for index in range(count):
            chart = cdk8s.Chart(charts, f"d{index}", disable_resource_name_hashes=True)
            serving = constructs.Construct(chart, "Serving")
            config = constructs.Construct(serving, "ConfigMap")
            for number in range(6):
                cdk8s.ApiObject(
                    config if number == 0 else serving,
                    f"o{number}",
                    api_version="v1",
                    kind="ConfigMap",
                    metadata=cdk8s.ApiObjectMetadata(name=f"d{index}-{number}"),
                )
        charts.synth()


if __name__ == "__main__":
    name, *args = sys.argv[1:]
    if name == "scale":
        scale(int(args[0]))
    elif name == "scale_floor":
        scale_floor(int(args[0]))
    else:
        {"floor": floor, "reference_app": reference_app}[name]()
