"""How clients reach a deployment and what they must present: :class:`Endpoint` (an Ingress on
EKS Auto Mode's Application Load Balancer), secrets from AWS Secrets Manager
(:class:`SecretsManagerSecret`, the API key's ``api_key_secret``), and the checks of their
values (:func:`endpoint_problems`, :func:`secret_problems`), each naming its field.

Safe defaults: an endpoint is ``internal`` (reachable inside the VPC only); ``internet-facing``
needs both a certificate (HTTPS) and an API key, because vLLM's key only guards its ``/v1``
routes and plain HTTP would carry the key in clear text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

from mlcc_constructs.core.platform.load_balancing import GROUP as GROUP  # the class name's rule
from mlcc_constructs.core.serving.spec.gateway import Gateway, gateway_problems
from mlcc_constructs.core.support.errors import Problem, json_pointer
from mlcc_constructs.core.support.field_meta import meta
from mlcc_constructs.core.support.typecheck import check_fields

EndpointScheme = Literal["internal", "internet-facing", "none"]

MAX_REQUEST_SECONDS = 600
"""The default of ``max_request_seconds``: the load balancer's idle timeout
(:data:`~mlcc_constructs.core.platform.load_balancing.IDLE_TIMEOUT_SECONDS`), the longest a
non-streaming request can take through the ALB, which sends nothing back until it is done."""

# arn:<partition>:acm:<region>:<account>:certificate/<id> (ACM's ARN form)
CERTIFICATE_ARN = re.compile(
    r"^arn:(?P<partition>aws|aws-cn|aws-us-gov):acm:(?P<region>[a-z]{2}(?:-gov|-iso[a-z]*)?"
    r"-[a-z]+-[0-9]):(?P<account>[0-9]{12}):certificate/[0-9a-f-]{36}$"
)
# Secrets Manager: a name (letters, digits, /_+=.@-, at most 512) or the secret's ARN, whose
# name carries the 6-character suffix Secrets Manager appends.
SECRET_NAME = re.compile(r"^[A-Za-z0-9/_+=.@-]{1,512}$")
SECRET_ARN = re.compile(
    r"^arn:(?P<partition>aws|aws-cn|aws-us-gov):secretsmanager:(?P<region>[a-z]{2}"
    r"(?:-gov|-iso[a-z]*)?-[a-z]+-[0-9]):(?P<account>[0-9]{12}):secret:"
    r"(?P<name>[A-Za-z0-9/_+=.@-]{1,512})-[A-Za-z0-9]{6}$"
)
# An Ingress host: a DNS name, optionally one leading wildcard label (Kubernetes Ingress rules).
HOSTNAME = re.compile(
    r"^(\*\.)?([a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?\.)+[a-z]([-a-z0-9]{0,61}[a-z0-9])?$"
)
PARTITIONS = {"cn-": "aws-cn", "us-gov-": "aws-us-gov"}
# Route 53 zone ids as the API prints them after /hostedzone/ (the HostedZone Id shape).
HOSTED_ZONE_ID = re.compile(r"^Z[A-Z0-9]{1,31}$")


@dataclass(frozen=True, kw_only=True)
class Endpoint:
    """How clients reach the deployment's engine and who may call it (eks: an Ingress on Auto
    Mode's built-in Application Load Balancer; the inference operator makes an IEC's)."""

    scheme: EndpointScheme = field(default="internal", metadata=meta(cli="--endpoint-scheme"))
    """``internal`` (reachable inside the VPC), ``internet-facing`` (needs ``certificate_arn``
    and ``api_key_secret``) or ``none`` (no load balancer: in-cluster callers only). Default:
    ``internal``."""
    certificate_arn: str | None = field(
        default=None, metadata=meta(cli="--certificate-arn", minLength=1)
    )
    """An ACM certificate in the deployment's region: HTTPS on 443, and HTTP redirected to it.
    Default: none (HTTP on 80, ``internal`` only)."""
    hostname: str | None = field(default=None, metadata=meta(cli="--hostname", minLength=1))
    """The host the Ingress rule answers (a DNS name you point at the load balancer). Default:
    none (any host)."""
    group: str | None = field(default=None, metadata=meta(cli="--load-balancer-group", minLength=1))
    """Deployments with the same ``scheme`` and ``group`` share one load balancer. Default: none
    (a load balancer of its own)."""
    gateway: Gateway | None = field(default=None, metadata=meta())
    """The HyperPod Inference Gateway in front of the deployment, checking a JWT bearer token on
    every request (an InferenceGatewayConfig); only on targets whose manifest says
    ``inference_gateway``. Default: none."""
    hosted_zone_id: str | None = field(default=None, metadata=meta(minLength=1))
    """A Route 53 hosted zone holding ``hostname``: ``ServedModel`` points the name at the load
    balancer with an alias record once it has its address. Default: none (no record: point your
    DNS name at the load balancer yourself)."""
    api_key_secret: str | None = field(
        default=None, metadata=meta(cli="--api-key-secret", minLength=1)
    )
    """The name or ARN of a Secrets Manager secret holding the API key clients send
    (``Authorization: Bearer <key>``); the engine reads it through its own setting (engine
    manifest ``api_key``), never from a template, ConfigMap or plain env value. Default: none
    (no key: reachable only inside the VPC and the allowed namespaces)."""
    allow_from: tuple[str, ...] = field(
        default=(), metadata=meta(cli="--allow-from", items={"type": "string", "minLength": 1})
    )
    """Namespaces whose pods may call the engine port directly (the NetworkPolicy admits only
    these and the load balancer). Default: none."""
    max_request_seconds: int = field(
        default=MAX_REQUEST_SECONDS,
        metadata=meta(cli="--max-request-seconds", minimum=1, maximum=3600),
    )
    """The longest request the engine serves (a long stream included): a pod that stops drains
    this long before the engine gets SIGTERM, and its termination grace period covers the
    drain. 1..3600. Default: 600, the load balancer's idle timeout."""

    def __post_init__(self) -> None:
        if isinstance(self.allow_from, list):
            object.__setattr__(self, "allow_from", tuple(self.allow_from))
        check_fields(self, pointer="/endpoint")

    @property
    def exposed(self) -> bool:
        """A load balancer is made for it (``scheme`` is not ``none``)."""
        return self.scheme != "none"

    @property
    def https(self) -> bool:
        """Clients connect with TLS (a certificate is given)."""
        return self.certificate_arn is not None


