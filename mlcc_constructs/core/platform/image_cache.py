"""Images through the ECR pull through cache: which upstream registries the cluster caches, the
secrets the credentialed ones need, and how a rendered image names the cache.

The table is ``data/pull_through_cache.json`` (its ``sources`` cite ECR's documentation): per
upstream (ECR's name for it, ``docker-hub``) the hosts an image reference may name, the upstream
URL, the ECR repository prefix, whether credentials are required and the namespace an image
without one has upstream (Docker Hub's ``library``). The cluster creates one rule per upstream
that a pinned engine image comes from (:func:`cluster_upstreams`); the renderer rewrites exactly
the images of those upstreams (:func:`cached_image`), so the two sides agree from one input.

An image becomes ``<registry>/<ecr prefix>/<upstream repository>:<tag>`` and, where
``versions.json`` records the digest of that image, ``...@sha256:<digest>``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache

from mlcc_constructs.core._resources import data_path
from mlcc_constructs.core.platform.context_values import decode_context
from mlcc_constructs.core.platform.iam_statement import Arns, Statement
from mlcc_constructs.core.platform.versions import pinned
from mlcc_constructs.core.support.errors import Problem, fail, json_pointer
from mlcc_constructs.core.support.image_reference import parse_image

CACHE_FILE = "pull_through_cache.json"
SECRETS_KEY = "ecr_pull_through_secrets"
"""CDK context key: ``{upstream: secret name or ARN}`` for the upstreams needing credentials."""
NO_CACHE_NOTE = (
    f"no {SECRETS_KEY}: the engine images are pulled from their registries through the NAT "
    "gateway (Docker Hub's anonymous pull limits apply); to cache them in ECR, create the Docker "
    f"Hub secret and set {SECRETS_KEY} (docs/guides/cold-start.md, Images through the ECR "
    "pull-through cache)"
)
"""What an app without the pull through cache's secrets is told (it makes no cache)."""
SECRET_PREFIX = "ecr-pullthroughcache/"
_SECRET_NAME = re.compile(r"^ecr-pullthroughcache/[a-zA-Z0-9/_+=.@-]+$")
_SECRET_ARN = re.compile(
    r"^arn:aws(?:-[a-z]+)*:secretsmanager:(?P<region>[a-z0-9-]+):(?P<account>[0-9]{12}):"
    r"secret:ecr-pullthroughcache/[a-zA-Z0-9/_+=.@-]+$"
)
_REGISTRY = re.compile(
    r"^[0-9]{12}\.dkr\.ecr\.[a-z]{2}(?:-[a-z]+)+-[0-9]\.amazonaws\.com(?:\.cn)?$"
)
_DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")


@dataclass(frozen=True, kw_only=True)
class Upstream:
    """One upstream registry of the pull through cache (a row of the table)."""

    name: str
    """ECR's upstream registry name (``docker-hub``): the rule's ``UpstreamRegistry``."""
    hosts: tuple[str, ...]
    """Registry hosts an image reference may name for it (``docker.io``, ...)."""
    upstream_registry_url: str
    """The rule's ``UpstreamRegistryUrl`` (``registry-1.docker.io``)."""
    ecr_repository_prefix: str
    """The rule's ``EcrRepositoryPrefix``: cached images live under ``<prefix>/``."""
    credentials_required: bool
    """The rule needs a Secrets Manager secret (``username``, ``accessToken``)."""
    implicit_namespace: str | None = None
    """The namespace of a one-component repository upstream (``library``), or none."""


@cache
def upstreams() -> tuple[Upstream, ...]:
    """The table's upstreams, in file order."""
    document = json.loads(data_path(CACHE_FILE).read_text(encoding="utf-8"))
    return tuple(
        Upstream(
            name=name,
            hosts=tuple(row["hosts"]),
            upstream_registry_url=row["upstream_registry_url"],
            ecr_repository_prefix=row["ecr_repository_prefix"],
            credentials_required=bool(row["credentials_required"]),
            implicit_namespace=row.get("implicit_namespace"),
        )
        for name, row in document["upstreams"].items()
    )


@cache
def not_cached() -> Mapping[str, str]:
    """Registry host → why the pull through cache cannot cover it (``nvcr.io``)."""
    document = json.loads(data_path(CACHE_FILE).read_text(encoding="utf-8"))
    return dict(document["not_cached"])


