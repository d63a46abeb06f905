"""The readiness Lambda of the serving stacks (``index.py`` of its asset): the ``on_event`` and
``is_complete`` handlers of the CDK Provider behind
:class:`~mlcc_constructs.aws.readiness.WorkloadReadiness`.

It judges with :mod:`mlcc_constructs.core.serving.kinds._readiness` (the same rules as ``mlcc
endpoint check``), shipped beside it in the asset; besides that module it needs only the
standard library and the botocore of the Lambda Python runtime (to sign the EKS token).

* ``on_event``: Create and Update stamp when the wait began (``WaitStartedAt``, handed to every
  ``is_complete`` call by the provider framework); Delete returns at once.
* ``is_complete``: reads the workload through the Kubernetes API (HTTPS, the cluster's CA, an
  EKS token: a presigned STS ``GetCallerIdentity`` URL carrying the ``x-k8s-aws-id`` header of
  the cluster's name, as ``aws eks get-token`` makes it). Ready for its current generation:
  complete. Failed, stuck on a reason that does not heal (an image that cannot be pulled, a
  container that keeps crashing, a missing Secret), or past ``DeadlineSeconds``: it raises, and
  the framework fails the resource with the message, so CloudFormation rolls the stack back and
  shows the pod's reason. Reading the API fails the deploy only after ``API_GRACE_S`` (a new
  access entry takes a moment to apply).

Resource properties (strings, as CloudFormation passes them): ``ClusterName``, ``Endpoint``
(``https://...``), ``CertificateAuthority`` (base64 PEM, EKS ``certificateAuthority.data``),
``Kind``, ``Namespace``, ``Name``, ``Path`` (the object's API path), ``DeadlineSeconds``, and with
a load balancer ``AddressKind``, ``AddressName``, ``AddressPath`` (its Ingress: the resource
completes once that has an address, returned as the attribute ``Address``); others (``Digest``)
exist only so that CloudFormation updates the resource when the objects change.
"""

from __future__ import annotations

import base64
import http.client
import importlib
import json
import os
import ssl
import time
import urllib.parse
from collections.abc import Callable, Mapping
from typing import Any

from mlcc_constructs.core.serving.kinds._readiness import (
    ADDRESS_RULES,
    RULES,
    Blocker,
    blocker,
    fatal,
)

TOKEN_PREFIX = "k8s-aws-v1."
TOKEN_EXPIRES_S = 60
CLUSTER_HEADER = "x-k8s-aws-id"
API_GRACE_S = 180
"""How long API errors (401/403 while a new access entry applies, a timeout) are waited out."""
REQUEST_TIMEOUT_S = 10
MESSAGE_MAX = 900
"""CloudFormation shows the reason in the stack events; the whole response body is at most
4096 bytes, so the message is cut well below that."""
EVENTS_LIMIT = 200


class ApiError(Exception):
    """The Kubernetes API answered other than 200/404, or could not be reached."""


class NotReady(Exception):
    """The deploy fails: the message is what CloudFormation shows."""


def eks_token(cluster_name: str, region: str) -> str:
    """A bearer token for the EKS API: ``k8s-aws-v1.`` + the unpadded base64url of a presigned
    STS ``GetCallerIdentity`` URL (60 s) signed with the ``x-k8s-aws-id: <cluster>`` header."""
    # botocore comes with the Lambda runtime (and with the project's boto3); imported by name
    # so a team's strict type check of this package needs no botocore stubs.
    session = importlib.import_module("botocore.session").get_session()
    request_signer = importlib.import_module("botocore.signers").RequestSigner
    sts = session.create_client("sts", region_name=region)
    signer = request_signer(
        sts.meta.service_model.service_id,
        region,
        "sts",
        "v4",
        session.get_credentials(),
        session.get_component("event_emitter"),
    )
    url = signer.generate_presigned_url(
        {
            "method": "GET",
            "url": f"{sts.meta.endpoint_url}/?Action=GetCallerIdentity&Version=2011-06-15",
            "body": {},
            "headers": {CLUSTER_HEADER: cluster_name},
            "context": {},
        },
        region_name=region,
        expires_in=TOKEN_EXPIRES_S,
        operation_name="",
    )
    return TOKEN_PREFIX + base64.urlsafe_b64encode(str(url).encode()).decode().rstrip("=")


class KubernetesApi:
    """GETs against one API server over HTTPS, trusting only the cluster's CA."""

    def __init__(self, endpoint: str, certificate_authority: str, token: Callable[[], str]) -> None:
        parsed = urllib.parse.urlsplit(endpoint)
        if parsed.scheme != "https" or not parsed.hostname:
            raise NotReady(f"the cluster endpoint is not an https:// URL: {endpoint!r}")
        self._host, self._port = parsed.hostname, parsed.port or 443
        pem = base64.b64decode(certificate_authority).decode()
        self._context = ssl.create_default_context(cadata=pem)
        self._token = token

    def get(self, path: str, query: Mapping[str, str] | None = None) -> dict[str, Any] | None:
        """The JSON at ``path`` (``None`` on 404)."""
        target = path + ("?" + urllib.parse.urlencode(query) if query else "")
        connection = http.client.HTTPSConnection(
            self._host, self._port, context=self._context, timeout=REQUEST_TIMEOUT_S
        )
        try:
            connection.request(
                "GET",
                target,
                headers={"Authorization": f"Bearer {self._token()}", "Accept": "application/json"},
            )
            response = connection.getresponse()
            body = response.read()
        except (OSError, http.client.HTTPException) as error:
            raise ApiError(f"GET {path}: {error}") from error
        finally:
            connection.close()
        if response.status == 404:
            return None
        if response.status != 200:
            raise ApiError(f"GET {path}: {response.status} {body[:300].decode(errors='replace')}")
        parsed: dict[str, Any] = json.loads(body)
        return parsed


