"""A deployment's model bucket from the environment it is rendered for.

``model: s3://${model_bucket}/models/<org>/<name>/`` names a prefix of the environment's own
model bucket: ``${model_bucket}`` becomes the ``core`` bucket of ``stacks/buckets.json`` for the
render context's account, region and profile (``mlcc-models-<profile>-<account>-<region>``),
so a spec or a ``cdk.json`` reference deployment never hard-codes an account. An explicit
``s3://`` URI whose bucket follows one of the descriptor's patterns but names another
account, region or profile than the context's is refused, with the bucket the context has as
the fix: mounting another environment's bucket is never what a newcomer who changed
``account`` meant. A bucket outside the patterns is the team's own and passes as written.
"""

from __future__ import annotations

import dataclasses
import re

from mlcc_constructs.core.platform.buckets import bucket_environment, bucket_name
from mlcc_constructs.core.serving.spec.context import RenderContext
from mlcc_constructs.core.serving.spec.deployment import DeploymentSpec
from mlcc_constructs.core.support.errors import MlccError, Problem

MODEL_BUCKET = "${model_bucket}"
"""The placeholder of the environment's model bucket in ``model`` (``s3://${model_bucket}/...``)."""
MODEL_BUCKET_KEY = "core"
"""The ``stacks/buckets.json`` bucket that holds the models."""
_ENVIRONMENT = ("account", "region", "profile")
_BUCKET = re.compile(r"^s3://(?P<bucket>[^/]*)/(?P<rest>.*)$", re.DOTALL)


def _environment(spec: DeploymentSpec, context: RenderContext) -> dict[str, str | None]:
    """The account, region and profile the deployment is rendered for (the context's; the
    region falls back to the spec's model region)."""
    return {
        "account": context.account,
        "region": context.region or spec.region,
        "profile": context.profile,
    }


def place_model(
    spec: DeploymentSpec, context: RenderContext
) -> tuple[DeploymentSpec, list[Problem]]:
    """``spec`` with ``${model_bucket}`` replaced by the context's model bucket, and the
    problems of its model bucket (module doc); a spec whose placeholder cannot be replaced is
    refused at once (everything after it would only repeat that the model is unknown)."""
    found = _BUCKET.match(spec.model.uri)
    if found is None:
        return spec, []
    bucket, rest = found.group("bucket"), found.group("rest")
    environment = _environment(spec, context)
    if bucket == MODEL_BUCKET:
        return dataclasses.replace(
            spec, model=dataclasses.replace(spec.model, uri=f"s3://{_placed(environment)}/{rest}")
        ), []
    if "${" in bucket:
        raise MlccError(
            Problem(
                message="not a placeholder of the model bucket",
                pointer="/model/uri",
                value=spec.model.uri,
                allowed=f"s3://{MODEL_BUCKET}/<prefix>/ or s3://<bucket>/<prefix>/",
                fix=f"write s3://{MODEL_BUCKET}/{rest}",
            )
        )
    return spec, _mismatch(spec.model.uri, bucket, rest, environment)


def _placed(environment: dict[str, str | None]) -> str:
    missing = [key for key in _ENVIRONMENT if not environment[key]]
    if missing:
        raise MlccError(
            Problem(
                message=f"{MODEL_BUCKET} (the model bucket, stacks/buckets.json "
                f"{MODEL_BUCKET_KEY!r}) needs " + ", ".join(missing),
                pointer="/model/uri",
                value=MODEL_BUCKET,
                fix="pass " + " ".join(f"--{key}" for key in missing) + " (or set them in the "
                "spec, cdk.json context or RenderContext)",
            )
        )
    values = {key: str(environment[key]) for key in _ENVIRONMENT}
    return bucket_name(MODEL_BUCKET_KEY, **values)


def _mismatch(
    model: str, bucket: str, rest: str, environment: dict[str, str | None]
) -> list[Problem]:
    named = bucket_environment(bucket)
    if named is None:
        return []  # not one of ours: the team's own bucket
    key, encoded = named
    differ = [k for k in _ENVIRONMENT if environment[k] and encoded.get(k) != environment[k]]
    if not differ:
        return []
    values = {k: str(environment[k] or encoded[k]) for k in _ENVIRONMENT}
    expected = bucket_name(key, **values)
    return [
        Problem(
            message=f"the model bucket is the {key!r} bucket of another environment ("
            + ", ".join(
                f"{k} {encoded[k]} where the deployment's is {environment[k]}" for k in differ
            )
            + ")",
            pointer="/model/uri",
            value=model,
            allowed=f"s3://{expected}/... or a bucket of your own",
            fix=f"write s3://{expected}/{rest}"
            + (f" or s3://{MODEL_BUCKET}/{rest}" if key == MODEL_BUCKET_KEY else ""),
        )
    ]
