"""The base URL of a live deployment's OpenAI-compatible API, from the objects kubectl reads.

Where a target publishes its endpoint follows from its workload kind (:func:`endpoint_source`):

* ``ingress`` (eks, workload ``Deployment``): the Ingress named like the deployment. The host is
  the Ingress's first rule ``host`` when it sets one (the name its certificate is for), else the
  load balancer's ``status.loadBalancer.ingress[0].hostname`` (or ``ip``); the scheme is
  ``https`` when the Ingress has ``spec.tls``, the ALB ``certificate-arn`` annotation or an
  ``HTTPS`` entry in the ``listen-ports`` annotation, ``http`` otherwise; a listen port other
  than 443/80 is kept. The path is ``/``: the API is at ``<url>/v1/...``.
* ``operator`` (hyperpod-eks, workload ``InferenceEndpointConfig``): the IEC must be ready
  (its kind's readiness reader). The v1 CRD's ``status`` names no URL: ``endpoints.sagemaker``
  is a SageMaker endpoint (SigV4-signed ``InvokeEndpoint`` only, not an HTTP API a plain
  client can call), ``dnsStatus`` a Route 53 record (only with a custom certificate and a
  hosted zone). The load balancer in front of the pods is an ALB the operator makes through an
  Ingress in the IEC's namespace (its migration script lists them as the Ingresses named
  ``alb-*``, reading their hostnames and ``certificate-arn`` annotations). So the URL is the
  operator's Route 53 record when ``dnsStatus.dnsHealth`` is ``Active``, else the ALB of that
  Ingress: the one whose ``ownerReferences`` name the IEC, or the one named ``alb-<name>``.
  The operator's TLS certificate (self-signed unless ``tlsConfig.customCertificateConfig`` is
  set) is in the TLS bucket, at ``status.tlsCertificate``'s bucket and first key: the report
  names that ``s3://`` URI for ``--ca-file``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from mlcc_constructs.core.platform.targets import TargetDescriptor, target_names
from mlcc_constructs.core.serving.kinds.registry import Kind, readiness
from mlcc_constructs.core.support.errors import fail

EndpointSource = Literal["ingress", "operator"]

CERTIFICATE_ANNOTATION = "alb.ingress.kubernetes.io/certificate-arn"
LISTEN_PORTS_ANNOTATION = "alb.ingress.kubernetes.io/listen-ports"
OPERATOR_INGRESS_PREFIX = "alb-"
DNS_ACTIVE = "Active"

# A target's workload kind -> where its endpoint is published (see the module docstring).
_SOURCES: dict[str, EndpointSource] = {
    "Deployment": "ingress",
    "InferenceEndpointConfig": "operator",
}


@dataclass(frozen=True, kw_only=True)
class EndpointAddress:
    """Where the check calls, and what it knows about it."""

    url: str
    """``scheme://host[:port][/path]``, no trailing slash: the API is at ``<url>/v1/...``."""
    source: str
    """``--url``, ``Ingress <ns>/<name>``, or the IEC and the Ingress it was found through."""
    ca_certificate: str | None = None
    """The ``s3://`` URI of the certificate the operator wrote (pass it as ``--ca-file``)."""
    certificate_names: tuple[str, ...] = ()
    """The domain names the operator's certificate is for."""
    unverified: tuple[str, ...] = ()
    """What the check does not call (the SageMaker endpoint)."""

    def to_json(self) -> dict[str, Any]:
        """The report's ``endpoint`` entry."""
        document: dict[str, Any] = {"source": self.source}
        if self.ca_certificate is not None:
            document["ca_certificate"] = self.ca_certificate
        if self.certificate_names:
            document["certificate_names"] = list(self.certificate_names)
        return document


def endpoint_source(target: TargetDescriptor) -> EndpointSource:
    """Where ``target`` publishes a deployment's endpoint."""
    source = _SOURCES.get(target.workload or "")
    if source is None:
        known = [n for n in target_names() if n != target.name]
        raise fail(
            "the target publishes no endpoint that kubectl can read",
            where="--target",
            value=target.name,
            allowed=", ".join(known),
            fix="pass the endpoint's URL with --url",
        )
    return source