def _api(props: Mapping[str, Any]) -> KubernetesApi:
    region = os.environ["AWS_REGION"]
    name = str(props["ClusterName"])
    return KubernetesApi(
        str(props["Endpoint"]), str(props["CertificateAuthority"]), lambda: eks_token(name, region)
    )


def on_event(event: Mapping[str, Any], context: object = None) -> dict[str, Any]:
    """Start the wait (Create, Update) or return at once (Delete)."""
    props = event.get("ResourceProperties") or {}
    physical = event.get("PhysicalResourceId") or (
        f"{props.get('Namespace')}/{props.get('Kind')}/{props.get('Name')}"
    )
    if event["RequestType"] == "Delete":
        return {"PhysicalResourceId": physical}
    return {"PhysicalResourceId": physical, "WaitStartedAt": time.time()}


def is_complete(event: Mapping[str, Any], context: object = None) -> dict[str, Any]:
    """Whether the workload is ready (module doc); raises :class:`NotReady` to fail."""
    if event["RequestType"] == "Delete":
        return {"IsComplete": True}
    props = event["ResourceProperties"]
    return judge(props, _api(props), now=time.time(), started=float(event["WaitStartedAt"]))


def _message(text: str) -> str:
    return text if len(text) <= MESSAGE_MAX else text[: MESSAGE_MAX - 3] + "..."


def _why(
    api: KubernetesApi, obj: Mapping[str, Any] | None, props: Mapping[str, Any], workload: str
) -> Blocker | None:
    """Why the workload is not ready: its pods and the namespace's Warning events (a failed
    read leaves the reason unknown, it never fails the deploy by itself)."""
    namespace = str(props["Namespace"])
    rules = RULES[str(props["Kind"])]
    pods: list[dict[str, Any]] = []
    events: list[dict[str, Any]] = []
    selector = rules.pod_selector(obj) if obj is not None else None
    try:
        if selector:
            found = api.get(f"/api/v1/namespaces/{namespace}/pods", {"labelSelector": selector})
            pods = list((found or {}).get("items") or [])
        listed = api.get(
            f"/api/v1/namespaces/{namespace}/events",
            {"fieldSelector": "type=Warning", "limit": str(EVENTS_LIMIT)},
        )
        events = list((listed or {}).get("items") or [])
    except ApiError as error:
        print(json.dumps({"why": "unknown", "error": str(error)}))
    return blocker(pods, events, workload)


def judge(
    props: Mapping[str, Any], api: KubernetesApi, *, now: float, started: float
) -> dict[str, Any]:
    """One look at the workload: complete, not yet, or :class:`NotReady`."""
    kind, name = str(props["Kind"]), str(props["Name"])
    workload = f"{kind}/{name}"
    rules = RULES[kind]
    waited = now - started
    deadline = int(props["DeadlineSeconds"])
    try:
        obj = api.get(str(props["Path"]))
    except ApiError as error:
        print(json.dumps({"workload": workload, "error": str(error), "waited": round(waited)}))
        if waited < API_GRACE_S:
            return {"IsComplete": False}
        raise NotReady(_message(f"{workload}: cannot read it from the cluster: {error}")) from None
    state, detail = ("absent", "not found") if obj is None else rules.readiness(obj)
    print(json.dumps({"workload": workload, "state": state, "detail": detail}))
    if state == "ready":
        return _with_address(props, api, detail, waited=waited, deadline=deadline)
    why = _why(api, obj, props, workload)
    reason = f"; {why.reason}" if why is not None else ""
    if state == "failed":
        words = rules.failure_detail(obj) if rules.failure_detail and obj is not None else detail
        raise NotReady(_message(f"{workload} failed: {words}{reason}"))
    if fatal(why, now=now):
        raise NotReady(_message(f"{workload} cannot become ready ({detail}){reason}"))
    if waited >= deadline:
        raise NotReady(
            _message(f"{workload} not ready after {deadline} s ({detail}){reason or ': no reason'}")
        )
    return {"IsComplete": False}


def _with_address(
    props: Mapping[str, Any], api: KubernetesApi, detail: str, *, waited: float, deadline: int
) -> dict[str, Any]:
    """Complete, with where the endpoint answers (``Address``) when the deployment has an
    object that says it (``AddressKind``/``AddressPath``: its Ingress): a ready workload
    behind a load balancer that has no address yet is not an endpoint yet."""
    data = {"Readiness": detail}
    kind = str(props.get("AddressKind") or "")
    if not kind:
        return {"IsComplete": True, "Data": data}
    described = f"{kind} {props['Namespace']}/{props.get('AddressName', '')}"
    try:
        obj = api.get(str(props["AddressPath"]))
    except ApiError as error:
        obj = None
        print(json.dumps({"address": described, "error": str(error)}))
    address = ADDRESS_RULES[kind](obj) if obj is not None else None
    print(json.dumps({"address": described, "found": address}))
    if address is not None:
        return {"IsComplete": True, "Data": {**data, "Address": address}}
    if waited >= deadline:
        raise NotReady(
            _message(
                f"{described} has no load balancer address after {deadline} s: the load "
                "balancer controller made none (kubectl describe ingress shows its events)"
            )
        )
    return {"IsComplete": False}
