"""``mlcc endpoint check``: call a deployment's OpenAI-compatible endpoint as a client does.

The endpoint is ``--url``, or found with kubectl from ``--name`` and ``--namespace``: the
deployment's Ingress on eks, the load balancer the inference operator made for its
InferenceEndpointConfig on hyperpod-eks (rules: :mod:`mlcc_constructs.core.serving.endpoint`).
The check lists the models (``GET /v1/models`` must name ``--model`` and each ``--adapter``)
and streams one short chat completion, timing its first token. The API key is read from the
variable ``--api-key-env`` names, never from a flag, and never printed.

Every value is checked before the first call; the report is one JSON document on stdout, on
failure too, with one ``mlcc: error:`` line per problem on stderr and exit 1.
"""

from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING, Any

from mlcc_constructs.cli._api_key import add_api_key_options, api_key_problems
from mlcc_constructs.cli._inputs import (
    at_flag,
    checked,
    text_problems,
    timeout_problems,
    url_problems,
)
from mlcc_constructs.cli._parser import (
    Once,
    ReportedError,
    ReportingParser,
    add_format_option,
    emit,
)
from mlcc_constructs.core.support.errors import MlccError, Problem, raise_if_any

if TYPE_CHECKING:
    from mlcc_constructs.core.serving.endpoint.address import EndpointAddress

DEFAULT_TARGET = "eks"
DEFAULT_TIMEOUT = "30"


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser("endpoint", help="check a deployment's HTTP endpoint")
    actions = parser.add_subparsers(
        dest="action", metavar="ACTION", required=True, parser_class=ReportingParser
    )
    check = actions.add_parser(
        "check",
        help="list the models and stream one chat completion, as a client does",
        description="Call the OpenAI-compatible API of a deployment: GET /v1/models must list "
        "the served model name and every --adapter, and one short streaming chat completion "
        "must answer. Prints one JSON report (ok, url, models, status, ttft_ms, total_ms, "
        "errors); exit 1 on any problem. TLS is always verified and redirects are never "
        "followed.",
    )
    check.add_argument(
        "--url",
        default=None,
        help="the endpoint's base URL, e.g. https://llm.example.com (the API is at URL/v1/)",
    )
    check.add_argument(
        "--name",
        action=Once,
        default=None,
        help="the deployment to find with kubectl (the current kube context), instead of --url",
    )
    check.add_argument("--namespace", default=None, help="the deployment's namespace (with --name)")
    check.add_argument(
        "--target",
        default=None,
        help=f"the deployment's target, with --name (default: {DEFAULT_TARGET}): eks reads its "
        "Ingress, hyperpod-eks its InferenceEndpointConfig and the operator's Ingress",
    )
    check.add_argument(
        "--model",
        default=None,
        help="the served model name /v1/models must list and the completion asks for "
        "(default: --name; required with --url)",
    )
    check.add_argument(
        "--adapter",
        action="append",
        default=[],
        metavar="NAME",
        help="a LoRA adapter /v1/models must list; repeatable",
    )
    add_api_key_options(check)
    check.add_argument(
        "--timeout",
        default=DEFAULT_TIMEOUT,
        metavar="SECONDS",
        help=f"deadline of each call, the first token included (default: {DEFAULT_TIMEOUT})",
    )
    check.add_argument(
        "--ca-file",
        default=None,
        metavar="PATH",
        help="trust only this CA certificate (PEM), e.g. the one the HyperPod inference "
        "operator wrote to the TLS bucket (default: the system's CAs)",
    )
    add_format_option(check, default="json")
    check.set_defaults(func=run_check)


