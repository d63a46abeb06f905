"""The HyperPod Inference Gateway in front of a deployment, with JWT bearer-token auth
(:class:`Gateway`, ``endpoint.gateway``), and the checks of its values (:func:`gateway_problems`),
each naming its field.

Facts (AWS, "Inference Gateway for Amazon SageMaker HyperPod Inference", its CRD reference:
https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-model-deployment-inference-gateway.md
checked 2026-12-01): a gateway has no request authentication unless ``spec.auth.jwt`` is set, so
this library makes no gateway without it. ``auth.jwt.provider`` takes an ``issuer`` (an OIDC
issuer URL, ``https://...``, matched against the token's ``iss``), ``remoteJWKS.uri`` (the HTTPS
JWKS endpoint with the signing keys), ``audiences`` (accepted ``aud`` values, up to 8) and
``requiredClaims`` (up to 16 entries of ``name``, ``valueType`` ``String`` or ``StringArray`` and
1-128 ``values`` of 1-1024 characters); at least one of ``audiences`` and ``requiredClaims``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

from mlcc_constructs.core.support.errors import Problem
from mlcc_constructs.core.support.field_meta import meta
from mlcc_constructs.core.support.typecheck import check_fields

ClaimValueType = Literal["String", "StringArray"]

MAX_AUDIENCES = 8
MAX_CLAIMS = 16
MAX_CLAIM_VALUES = 128
MAX_CLAIM_VALUE_CHARS = 1024
# A JWT claim name: what an identity provider puts in a token (RFC 7519 names are strings; the
# reference gives no pattern, so printable text without spaces, at most 253).
CLAIM_NAME = re.compile(r"^[!-~]{1,253}$")
# https://<host>[:port][/path][?query]: no user information, no fragment, no spaces.
HTTPS_URL = re.compile(
    r"^https://(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)*[A-Za-z0-9]"
    r"(?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?::[0-9]{1,5})?(?:/[^\s#]*)?(?:\?[^\s#]*)?$"
)


@dataclass(frozen=True, kw_only=True)
class ClaimRule:
    """A claim every token must carry with one of ``values`` (``requiredClaims``: the gateway
    then denies by default and admits only matching tokens)."""

    name: str
    """The claim, e.g. ``scope`` or ``groups``."""
    values: tuple[str, ...]
    """Accepted values (1-128, each 1-1024 characters)."""
    value_type: ClaimValueType = "String"
    """``String`` (the claim is one string) or ``StringArray`` (a list of them). Default:
    ``String``."""

    def __post_init__(self) -> None:
        if isinstance(self.values, list):
            object.__setattr__(self, "values", tuple(self.values))
        check_fields(self)


@dataclass(frozen=True, kw_only=True)
class JwtAuth:
    """How the gateway checks the bearer token of every request."""

    issuer: str = field(metadata=meta(minLength=1))
    """The OIDC issuer URL (``https://``), exactly the tokens' ``iss``."""
    jwks_uri: str = field(metadata=meta(minLength=1))
    """The HTTPS URL of the issuer's JSON Web Key Set (its signing keys)."""
    audiences: tuple[str, ...] = ()
    """Accepted ``aud`` values (at most 8). Default: none (then ``required_claims`` must be
    given)."""
    required_claims: tuple[ClaimRule, ...] = ()
    """Claims every token must carry (at most 16). Default: none (then ``audiences`` must be
    given)."""

    def __post_init__(self) -> None:
        for name in ("audiences", "required_claims"):
            if isinstance(getattr(self, name), list):
                object.__setattr__(self, name, tuple(getattr(self, name)))
        check_fields(self)


@dataclass(frozen=True, kw_only=True)
class Gateway:
    """The HyperPod Inference Gateway in front of the deployment (an ``InferenceGatewayConfig``
    of one scheduler for its pods), on targets whose manifest says ``inference_gateway``."""

    jwt: JwtAuth
    """The bearer-token check (:class:`JwtAuth`); required, because a gateway without it accepts
    any request that reaches it. TLS: the gateway terminates HTTPS with
    ``endpoint.certificate_arn`` when given, else with a certificate it issues itself
    (cert-manager) and imports into ACM."""

    def __post_init__(self) -> None:
        check_fields(self)


def gateway_problems(gateway: Gateway, *, pointer: str = "/endpoint/gateway") -> list[Problem]:
    """Every problem of ``gateway``'s values (the documented limits of ``auth.jwt``)."""
    jwt, at = gateway.jwt, f"{pointer}/jwt"
    problems = [
        *_https_url_problems(jwt.issuer, f"{at}/issuer", "the OIDC issuer URL"),
        *_https_url_problems(jwt.jwks_uri, f"{at}/jwks_uri", "the issuer's JWKS URL"),
    ]
    if not jwt.audiences and not jwt.required_claims:
        problems.append(
            Problem(
                message="a token check needs accepted audiences or required claims: with "
                "neither, any token the issuer signs for anyone would pass",
                pointer=at,
                value={"audiences": [], "required_claims": []},
                allowed="audiences (up to 8) and/or required_claims (up to 16)",
                fix="set endpoint.gateway.jwt.audiences to the client id or API identifier "
                "your identity provider puts in aud",
            )
        )
    if len(jwt.audiences) > MAX_AUDIENCES:
        problems.append(
            Problem(
                message="too many audiences for the gateway",
                pointer=f"{at}/audiences",
                value=len(jwt.audiences),
                allowed=f"at most {MAX_AUDIENCES}",
                fix="accept one shared audience, or check a claim with required_claims",
            )
        )
    for index, audience in enumerate(jwt.audiences):
        if not audience or audience != audience.strip():
            problems.append(
                Problem(
                    message="an audience is a non-empty string without surrounding spaces",
                    pointer=f"{at}/audiences/{index}",
                    value=audience,
                )
            )
    if len(jwt.required_claims) > MAX_CLAIMS:
        problems.append(
            Problem(
                message="too many required claims for the gateway",
                pointer=f"{at}/required_claims",
                value=len(jwt.required_claims),
                allowed=f"at most {MAX_CLAIMS}",
            )
        )
    seen: set[str] = set()
    for index, claim in enumerate(jwt.required_claims):
        problems += _claim_problems(claim, f"{at}/required_claims/{index}", seen)
    return problems


def _https_url_problems(url: str, pointer: str, what: str) -> list[Problem]:
    if HTTPS_URL.match(url):
        return []
    return [
        Problem(
            message=f"not an https URL ({what}: the gateway fetches keys and checks tokens "
            "over TLS only)",
            pointer=pointer,
            value=url,
            allowed="https://<host>[/<path>], no user information or fragment",
            fix="e.g. https://cognito-idp.us-east-1.amazonaws.com/us-east-1_EXAMPLE"
            if what.startswith("the OIDC")
            else "the jwks_uri of the issuer's /.well-known/openid-configuration",
        )
    ]


def _claim_problems(claim: ClaimRule, pointer: str, seen: set[str]) -> list[Problem]:
    problems = []
    if not CLAIM_NAME.match(claim.name):
        problems.append(
            Problem(
                message="not a claim name",
                pointer=f"{pointer}/name",
                value=claim.name,
                allowed="1-253 printable characters without spaces, e.g. scope",
            )
        )
    elif claim.name in seen:
        problems.append(
            Problem(
                message="a claim is listed twice: its values would be checked twice",
                pointer=f"{pointer}/name",
                value=claim.name,
                fix="merge the two entries' values into one",
            )
        )
    seen.add(claim.name)
    if not 1 <= len(claim.values) <= MAX_CLAIM_VALUES:
        problems.append(
            Problem(
                message="a required claim needs accepted values",
                pointer=f"{pointer}/values",
                value=len(claim.values),
                allowed=f"1..{MAX_CLAIM_VALUES} values",
            )
        )
    for index, value in enumerate(claim.values):
        if not 1 <= len(value) <= MAX_CLAIM_VALUE_CHARS:
            problems.append(
                Problem(
                    message="a claim value is 1-1024 characters",
                    pointer=f"{pointer}/values/{index}",
                    value=value if len(value) <= 40 else f"{value[:37]}...",
                    allowed=f"1..{MAX_CLAIM_VALUE_CHARS} characters",
                )
            )
    return problems
