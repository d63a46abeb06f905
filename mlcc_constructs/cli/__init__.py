"""The ``mlcc`` command. Each command group lives in ``mlcc_constructs/cli/<group>.py`` and
exposes ``register(subparsers)``; handlers import heavy modules (jsii) only when run, so
the pure commands start fast.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence
from typing import NoReturn

from mlcc_constructs.cli import _precompiled

_precompiled.install()  # first: the classes of the modules below take their methods from it

from mlcc_constructs.cli._exit import STDOUT, stdout_error_text  # noqa: E402
from mlcc_constructs.cli._parser import MlccParser, UsageError, failure_document  # noqa: E402
from mlcc_constructs.core.support.errors import MlccError  # noqa: E402

# Order is the order of `mlcc --help`.
COMMAND_MODULES: tuple[str, ...] = (
    "engines",
    "validate",
    "resolve",
    "render",
    "plan",
    "diff_guard",
    "cache",
    "adapter",
    "model",
    "rollout",
    "endpoint",
    "dashboard",
    "preflight",
    "spec",
)


# Command → the module that registers it. Running one command builds only its module's parser
# (start-up time); `mlcc --help` builds them all. A test keeps this table in step.
COMMAND_OWNERS: dict[str, str] = {
    "engines": "engines",
    "validate": "validate",
    "env": "resolve",
    "argv": "resolve",
    "render": "render",
    "plan": "plan",
    "diff-guard": "diff_guard",
    "cache": "cache",
    "adapter": "adapter",
    "model": "model",
    "rollout": "rollout",
    "endpoint": "endpoint",
    "dashboard": "dashboard",
    "preflight": "preflight",
    "spec": "spec",
}


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The ``mlcc`` parser: every command group, or only the one that owns ``command``."""
    parser = MlccParser(
        prog="mlcc",
        description="Engine-aware configuration for serving LLMs on EKS and SageMaker HyperPod.",
    )
    from mlcc_constructs import __version__

    parser.add_argument("--version", action="version", version=f"mlcc {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    owner = COMMAND_OWNERS.get(command or "")
    modules = [owner] if owner in COMMAND_MODULES else COMMAND_MODULES
    for name in modules:
        importlib.import_module(f"mlcc_constructs.cli.{name}").register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``mlcc``; returns the exit code: 0 ok, 1 bad input or a failed check or call, 2 a
    usage error (argparse's, which exits with it, or a handler's :class:`UsageError`). Every
    error is one ``mlcc: error:`` line on stderr; a command printing JSON or YAML also prints
    its failure report on stdout (:func:`~mlcc_constructs.cli._parser.failure_document`)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(argv[0] if argv else None)
    args = parser.parse_args(argv)
    try:
        code: int = args.func(args)
    except BrokenPipeError:  # `mlcc ... | head`
        return 0
    except Exception as error:
        lines = error_lines(error)
        if lines is None:
            raise  # a bug: keep its traceback
        if isinstance(error, OSError) and error.filename == STDOUT:
            # stdout itself failed (a full disk): its rest is dropped, and reported once, here
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115 (the process's own stdout)
        else:
            failure_document(args, error, lines)
        for line in lines:
            print(f"mlcc: error: {line}", file=sys.stderr)
        return 2 if isinstance(error, UsageError) else 1
    return code


def run() -> NoReturn:
    """The ``mlcc`` console script and ``python -m mlcc_constructs.cli``: :func:`main` as the
    whole process, its output flushed and no interpreter teardown
    (:func:`~mlcc_constructs.cli._exit.run_process`)."""
    from mlcc_constructs.cli._exit import run_process

    run_process(main)


def error_lines(error: BaseException) -> list[str] | None:
    """The one-line texts ``mlcc`` prints for a bad-input, file-system or S3 error; ``None``
    for anything else (a bug)."""
    if isinstance(error, MlccError):
        return [str(problem) for problem in error.problems]
    if isinstance(error, OSError):
        return [os_error_text(error)]
    if _is_aws_error(error):
        return [aws_error_text(error)]
    return None


def os_error_text(error: OSError) -> str:
    """``PATH: reason`` for a file-system error (the path the OS names, when it names one)."""
    if error.filename == STDOUT:
        return stdout_error_text(error)
    reason = error.strerror or str(error)
    paths = [str(p) for p in (error.filename, error.filename2) if p is not None]
    return f"{' -> '.join(paths)}: {reason}" if paths else reason


# Exception class name -> the fix for it; the first name in the class's MRO that is listed wins.
_AWS_FIXES: dict[str, str] = {
    "NoCredentialsError": "configure AWS credentials (AWS_PROFILE, AWS_ACCESS_KEY_ID and "
    "AWS_SECRET_ACCESS_KEY, or `aws configure`)",
    "PartialCredentialsError": "configure complete AWS credentials (AWS_PROFILE, or both "
    "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY)",
    "NoRegionError": "pass --region or set AWS_REGION",
    "EndpointConnectionError": "check the network, or --endpoint-url when using an "
    "S3-compatible endpoint",
    "ConnectTimeoutError": "check the network, or --endpoint-url when using an S3-compatible "
    "endpoint",
    "ClientError": "check that the bucket exists and that your credentials may use it "
    "(or --endpoint-url)",
}


def _is_aws_error(error: BaseException) -> bool:
    # By module name: importing botocore here would slow down every command's start-up.
    return type(error).__module__.split(".")[0] in ("botocore", "boto3", "s3transfer")


# A ClientError's code (S3's, or the HTTP status where S3 gives no body, e.g. on HEAD) -> the
# fix for that fault; any other code falls back to _AWS_FIXES["ClientError"].
_CLIENT_ERROR_FIXES: dict[str, str] = {
    "NoSuchBucket": "the bucket does not exist: deploy the buckets stack, or check --account, "
    "--region and --profile (they name the buckets) and --endpoint-url",
    "NoSuchKey": "the object is not there: check the URI, or promote or stage it first",
    "404": "the object is not there: check the URI, or promote or stage it first",
    "AccessDenied": "your credentials may not do this: allow the operation on the bucket in "
    "your IAM policy (and the bucket policy), or use credentials that may",
    "403": "your credentials may not do this: allow the operation on the bucket in your IAM "
    "policy (and the bucket policy), or use credentials that may",
    "InvalidAccessKeyId": "the access key is not valid: configure current credentials",
    "SignatureDoesNotMatch": "the secret key does not match the access key: configure "
    "current credentials",
    "ExpiredToken": "the session has expired: refresh the credentials (e.g. aws sso login)",
    "TokenRefreshRequired": "the session has expired: refresh the credentials (e.g. aws sso login)",
    "RequestTimeTooSkewed": "this machine's clock is off: synchronise it",
    "SlowDown": "S3 is throttling the requests: run the command again in a minute",
    "PermanentRedirect": "the bucket is in another region: pass its --region",
    "AuthorizationHeaderMalformed": "the bucket is in another region: pass its --region",
}


def aws_error_text(error: BaseException) -> str:
    """``S3: message (fix: ...)`` for a botocore/boto3 error: a service error's fix is the one
    for its error code (and it names the bucket and key when S3 says which)."""
    message = str(error) or type(error).__name__
    details = getattr(error, "response", None)
    fault = details.get("Error", {}) if isinstance(details, dict) else {}
    fix = _CLIENT_ERROR_FIXES.get(str(fault.get("Code", "")), "")
    where = [
        f"{label} {fault[field]}"
        for label, field in (("bucket", "BucketName"), ("key", "Key"))
        if fault.get(field)
    ]
    if where:
        message += f" ({', '.join(where)})"
    if not fix:
        names = [cls.__name__ for cls in type(error).__mro__]
        fix = next((_AWS_FIXES[n] for n in names if n in _AWS_FIXES), "")
    if not fix:
        fix = "check AWS credentials, the region and --endpoint-url"
    return f"S3: {message} (fix: {fix})"
