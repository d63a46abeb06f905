"""The environment a deployment is rendered for (account, region, profile)."""

from __future__ import annotations

from dataclasses import dataclass

from mlcc_constructs.core.support.typecheck import check_fields


@dataclass(frozen=True, kw_only=True)
class RenderContext:
    """The environment a render targets. Every field defaults to ``None``.

    ``account``/``region``/``profile`` name the TLS bucket of an IEC (``stacks/buckets.json``
    ``tls``); ``region`` is also the model bucket's region when the spec gives none. Missing
    account and region are inferred from a model bucket named by ``stacks/buckets.json``.

    Fields:

    ``account``: AWS account id. Default: inferred from the model bucket, else none.
    ``region``: AWS region. Default: inferred from the model bucket, else none.
    ``profile``: Deployment profile (``dev``). Default: inferred from the model bucket, else none.
    ``tls_bucket``: The name of the bucket an IEC writes its TLS certificate to, for a team whose
        operator writes to its own bucket. Default: the ``tls`` bucket of
        ``stacks/buckets.json`` for the account, region and profile.
    """

    account: str | None = None
    region: str | None = None
    profile: str | None = None
    tls_bucket: str | None = None

    def __post_init__(self) -> None:
        check_fields(self)
        if self.tls_bucket is not None:
            from mlcc_constructs.core.adapters.path_names import check_bucket

            check_bucket(self.tls_bucket, pointer="/tls_bucket")
