"""The staged model's size, read from S3 (``mlcc plan --read-index``): the safetensors index's
``metadata.total_size``, else the bytes of the ``*.safetensors`` files at the prefix's top (a
model small enough for one shard has no index). The rules over the index are the core's
(:func:`~mlcc_constructs.core.serving.resolve.model_size.index_total_size`)."""

from __future__ import annotations

import json

from mlcc_constructs.core.adapters.s3_layout import S3Location
from mlcc_constructs.core.serving.resolve.model_size import INDEX_FILE, index_total_size
from mlcc_constructs.core.support.errors import fail
from mlcc_constructs.ops.s3 import S3Client, get_bytes, list_objects

WEIGHTS_SUFFIX = ".safetensors"


def staged_model_bytes(s3: S3Client, prefix: S3Location) -> tuple[int, str]:
    """The weights' bytes of the model staged at ``prefix`` and where they were read (the
    index's URI, or the prefix for summed shard sizes)."""
    folder = prefix.key if prefix.key.endswith("/") else prefix.key + "/"
    index = S3Location(bucket=prefix.bucket, key=folder + INDEX_FILE)
    body = get_bytes(s3, index)
    if body is not None:
        try:
            document = json.loads(body)
        except json.JSONDecodeError as error:
            raise fail(f"not valid JSON: {error.msg}", where=index.uri) from error
        return index_total_size(document, where=index.uri), index.uri
    top = S3Location(bucket=prefix.bucket, key=folder)
    sizes = [
        int(item["Size"])
        for item in list_objects(s3, top)
        if "/" not in str(item["Key"])[len(folder) :] and str(item["Key"]).endswith(WEIGHTS_SUFFIX)
    ]
    if not sizes:
        raise fail(
            f"no {INDEX_FILE} and no *{WEIGHTS_SUFFIX} weights at the prefix",
            where=top.uri,
            fix="point the spec's model at the staged model folder, or set model.bytes",
        )
    return sum(sizes), top.uri
