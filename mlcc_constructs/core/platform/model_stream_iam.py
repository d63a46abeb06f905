"""What a deployment's pods may do in S3 when the engine streams its ``s3://`` model
(``model_load: stream``): read exactly that model prefix, nothing else.

* ``ReadModelObjects``: ``s3:GetObject`` on ``arn:<partition>:s3:::<bucket>/<prefix>*``: the
  objects under the model prefix (its weights, ``config.json`` and tokenizer files).
* ``ListModelPrefix``: ``s3:ListBucket`` on the bucket, only for listings under the prefix
  (condition ``StringLike`` ``s3:prefix`` = ``<prefix>*``): the streamer lists the prefix's
  safetensors, and vLLM copies the config and tokenizer files it lists.

No ``kms:Decrypt``: every bucket of ``stacks/buckets.json`` is SSE-S3
(:class:`~mlcc_constructs.aws.buckets.ModelBuckets`), which needs no key grant. The actions
(https://docs.aws.amazon.com/AmazonS3/latest/userguide/using-with-s3-policy-actions.html:
GetObject is the object-level action of a GET, ListBucket the bucket-level one of
ListObjectsV2, whose Prefix parameter the ``s3:prefix`` condition key tests).
"""

from __future__ import annotations

from types import MappingProxyType

from mlcc_constructs.core.platform.iam_statement import Statement

READ_ACTIONS = ("s3:GetObject",)
LIST_ACTIONS = ("s3:ListBucket",)


def model_read_statements(
    *, bucket_name: str, prefix: str, partition: str
) -> tuple[Statement, ...]:
    """The statements of the module doc for the model at ``s3://<bucket_name>/<prefix>``
    (``prefix`` ends with ``/``, so a sibling prefix never matches: ``models/a/`` not
    ``models/ab/``)."""
    if not prefix.endswith("/") or prefix.startswith("/"):
        raise ValueError(f"a model prefix is a folder (a/b/): {prefix!r}")
    bucket = f"arn:{partition}:s3:::{bucket_name}"
    return (
        Statement(
            sid="ReadModelObjects",
            actions=READ_ACTIONS,
            resources=(f"{bucket}/{prefix}*",),
            why=f"the objects under the streamed model's prefix s3://{bucket_name}/{prefix} "
            "only (its weights, config and tokenizer files)",
        ),
        Statement(
            sid="ListModelPrefix",
            actions=LIST_ACTIONS,
            resources=(bucket,),
            conditions=MappingProxyType({"StringLike": {"s3:prefix": [f"{prefix}*"]}}),
        ),
    )
