"""CDK entry point (``cdk synth`` runs this through cdk.json): every stack of the app."""

from __future__ import annotations

import sys

import aws_cdk as cdk

from mlcc_constructs.core.errors import MlccError
from mlcc_constructs.core.gpu_capacity import instance_families
from stacks import BucketsStack, EksClusterStack, environment_from_context
from stacks.deployments import app_deployments, gpu_instance_types


def build_app(app: cdk.App | None = None) -> cdk.App:
    """Compose the app's stacks on ``app`` (a new ``cdk.App`` by default).

    The environment (profile, account, region, availability zones) comes from the app's
    context: ``cdk.json``, overridden with ``cdk synth -c key=value``.
    """
    app = app or cdk.App()
    environment = environment_from_context(app)
    deployments = app_deployments(app)
    BucketsStack(app, environment=environment)
    EksClusterStack(
        app,
        environment=environment,
        gpu_families=instance_families(gpu_instance_types(deployments)),
    )
    return app


def synth_reference_charts(app: cdk.App, outdir: str = "dist") -> list[str]:
    """Write one cdk8s chart per cdk.json ``reference_deployments`` entry to
    ``<outdir>/<name>-<target>.k8s.yaml``; entries use the ``mlcc render -f`` spec schema, and
    the app's context supplies the account, region and profile they do not set."""
    import cdk8s

    from mlcc_constructs.core.prepare import RenderContext
    from mlcc_constructs.core.spec_file import spec_from_mapping
    from mlcc_constructs.k8s.serving_chart import ServingChart, ServingChartProps

    charts = cdk8s.App(outdir=outdir)
    ids = []
    for index, entry in enumerate(app.node.try_get_context("reference_deployments") or []):
        loaded = spec_from_mapping(entry, where=f"cdk.json:/context/reference_deployments/{index}")
        context = RenderContext(
            **{
                key: getattr(loaded.context, key) or app.node.try_get_context(key)
                for key in ("account", "region", "profile")
            }
        )
        chart_id = f"{loaded.spec.name}-{loaded.spec.target}"
        ServingChart(charts, chart_id, props=ServingChartProps(spec=loaded.spec, context=context))
        ids.append(chart_id)
    charts.synth()
    return [f"{outdir}/{chart_id}.k8s.yaml" for chart_id in ids]


if __name__ == "__main__":
    try:
        cdk_app = build_app()
        synth_reference_charts(cdk_app)
        cdk_app.synth()
    except MlccError as error:
        for problem in error.problems:
            print(f"app.py: error: {problem}", file=sys.stderr)
        sys.exit(1)