@dataclass(frozen=True, kw_only=True)
class SecretsManagerSecret:
    """An env value read from an AWS Secrets Manager secret (synced into the deployment's own
    Kubernetes Secret by the Secrets Store CSI driver; nobody makes a Secret by hand)."""

    secret: str
    """The secret's name or ARN, in the deployment's account and region."""
    json_key: str | None = None
    """For a JSON secret, the key whose value to use. Default: none (the whole secret string)."""

    def __post_init__(self) -> None:
        check_fields(self)


def partition_of(region: str) -> str:
    """The AWS partition of ``region`` (``aws``, ``aws-cn``, ``aws-us-gov``)."""
    return next((p for prefix, p in PARTITIONS.items() if region.startswith(prefix)), "aws")


def endpoint_problems(
    endpoint: Endpoint, *, api_key: bool, region: str | None, pointer: str = "/endpoint"
) -> list[Problem]:
    """Every problem of ``endpoint``; ``api_key``: the deployment has an ``api_key_secret``;
    ``region``: the deployment's region (``None``: unknown, the certificate's is not compared)."""
    problems: list[Problem] = []
    certificate = endpoint.certificate_arn
    if endpoint.scheme == "internet-facing":
        missing = [
            m for m, ok in (("certificate_arn", certificate), ("api_key", api_key)) if not ok
        ]
        if missing:
            problems.append(
                Problem(
                    message="an internet-facing endpoint needs HTTPS and an API key: without "
                    "them anyone on the internet can call the model, and the key would cross "
                    "the internet in clear text",
                    pointer=json_pointer(*pointer.strip("/").split("/"), "scheme"),
                    value="internet-facing",
                    allowed="internal, or internet-facing with certificate_arn and api_key_secret",
                    fix=" and ".join(
                        "set endpoint.certificate_arn (an ACM certificate)"
                        if m == "certificate_arn"
                        else "set api_key_secret (a Secrets Manager secret)"
                        for m in missing
                    ),
                )
            )
    if certificate is not None:
        problems += _certificate_problems(certificate, region, f"{pointer}/certificate_arn")
    if endpoint.hostname is not None and (
        len(endpoint.hostname) > 253 or not HOSTNAME.match(endpoint.hostname)
    ):
        problems.append(
            Problem(
                message="not a DNS name",
                pointer=f"{pointer}/hostname",
                value=endpoint.hostname,
                allowed="lower-case DNS labels joined by dots, e.g. llm.example.com "
                "(a leading *. is allowed)",
            )
        )
    if endpoint.group is not None and not GROUP.match(endpoint.group):
        problems.append(
            Problem(
                message="not a load balancer group name",
                pointer=f"{pointer}/group",
                value=endpoint.group,
                allowed="1-43 lower-case letters, digits and '-' (it names the IngressClass "
                "mlcc-<scheme>-<group>)",
            )
        )
    if endpoint.gateway is not None:
        problems += gateway_problems(endpoint.gateway, pointer=f"{pointer}/gateway")
    problems += _zone_problems(endpoint, f"{pointer}/hosted_zone_id")
    if not endpoint.exposed and (certificate or endpoint.hostname or endpoint.group):
        problems.append(
            Problem(
                message="scheme none makes no load balancer: certificate_arn, hostname and "
                "group would be ignored",
                pointer=f"{pointer}/scheme",
                value="none",
                fix="set scheme internal or internet-facing, or drop the load balancer fields",
            )
        )
    return problems


