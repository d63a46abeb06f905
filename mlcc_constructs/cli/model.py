"""``mlcc model promote``: publish a full fine-tune to its layout home.

``promote NAME --from SRC --project P``: copy a source prefix or ``.tar.gz`` (a Hugging Face
format model: ``config.json`` and weights at its top) to its layout home (the project's
fine-tune folder, :func:`mlcc_constructs.core.adapters.s3_layout.full_finetune`) with its record
(source, base model, technique, content hash, creator, time), written last. Identical content
is ``unchanged`` (nothing copied); other content under a taken name is refused. A deployment
serves it with the URI this command prints as ``model``.

Every value is checked before anything is written; the report is JSON on stdout, on failure
too, with one ``mlcc: error:`` line per problem on stderr and exit 1.
"""

from __future__ import annotations

import argparse

from mlcc_constructs.cli._adapter_checks import (
    add_bucket_options,
    add_promotion_options,
    check,
    promotion_request,
    s3_client,
)
from mlcc_constructs.cli._inputs import checked
from mlcc_constructs.cli._parser import ReportingParser, add_format_option, emit
from mlcc_constructs.core.support.errors import Problem


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser("model", help="publish full fine-tunes")
    actions = parser.add_subparsers(
        dest="action", metavar="ACTION", required=True, parser_class=ReportingParser
    )
    promote = actions.add_parser("promote", help="publish a full fine-tune with its record")
    promote.add_argument("name", help="the fine-tune's name")
    promote.add_argument("--project", required=True, help="project it belongs to")
    promote.add_argument(
        "--base-model",
        default=None,
        help="Hugging Face id it was fine-tuned from (default: config.json's _name_or_path)",
    )
    promote.add_argument("--base-revision", default=None, help="base model revision, if known")
    add_promotion_options(promote, source_help="s3://bucket/prefix/ or .tar.gz")
    add_bucket_options(promote)
    add_format_option(promote, default="json")
    promote.set_defaults(func=run_promote)


def _source_problems(args: argparse.Namespace) -> list[Problem]:
    """A full fine-tune comes from S3 (a prefix or ``.tar.gz``)."""
    from mlcc_constructs.core.adapters import s3_layout as layout

    source = args.source
    if not source.startswith("s3://"):
        return [
            Problem(
                message="full fine-tunes are promoted from S3",
                where="--from",
                value=source,
                allowed="s3://bucket/prefix/ or s3://bucket/model.tar.gz",
                fix="upload the fine-tuned model (config.json and weights) to S3 first",
            )
        ]
    return checked("--from", lambda: layout.parse_s3_uri(source, pointer=""))[1]


def run_promote(args: argparse.Namespace) -> int:
    from mlcc_constructs.ops.model_promotion import promote_model

    inputs = check(args, source_problems=_source_problems)
    promotion = promote_model(s3_client(args), **promotion_request(args, inputs))
    emit(args, promotion.to_json())
    return 0