def _where_problems(args: argparse.Namespace) -> list[Problem]:
    """``--url``, or ``--name`` with ``--namespace`` (and ``--target``)."""
    from mlcc_constructs.core.platform.targets import load_target
    from mlcc_constructs.core.serving.prepare.names import name_problems, namespace_problems

    fix = "pass --url URL, or --name NAME --namespace NS to find the endpoint with kubectl"
    if args.url is None and args.name is None:
        return [Problem(message="no endpoint to check", where="command line", fix=fix)]
    if args.url is not None and args.name is not None:
        return [Problem(message="--url and --name exclude each other", where="--url", fix=fix)]
    problems: list[Problem] = []
    if args.url is not None:
        problems += url_problems("--url", args.url, path=True)
        if not problems and args.url.rstrip("/").endswith("/v1"):
            base = args.url.rstrip("/").removesuffix("/v1")
            problems.append(
                Problem(
                    message="the base URL is wanted: the check adds /v1/models and "
                    "/v1/chat/completions",
                    where="--url",
                    value=args.url,
                    fix=f"pass --url {base}",
                )
            )
        for flag in ("namespace", "target"):
            if getattr(args, flag) is not None:
                problems.append(
                    Problem(message=f"--{flag} needs --name", where=f"--{flag}", fix=fix)
                )
        if args.model is None:
            problems.append(
                Problem(
                    message="--url needs --model",
                    where="--model",
                    fix="pass --model with the served model name",
                )
            )
        return problems
    problems += at_flag("--name", name_problems(args.name))
    if args.namespace is None:
        problems.append(Problem(message="--name needs --namespace", where="--namespace", fix=fix))
    else:
        problems += at_flag("--namespace", namespace_problems(args.namespace))
    target = args.target or DEFAULT_TARGET
    descriptor, found = checked("--target", lambda: load_target(target))
    problems += found
    if descriptor is not None:
        problems += checked("--target", descriptor.require_kubernetes)[1]
    return problems


def _ca_problems(path: str | None) -> list[Problem]:
    from mlcc_constructs.ops.endpoint import ssl_context

    if path is None:
        return []
    if not os.path.isfile(path):
        return [Problem(message="no such file", where="--ca-file", value=path)]
    return checked("--ca-file", lambda: ssl_context(path))[1]


def _scheme_problems(url: str, ca_file: str | None) -> list[Problem]:
    if ca_file is not None and not url.startswith("https://"):
        return [
            Problem(
                message=f"--ca-file is for an https endpoint; {url} is plain HTTP",
                where="--ca-file",
                fix="drop --ca-file, or check an https URL",
            )
        ]
    return []


def run_check(args: argparse.Namespace) -> int:
    from mlcc_constructs.core.serving.endpoint.answers import Outcome, report
    from mlcc_constructs.ops.endpoint import EndpointCheck, resolve

    problems = _where_problems(args)
    problems += [p for a in args.adapter for p in text_problems("--adapter", a, what="adapter")]
    problems += text_problems("--model", args.model, what="model name")
    key, found = api_key_problems(args)
    problems += found
    timeout, found = timeout_problems("--timeout", args.timeout)
    problems += found
    problems += _ca_problems(args.ca_file)
    if args.url is not None:
        problems += _scheme_problems(args.url, args.ca_file)
    raise_if_any(problems)

    model = args.model or args.name
    address: EndpointAddress | None = None
    url = args.url
    document: dict[str, Any] = {}
    try:
        if url is None:
            address = resolve(
                target=args.target or DEFAULT_TARGET, name=args.name, namespace=args.namespace
            )
            url = address.url
            raise_if_any(_scheme_problems(url, args.ca_file))
    except MlccError as error:
        document = report(
            url=url,
            address=address,
            model=model,
            adapters=args.adapter,
            outcome=Outcome(),
            problems=error.problems,
        )
        raise ReportedError(list(error.problems), document) from None
    check = EndpointCheck(
        url=url.rstrip("/"),
        timeout=timeout,
        api_key=key,
        api_key_env=args.api_key_env,
        ca_file=args.ca_file,
        address=address,
    )
    outcome = check.run(model, args.adapter)
    document = report(
        url=check.url,
        address=address,
        model=model,
        adapters=args.adapter,
        outcome=outcome,
        problems=check.problems,
    )
    if check.problems:
        raise ReportedError(check.problems, document)
    emit(args, document)
    return 0