def _zone_problems(endpoint: Endpoint, pointer: str) -> list[Problem]:
    """A hosted zone needs the exact name it records (not a wildcard: an alias names one host)
    and a zone id as Route 53 prints it."""
    zone = endpoint.hosted_zone_id
    if zone is None:
        return []
    if not HOSTED_ZONE_ID.match(zone):
        return [
            Problem(
                message="not a Route 53 hosted zone id",
                pointer=pointer,
                value=zone,
                allowed="Z followed by 1-31 upper-case letters and digits",
                fix="copy the Id from `aws route53 list-hosted-zones-by-name` (without "
                "/hostedzone/)",
            )
        ]
    if endpoint.hostname is None or endpoint.hostname.startswith("*."):
        return [
            Problem(
                message="an alias record needs the one hostname it points at the load balancer",
                pointer=pointer,
                value=zone,
                allowed="hosted_zone_id with endpoint.hostname (not a *. wildcard)",
                fix="set endpoint.hostname to a name of the zone, e.g. llm.example.com",
            )
        ]
    return []


def endpoint_warnings(endpoint: Endpoint, *, api_key: bool) -> list[str]:
    """What an endpoint allows but should not: an API key sent over plain HTTP inside the VPC
    (an internet-facing one is refused: :func:`endpoint_problems`)."""
    if api_key and endpoint.exposed and not endpoint.https:
        return [
            f"the API key crosses the {endpoint.scheme} load balancer in clear text (HTTP, no "
            "endpoint.certificate_arn): anyone who can read VPC traffic can read it; give the "
            "endpoint an ACM certificate (endpoint.certificate_arn) for HTTPS"
        ]
    return []


def _certificate_problems(arn: str, region: str | None, pointer: str) -> list[Problem]:
    match = CERTIFICATE_ARN.match(arn)
    if match is None:
        return [
            Problem(
                message="not an ACM certificate ARN",
                pointer=pointer,
                value=arn,
                allowed="arn:<partition>:acm:<region>:<account>:certificate/<id>",
                fix="copy the ARN from the ACM console or `aws acm list-certificates`",
            )
        ]
    if region is None:
        return []
    problems = []
    if match["region"] != region:
        problems.append(
            Problem(
                message="the certificate is in another region than the load balancer (an ALB "
                "takes certificates of its own region only)",
                pointer=pointer,
                value=arn,
                allowed=f"a certificate in {region}",
                fix=f"request or import the certificate in {region}",
            )
        )
    elif match["partition"] != partition_of(region):
        problems.append(
            Problem(
                message=f"the certificate's partition is not {partition_of(region)}'s",
                pointer=pointer,
                value=arn,
                allowed=f"arn:{partition_of(region)}:acm:{region}:...",
            )
        )
    return problems


def secret_problems(
    secret: str, *, region: str | None, account: str | None, pointer: str
) -> list[Problem]:
    """Problems of a Secrets Manager secret given by name or ARN (an ARN's region and account
    must be the deployment's: the pods read it through their own Pod Identity role)."""
    if secret.startswith("arn:"):
        match = SECRET_ARN.match(secret)
        if match is None:
            return [
                Problem(
                    message="not a Secrets Manager secret ARN",
                    pointer=pointer,
                    value=secret,
                    allowed="arn:<partition>:secretsmanager:<region>:<account>:secret:"
                    "<name>-<6 characters>, or the secret's name",
                    fix="copy the ARN from `aws secretsmanager describe-secret`, or give the name",
                )
            ]
        wrong = [
            (what, found, want)
            for what, found, want in (
                ("region", match["region"], region),
                ("account", match["account"], account),
            )
            if want is not None and found != want
        ]
        return [
            Problem(
                message=f"the secret is in another {what} than the deployment",
                pointer=pointer,
                value=secret,
                allowed=f"a secret in {what} {want}",
                fix="replicate the secret into the deployment's account and region",
            )
            for what, found, want in wrong
        ]
    if not SECRET_NAME.match(secret):
        return [
            Problem(
                message="not a Secrets Manager secret name",
                pointer=pointer,
                value=secret,
                allowed="1-512 letters, digits and / _ + = . @ -, or the secret's ARN",
            )
        ]
    return []


def secret_resource(secret: str, *, partition: str, region: str, account: str) -> str:
    """The IAM resource of a Secrets Manager secret given by name or ARN: an ARN as is, a name
    as ``arn:<partition>:secretsmanager:<region>:<account>:secret:<name>-??????`` (the six
    characters Secrets Manager appends to the name in the ARN; the AWS provider's README scopes
    its Pod Identity policy the same way)."""
    if secret.startswith("arn:"):
        return secret
    return f"arn:{partition}:secretsmanager:{region}:{account}:secret:{secret}-??????"