def _subject(kind: str, namespace: str, name: str) -> str:
    return f"{kind} {namespace}/{name}"


def _listen_ports(ingress: Mapping[str, Any], where: str) -> dict[str, int]:
    """``{"HTTPS": 443, ...}`` from the ``listen-ports`` annotation (empty when absent)."""
    annotations = (ingress.get("metadata") or {}).get("annotations") or {}
    text = annotations.get(LISTEN_PORTS_ANNOTATION)
    if text is None:
        return {}
    try:
        entries = json.loads(text)
        ports = {str(k).upper(): int(v) for entry in entries for k, v in entry.items()}
    except (ValueError, TypeError, AttributeError):
        raise fail(
            f"the {LISTEN_PORTS_ANNOTATION} annotation is not a JSON list of "
            '{"PROTOCOL": port} entries',
            where=where,
            value=text,
            fix='e.g. [{"HTTPS": 443}], or pass --url',
        ) from None
    return ports


def ingress_url(ingress: Mapping[str, Any], *, where: str) -> str:
    """The base URL an Ingress publishes (module docstring); no address yet is an error."""
    entries = ((ingress.get("status") or {}).get("loadBalancer") or {}).get("ingress") or []
    first = entries[0] if entries and isinstance(entries[0], Mapping) else {}
    address = first.get("hostname") or first.get("ip")
    namespace = (ingress.get("metadata") or {}).get("namespace", "")
    name = (ingress.get("metadata") or {}).get("name", "")
    if not address:
        raise fail(
            "no load balancer address yet (status.loadBalancer.ingress is empty)",
            where=where,
            fix=f"wait for the load balancer (kubectl get ingress {name} -n {namespace} "
            "shows its ADDRESS), or pass --url",
        )
    spec = ingress.get("spec") or {}
    hosts = [r["host"] for r in spec.get("rules") or [] if isinstance(r, Mapping) and r.get("host")]
    annotations = (ingress.get("metadata") or {}).get("annotations") or {}
    ports = _listen_ports(ingress, where)
    secure = bool(spec.get("tls")) or CERTIFICATE_ANNOTATION in annotations or "HTTPS" in ports
    scheme, default_port = ("https", 443) if secure else ("http", 80)
    port = ports.get(scheme.upper(), default_port)
    host = str(hosts[0] if hosts else address)
    return f"{scheme}://{host}" + ("" if port == default_port else f":{port}")


def ingress_address(
    ingress: Mapping[str, Any] | None, *, namespace: str, name: str
) -> EndpointAddress:
    """The endpoint published by the deployment's own Ingress (``None``: not found)."""
    where = _subject("Ingress", namespace, name)
    if ingress is None:
        raise fail(
            "not found",
            where=where,
            fix="check --name, --namespace and the kube context (the deployment gets an "
            "Ingress when its spec asks for an endpoint), or pass --url",
        )
    return EndpointAddress(url=ingress_url(ingress, where=where), source=where)


def _owned_by(ingress: Mapping[str, Any], iec: Mapping[str, Any], kind: Kind) -> bool:
    meta = iec.get("metadata") or {}
    for ref in (ingress.get("metadata") or {}).get("ownerReferences") or []:
        if meta.get("uid") and ref.get("uid"):
            if ref.get("uid") == meta["uid"]:
                return True
        elif ref.get("kind") == kind.kind and ref.get("name") == meta.get("name"):
            return True
    return False