def upstream_of(image: str) -> Upstream | None:
    """The table's upstream serving ``image``, or ``None``."""
    host = parse_image(image).host
    return next((u for u in upstreams() if host in u.hosts), None)


def cluster_upstreams() -> tuple[Upstream, ...]:
    """The upstreams the cluster has a rule for: those a pinned engine image comes from."""
    used = {u.name for image in pinned().engine_images.values() if (u := upstream_of(image))}
    return tuple(u for u in upstreams() if u.name in used)


def ecr_registry(account: str, region: str) -> str:
    """The private registry host of ``account`` in ``region``."""
    suffix = ".amazonaws.com.cn" if region.startswith("cn-") else ".amazonaws.com"
    return f"{account}.dkr.ecr.{region}{suffix}"


def check_registry(registry: str, *, where: str, pointer: str) -> None:
    """Refuse a registry that is not an ECR private registry host."""
    if not _REGISTRY.match(registry):
        raise fail(
            "not an ECR private registry",
            where=where,
            pointer=pointer,
            value=registry,
            allowed="<account>.dkr.ecr.<region>.amazonaws.com",
            fix="name the registry of the cluster's account and region, e.g. "
            "123456789012.dkr.ecr.us-east-1.amazonaws.com",
        )


def cached_image(
    image: str,
    *,
    registry: str | None,
    digests: Mapping[str, str] | None = None,
) -> str:
    """``image`` as the pods pull it: through ``registry``'s pull through cache when its
    upstream has a cluster rule (:func:`cluster_upstreams`) and a registry is given, else as
    given; by digest where ``digests`` (default: ``versions.json``'s) records one for it and
    the reference names none."""
    digests = pinned().engine_image_digests if digests is None else digests
    reference = parse_image(image)
    digest = reference.digest or digests.get(image)
    if digest is not None and not _DIGEST.match(digest):
        raise fail(
            "not a sha256 digest",
            where="mlcc_constructs/data/versions.json",
            pointer=json_pointer("engine_image_digests", image),
            value=digest,
            allowed="sha256: and 64 lower-case hex digits",
            fix="record the manifest digest the registry reports for the image",
        )
    upstream = upstream_of(image)
    cached = {u.name for u in cluster_upstreams()}
    if registry is None or upstream is None or upstream.name not in cached:
        base = image.partition("@")[0]
    else:
        repository = reference.repository
        if upstream.implicit_namespace and "/" not in repository:
            repository = f"{upstream.implicit_namespace}/{repository}"
        base = f"{registry}/{upstream.ecr_repository_prefix}/{repository}"
        if reference.tag:
            base += f":{reference.tag}"
    return f"{base}@{digest}" if digest else base


def direct_pull_warning(image: str, *, registry: str | None) -> str | None:
    """Why ``image`` is pulled from its upstream although a cache ``registry`` is given (its
    registry is one the cache cannot cover), or ``None``."""
    host = parse_image(image).host
    if registry is None or host not in not_cached():
        return None
    return (
        f"image {image} is pulled from {host} directly, not through the ECR pull through cache: "
        f"{not_cached()[host]} (mlcc_constructs/data/{CACHE_FILE}); it goes through the NAT "
        "gateway on every node start"
    )


