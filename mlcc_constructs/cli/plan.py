"""``mlcc plan``: how long a deployment takes to serve from cold, and why.

``plan -f SPEC`` (the flags of ``mlcc render`` override its fields; a spec list plans every
deployment) prepares each deployment as ``mlcc render`` does and prints its cold start: node
start, image pull, weight load and engine warm-up, each with its assumption and source; the
expected total; the physical limit (model bytes / the instance's baseline network bandwidth);
and the budgets the rendered objects carry (startup probe, do-not-disrupt window, ready
timeout). The numbers are the ones the probes are sized from, and estimates: the output says so.
Then its price: the instances it runs, Auto Mode's fee for them and its load balancer, each
with its on-demand hourly price from the pinned ``data/prices.json`` (source and date), the
total per hour and per 30 days (720 h), and every item with no price on record named
(``price`` in the JSON).

The model's size: the spec's ``model_bytes``, else, with ``--read-index``, the staged model's
``model.safetensors.index.json`` read from S3 (``s3://`` models; the only network call this
command makes), else ``model_config``'s parameters x dtype bytes, else unknown.

Output: JSON (default; on failure ``{"command": "plan", "ok": false, "errors"}`` too) or
``--format table`` or ``yaml``. Bad input: one ``mlcc: error:`` line per problem on stderr, exit 1.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from mlcc_constructs.cli._parser import add_format_option, emit
from mlcc_constructs.core.support.errors import MlccError, fail


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from mlcc_constructs.cli.render import add_spec_options

    parser = subparsers.add_parser(
        "plan",
        help="estimate a deployment's time to serve from cold (node start, image pull, weight "
        "load, engine warm-up, the physical limit) and price what it runs per hour",
        description="Estimate how long each deployment of the spec takes to serve from cold, "
        "phase by phase with each assumption and its source, print the budgets its "
        "objects carry (the same numbers; estimates, not measurements), and price what it "
        "runs: on-demand list prices from the pinned data/prices.json, per hour and per 30 "
        "days, every item with no price on record named.",
    )
    add_spec_options(parser)
    add_format_option(parser, default="json")
    parser.add_argument(
        "--read-index",
        action="store_true",
        help="read the staged model's model.safetensors.index.json from S3 for its size when "
        "the spec has no model_bytes (s3:// models; AWS credentials)",
    )
    parser.add_argument(
        "--endpoint-url", default=None, help="S3 endpoint for --read-index (default: AWS)"
    )
    parser.set_defaults(func=run_plan)


def run_plan(args: argparse.Namespace) -> int:
    from mlcc_constructs.cli._common import registry_from
    from mlcc_constructs.cli.render import spec_contexts
    from mlcc_constructs.core.serving.cold_start_plan import plan_document, plan_report, plan_table
    from mlcc_constructs.core.serving.deployment_bill import deployment_bill
    from mlcc_constructs.core.serving.prepared import prepare

    registry = registry_from(args)
    documents: list[dict[str, Any]] = []
    prices: list[Any] = []
    warnings: list[str] = []
    problems: list[Any] = []
    for loaded, context in spec_contexts(args, problems):
        try:
            index_bytes = _index_bytes(args, loaded.spec, context)
            prepared = prepare(
                loaded.spec, context=context, registry=registry, index_bytes=index_bytes
            )
        except MlccError as error:
            problems.extend(loaded.locate(error).problems)
            continue
        price = deployment_bill(prepared)
        documents.append(plan_document(prepared, price=price))
        prices.append(price)
        warnings += prepared.warnings
    if problems:
        raise MlccError(problems)
    for note in warnings:
        print(f"mlcc: {note}", file=sys.stderr)
    emit(args, plan_report(documents), table=lambda: plan_table(documents, prices=prices))
    return 0


def _index_bytes(args: argparse.Namespace, spec: Any, context: Any) -> int | None:
    """The staged model's size from S3 (``--read-index``, and the spec has no ``model_bytes``)."""
    if not args.read_index or spec.model.bytes is not None:
        return None
    from mlcc_constructs.core.adapters.s3_layout import S3Location
    from mlcc_constructs.core.serving.spec.deployment import parse_model_source
    from mlcc_constructs.core.serving.spec.model_bucket import place_model

    spec, _ = place_model(spec, context)  # s3://${model_bucket}/...: the context's bucket
    source = parse_model_source(spec.model.uri)
    if source.kind != "s3" or source.bucket is None:
        raise fail(
            "--read-index reads the index from S3; this model is a Hugging Face id",
            pointer="/model/uri",
            value=spec.model.uri,
            allowed="an s3:// model",
            fix="drop --read-index and set model.bytes (the model's safetensors index "
            "metadata.total_size)",
        )
    import boto3  # type: ignore[import-untyped]

    from mlcc_constructs.ops.model_size import staged_model_bytes

    s3 = boto3.client(
        "s3", endpoint_url=args.endpoint_url, region_name=spec.region or context.region
    )
    size, _ = staged_model_bytes(s3, S3Location(bucket=source.bucket, key=source.prefix or ""))
    return size