def operator_ingress(
    iec: Mapping[str, Any], ingresses: Sequence[Mapping[str, Any]], *, kind: Kind, where: str
) -> Mapping[str, Any]:
    """The Ingress the inference operator made for ``iec`` (module docstring)."""
    name = str((iec.get("metadata") or {}).get("name", ""))
    namespace = str((iec.get("metadata") or {}).get("namespace", ""))
    owned = [i for i in ingresses if _owned_by(i, iec, kind)]
    found = owned or [
        i
        for i in ingresses
        if (i.get("metadata") or {}).get("name") == OPERATOR_INGRESS_PREFIX + name
    ]
    if not found:
        raise fail(
            "the inference operator has made no Ingress for it yet (none is owned by it or "
            f"named {OPERATOR_INGRESS_PREFIX}{name})",
            where=where,
            fix=f"wait for its load balancer (kubectl get ingresses -n {namespace}), or pass "
            "--url https://<the ALB's DNS name>",
        )
    if len(found) > 1:
        names = ", ".join(sorted(str(i["metadata"]["name"]) for i in found))
        raise fail(
            f"several Ingresses belong to it: {names}",
            where=where,
            fix="pass the one to check with --url",
        )
    return found[0]


def _certificate(status: Mapping[str, Any], spec: Mapping[str, Any]) -> str | None:
    """The ``s3://`` URI of the operator's own (self-signed) certificate, if it wrote one."""
    if (spec.get("tlsConfig") or {}).get("customCertificateConfig"):
        return None  # an ACM certificate the client trusts as it is
    tls = status.get("tlsCertificate") or {}
    bucket = str(tls.get("tlsCertificateOutputS3Bucket") or "").removeprefix("s3://").strip("/")
    keys = [str(k) for k in tls.get("tlsCertificateS3Keys") or [] if k]
    return f"s3://{bucket}/{keys[0].lstrip('/')}" if bucket and keys else None


def operator_address(
    iec: Mapping[str, Any] | None,
    ingresses: Sequence[Mapping[str, Any]],
    *,
    kind: Kind,
    namespace: str,
    name: str,
) -> EndpointAddress:
    """The endpoint of a live IEC (``None``: not found) and the namespace's Ingresses."""
    where = _subject(kind.kind, namespace, name)
    get = f"kubectl get {kind.plural} {name} -n {namespace}"
    if iec is None:
        raise fail(
            "not found",
            where=where,
            fix="check --name, --namespace, --target and the kube context, or pass --url",
        )
    state = readiness(iec, kind)
    if state.state != "ready":
        raise fail(
            f"not ready: {state.detail}",
            where=where,
            fix=f"see its status.conditions (kubectl describe {kind.plural} {name} -n "
            f"{namespace}), or pass --url"
            if state.state == "failed"
            else f"wait until its status.state is ready ({get}), or pass --url",
        )
    status, spec = iec.get("status") or {}, iec.get("spec") or {}
    tls = status.get("tlsCertificate") or {}
    names = tuple(str(n) for n in tls.get("certificateDomainNames") or [])
    sagemaker = (status.get("endpoints") or {}).get("sagemaker") or {}
    unverified: tuple[str, ...] = ()
    if sagemaker.get("endpointArn"):
        unverified = (
            f"the SageMaker endpoint {sagemaker['endpointArn']} "
            f"({sagemaker.get('state', 'no state')}) is not called: it takes SigV4-signed "
            "InvokeEndpoint requests; this check calls the load balancer in front of the pods",
        )
    dns = status.get("dnsStatus") or {}
    if dns.get("recordName") and dns.get("dnsHealth") == DNS_ACTIVE:
        record = str(dns["recordName"]).rstrip(".")
        return EndpointAddress(
            url=f"https://{record}",
            source=f"{where} (its Route 53 record)",
            certificate_names=names,
            unverified=unverified,
        )
    ingress = operator_ingress(iec, ingresses, kind=kind, where=where)
    ingress_name = str(ingress["metadata"]["name"])
    via = _subject("Ingress", namespace, ingress_name)
    return EndpointAddress(
        url=ingress_url(ingress, where=via),
        source=f"{where} via {via}",
        ca_certificate=_certificate(status, spec),
        certificate_names=names,
        unverified=unverified,
    )