def parse_pull_through_secrets(
    value: object, *, account: str | None, region: str | None, where: str
) -> tuple[dict[str, str], list[Problem]]:
    """``{upstream: secret}`` for every cluster upstream needing credentials, from ``value`` (the
    ``ecr_pull_through_secrets`` context value: a mapping, its JSON text, or
    ``name=secret,...`` text as ``-c`` gives it), and the problems: a missing secret, a
    name or ARN ECR would refuse, a secret of another account or region (when ``account``
    and ``region`` are known), an upstream the cluster does not cache."""
    given: dict[str, object] = {}
    problems: list[Problem] = []
    value = decode_context(value, SECRETS_KEY)  # -c KEY='{"docker-hub": "..."}' is JSON text
    if isinstance(value, str):
        for part in filter(None, (p.strip() for p in value.split(","))):
            key, _, secret = part.partition("=")
            given[key.strip()] = secret.strip()
    elif isinstance(value, Mapping):
        given = {str(k): v for k, v in value.items()}
    elif value is not None:
        problems.append(
            Problem(
                message=f"{SECRETS_KEY} maps upstream registries to Secrets Manager secrets",
                where=where,
                pointer=f"/{SECRETS_KEY}",
                value=value,
                allowed='{"docker-hub": "ecr-pullthroughcache/docker-hub"}',
                fix=f"set {SECRETS_KEY} in cdk.json, or pass "
                f"-c {SECRETS_KEY}=docker-hub=ecr-pullthroughcache/docker-hub",
            )
        )
    names = {u.name for u in cluster_upstreams()}
    for key in sorted(set(given) - names):
        problems.append(
            Problem(
                message="the cluster has no pull through cache rule for this upstream",
                where=where,
                pointer=f"/{SECRETS_KEY}/{key}",
                value=key,
                allowed=", ".join(sorted(names)) or "none",
                fix="remove the entry",
            )
        )
    chosen: dict[str, str] = {}
    for upstream in cluster_upstreams():
        if not upstream.credentials_required:
            continue
        pointer = f"/{SECRETS_KEY}/{upstream.name}"
        found = given.get(upstream.name)
        problem = _secret_problem(found, upstream, account=account, region=region)
        if problem is None:
            chosen[upstream.name] = str(found)
        else:
            message, fix = problem
            problems.append(
                Problem(
                    message=message,
                    where=where,
                    pointer=pointer,
                    value=found,
                    allowed=f"a secret name beginning with {SECRET_PREFIX} (or its ARN) in "
                    f"the cluster's account and region ({account or '<account>'}, "
                    f"{region or '<region>'})",
                    fix=fix,
                )
            )
    return chosen, problems


def _secret_problem(
    secret: object, upstream: Upstream, *, account: str | None, region: str | None
) -> tuple[str, str] | None:
    create = (
        f"create the secret (keys username and accessToken: a {upstream.name} user and access "
        f"token) with aws secretsmanager create-secret --name {SECRET_PREFIX}{upstream.name} "
        f"--region {region or '<region>'}, then set {SECRETS_KEY} "
        f'{{"{upstream.name}": "{SECRET_PREFIX}{upstream.name}"}} in cdk.json'
    )
    if secret is None or secret == "":
        return (
            f"the pull through cache rule for {upstream.name} "
            f"({upstream.upstream_registry_url}) needs credentials and names no secret",
            create,
        )
    text = str(secret)
    arn = _SECRET_ARN.match(text)
    if arn is None and not _SECRET_NAME.match(text):
        return (
            f"ECR takes only secrets whose name begins with {SECRET_PREFIX}",
            f"name a secret {SECRET_PREFIX}<name>; {create}",
        )
    known = account is not None and region is not None
    if arn is not None and known and (arn["account"], arn["region"]) != (account, region):
        return (
            "the secret must be in the pull through cache rule's account and region",
            f"create the secret in account {account}, region {region}",
        )
    return None


PULL_THROUGH_ACTIONS = ("ecr:BatchImportUpstreamImage", "ecr:CreateRepository")
"""What a puller needs to pull through a rule: import the image from upstream on its first pull,
and create the cached repository while it does not exist yet (identity-based,
https://docs.aws.amazon.com/AmazonECR/latest/userguide/pull-through-cache-iam.html)."""


def pull_through_statement(arns: Arns) -> Statement | None:
    """The statement that lets nodes pull through the cluster's rules (:func:`cluster_upstreams`):
    :data:`PULL_THROUGH_ACTIONS` on the repositories under each rule's prefix in the app's own
    account and region; ``None`` without a rule. Every node that runs an engine image needs it:
    the Auto Mode node role and the HyperPod instance groups' role alike (an image only HyperPod
    runs is first pulled by a HyperPod node)."""
    resources = tuple(
        arns.of("ecr", f"repository/{upstream.ecr_repository_prefix}/*")
        for upstream in cluster_upstreams()
    )
    if not resources:
        return None
    return Statement(
        sid="ImagePullThroughCache",
        actions=PULL_THROUGH_ACTIONS,
        resources=resources,
        why="the repositories the pull-through cache creates under its rule's prefix on an "
        "image's first pull are named by the upstream image",
    )
