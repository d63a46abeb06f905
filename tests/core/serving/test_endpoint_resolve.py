"""Where ``mlcc endpoint check --name`` calls: the rules that turn a live Ingress or
InferenceEndpointConfig into a URL (pure), and the command against a fake kubectl on PATH and
the loopback stand-in."""

from __future__ import annotations

import json
import ssl
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from mlcc_constructs.core.platform.targets import load_target
from mlcc_constructs.core.serving.endpoint.address import (
    CERTIFICATE_ANNOTATION as CERT,
    LISTEN_PORTS_ANNOTATION as LISTEN,
    endpoint_source,
    ingress_url,
    operator_address,
)
from mlcc_constructs.core.serving.endpoint.answers import parse_event, server_message
from mlcc_constructs.core.serving.kinds.registry import kind_named
from mlcc_constructs.core.support.errors import MlccError
from tests._adapter_env import run
from tests._endpoint_env import KEY, KEY_ENV, FakeKubectl, StandIn, ingress, make_certificate

IEC_KIND = kind_named("InferenceEndpointConfig")
ACM = "arn:aws:acm:us-east-1:123456789012:certificate/0f1e2d3c-aaaa-bbbb-cccc-123456789012"
ENDPOINT_ARN = "arn:aws:sagemaker:us-east-1:123456789012:endpoint/inference-llama-1a2b3c4d"
CERT_URI = "s3://mlcc-tls-123456789012-us-east-1/inference/llama/cert.pem"
SAGEMAKER_NOTE = (
    f"the SageMaker endpoint {ENDPOINT_ARN} (InService) is not called: it takes SigV4-signed "
    "InvokeEndpoint requests; this check calls the load balancer in front of the pods"
)
KUBE_FIX = "check the kube context and --namespace, or pass --url"


def errors_of(call: Any) -> list[str]:
    with pytest.raises(MlccError) as caught:
        call()
    return [str(p) for p in caught.value.problems]


# -- the rules (pure) -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("annotations", "spec", "url"),
    [
        ({}, {}, "http://lb.example"),
        ({CERT: ACM}, {}, "https://lb.example"),
        ({}, {"tls": [{"hosts": ["llm.example.com"]}]}, "https://lb.example"),
        ({LISTEN: '[{"HTTPS": 8443}]'}, {}, "https://lb.example:8443"),
        ({LISTEN: '[{"HTTP": 80}, {"HTTPS": 443}]'}, {}, "https://lb.example"),
        ({LISTEN: '[{"HTTP": 8080}]'}, {}, "http://lb.example:8080"),
        ({CERT: ACM}, {"rules": [{"host": "llm.example.com"}]}, "https://llm.example.com"),
    ],
)
def test_the_url_of_an_ingress(annotations: dict[str, str], spec: dict[str, Any], url: str) -> None:
    obj = ingress("llama", hostname="lb.example", annotations=annotations)
    obj["spec"].update(spec)
    assert ingress_url(obj, where="Ingress inference/llama") == url


def test_an_ingress_address_may_be_an_ip() -> None:
    obj = ingress("llama", hostname=None)
    obj["status"]["loadBalancer"]["ingress"] = [{"ip": "10.0.0.7"}]
    assert ingress_url(obj, where="x") == "http://10.0.0.7"


def test_bad_listen_ports() -> None:
    obj = ingress("llama", annotations={LISTEN: "HTTPS:443"})
    assert errors_of(lambda: ingress_url(obj, where="Ingress inference/llama")) == [
        "Ingress inference/llama: the alb.ingress.kubernetes.io/listen-ports annotation is not "
        """a JSON list of {"PROTOCOL": port} entries (got 'HTTPS:443'; fix: e.g. """
        """[{"HTTPS": 443}], or pass --url)"""
    ]


def live_iec(state: str = "DeploymentComplete", **status: Any) -> dict[str, Any]:
    """A live IEC as the operator reports it."""
    return {
        "apiVersion": IEC_KIND.api_version,
        "kind": IEC_KIND.kind,
        "metadata": {"name": "llama", "namespace": "inference", "uid": "u-1", "generation": 2},
        "spec": {"modelName": "llama", "tlsConfig": {"tlsCertificateOutputS3Uri": "s3://b/"}},
        "status": {
            "state": state,
            "observedGeneration": 2,
            "tlsCertificate": {
                "tlsCertificateOutputS3Bucket": "mlcc-tls-123456789012-us-east-1",
                "tlsCertificateS3Keys": ["inference/llama/cert.pem"],
                "certificateDomainNames": ["127.0.0.1"],
            },
            "endpoints": {"sagemaker": {"endpointArn": ENDPOINT_ARN, "state": "InService"}},
            **status,
        },
    }


def operator_ingress(name: str = "alb-llama", *, port: int = 443, owned: bool = True) -> Any:
    owner = {"kind": IEC_KIND.kind, "name": "llama", "uid": "u-1"} if owned else None
    listen = f'[{{"HTTPS": {port}}}]'
    return ingress(name, annotations={CERT: ACM, LISTEN: listen}, owner=owner)


def resolve_iec(iec: Any, ingresses: list[Any]) -> Any:
    return operator_address(iec, ingresses, kind=IEC_KIND, namespace="inference", name="llama")


def test_the_operator_dns_record_wins_when_active() -> None:
    dns = {"managedByOperator": True, "recordName": "llama.example.com.", "dnsHealth": "Active"}
    address = resolve_iec(live_iec(dnsStatus=dns), [])
    assert (address.url, address.source) == (
        "https://llama.example.com",
        "InferenceEndpointConfig inference/llama (its Route 53 record)",
    )
    address = resolve_iec(live_iec(dnsStatus={**dns, "dnsHealth": "Pending"}), [operator_ingress()])
    assert address.url == "https://127.0.0.1"


def test_the_operator_ingress_is_found_by_owner_or_by_name() -> None:
    other = ingress("alb-other", owner={"kind": IEC_KIND.kind, "name": "other", "uid": "u-2"})
    address = resolve_iec(live_iec(), [other, operator_ingress("alb-x1y2")])
    assert address.source == (
        "InferenceEndpointConfig inference/llama via Ingress inference/alb-x1y2"
    )
    assert (address.ca_certificate, address.certificate_names) == (CERT_URI, ("127.0.0.1",))
    assert address.unverified == (SAGEMAKER_NOTE,)
    assert resolve_iec(live_iec(), [other, operator_ingress(owned=False)]).url == (
        "https://127.0.0.1"
    )
    custom = live_iec()
    custom["spec"]["tlsConfig"]["customCertificateConfig"] = {"acmArn": ACM, "domainName": "x.y"}
    assert resolve_iec(custom, [operator_ingress()]).ca_certificate is None
    assert errors_of(
        lambda: resolve_iec(live_iec(), [operator_ingress(), operator_ingress("b")])
    ) == [
        "InferenceEndpointConfig inference/llama: several Ingresses belong to it: alb-llama, b "
        "(fix: pass the one to check with --url)"
    ]


def test_a_target_without_a_known_endpoint() -> None:
    eks = load_target("eks")
    assert endpoint_source(eks) == "ingress"
    assert endpoint_source(load_target("hyperpod-eks")) == "operator"
    assert errors_of(lambda: endpoint_source(replace(eks, workload="LeaderWorkerSet"))) == [
        "--target: the target publishes no endpoint that kubectl can read (got 'eks'; allowed: "
        "hyperpod-eks, realtime-inference; fix: pass the endpoint's URL with --url)"
    ]


@pytest.mark.parametrize(
    ("line", "text", "done"),
    [
        ("data: [DONE]", "", True),
        ('data: {"choices": [{"delta": {"role": "assistant", "content": ""}}]}', "", False),
        ('data: {"choices": [{"delta": {"content": "Hi"}}]}\r\n', "Hi", False),
        ('data:{"choices": [{"delta": {"reasoning_content": "hm"}}]}', "hm", False),
        ('data: {"choices": [], "usage": {"completion_tokens": 2}}', "", False),
    ],
)
def test_server_sent_events(line: str, text: str, done: bool) -> None:
    event = parse_event(line, "POST u")
    assert event is not None and (event.text, event.done) == (text, done)


@pytest.mark.parametrize("line", ["", ": keep-alive", "event: message", "id: 7", "retry: 10"])
def test_lines_without_data(line: str) -> None:
    assert parse_event(line, "POST u") is None


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            '{"error": {"message": "The model `x` does not exist."}}',
            "The model `x` does not exist.",
        ),
        ('{"object": "error", "message": "bad", "code": 400}', "bad"),
        ('{"detail": "Not Found"}', "Not Found"),
        ('{"error": "Unauthorized"}', "Unauthorized"),
        ("<html>\n  <b>502 Bad Gateway</b>\n</html>", "<html> <b>502 Bad Gateway</b> </html>"),
        ("x" * 300, "x" * 200 + "..."),
    ],
)
def test_the_message_of_an_error_answer(body: str, message: str) -> None:
    assert server_message(body) == message


# -- the command with kubectl -----------------------------------------------------------------


@pytest.fixture
def kube(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeKubectl:
    monkeypatch.setenv(KEY_ENV, KEY)
    return FakeKubectl(tmp_path, monkeypatch)


@pytest.fixture
def server() -> Iterator[StandIn]:
    stand_in = StandIn()
    yield stand_in
    stand_in.close()


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return make_certificate(tmp_path_factory.mktemp("tls"), "operator")


@pytest.fixture
def tls_server(certificate: tuple[Path, Path]) -> Iterator[StandIn]:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(*certificate)
    stand_in = StandIn(context)
    yield stand_in
    stand_in.close()


GET_INGRESS = "get ingresses llama -n inference --ignore-not-found"
GET_IEC = "get inferenceendpointconfigs llama -n inference --ignore-not-found"
LIST_INGRESSES = "get ingresses -n inference"


def check(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, Any, list[str]]:
    code, report, err = run(
        capsys, "endpoint", "check", "--name", "llama", "--namespace", "inference", *argv
    )
    assert KEY not in json.dumps(report) and KEY not in err
    return code, report, [line.removeprefix("mlcc: error: ") for line in err.splitlines()]


def test_eks_reads_the_deployments_ingress(
    capsys: pytest.CaptureFixture[str], kube: FakeKubectl, server: StandIn
) -> None:
    live = ingress("llama", annotations={LISTEN: f'[{{"HTTP": {server.port}}}]'})
    kube.answer(GET_INGRESS, live)
    code, report, errors = check(capsys, "--api-key-env", KEY_ENV)
    assert (code, errors, report["ok"]) == (0, [], True)
    assert (report["url"], report["endpoint"], report["model"]) == (
        server.url,
        {"source": "Ingress inference/llama"},
        "llama",
    )
    assert kube.calls() == [f"{GET_INGRESS} -o json"]


def test_eks_ingress_without_an_address_or_absent(
    capsys: pytest.CaptureFixture[str], kube: FakeKubectl, server: StandIn
) -> None:
    kube.answer(GET_INGRESS, ingress("llama", hostname=None))
    code, report, errors = check(capsys)
    assert errors == [
        "Ingress inference/llama: no load balancer address yet (status.loadBalancer.ingress is "
        "empty) (fix: wait for the load balancer (kubectl get ingress llama -n inference shows "
        "its ADDRESS), or pass --url)"
    ]
    assert (code, report["url"], report["calls"], server.requests) == (1, None, [], [])
    kube.answer(GET_INGRESS, None)  # --ignore-not-found prints nothing
    assert check(capsys)[2] == [
        "Ingress inference/llama: not found (fix: check --name, --namespace and the kube "
        "context (the deployment gets an Ingress when its spec asks for an endpoint), or pass "
        "--url)"
    ]
    kube.answer(GET_INGRESS, code=1, stderr="error: You must be logged in to the server\n")
    assert check(capsys)[2] == [
        f"kubectl {GET_INGRESS} failed: error: You must be logged in to the server (fix: "
        f"{KUBE_FIX})"
    ]


def test_hyperpod_calls_the_operators_load_balancer(
    capsys: pytest.CaptureFixture[str],
    kube: FakeKubectl,
    tls_server: StandIn,
    certificate: tuple[Path, Path],
) -> None:
    kube.answer(GET_IEC, live_iec())
    unrelated = ingress("web", hostname="web.example")
    kube.answer(LIST_INGRESSES, {"items": [unrelated, operator_ingress(port=tls_server.port)]})
    argv = ["--target", "hyperpod-eks", "--api-key-env", KEY_ENV]
    code, report, errors = check(capsys, *argv, "--ca-file", str(certificate[0]))
    assert (code, errors) == (0, [])
    assert (report["url"], report["endpoint"], report["unverified"]) == (
        tls_server.url,
        {
            "source": "InferenceEndpointConfig inference/llama via Ingress inference/alb-llama",
            "ca_certificate": CERT_URI,
            "certificate_names": ["127.0.0.1"],
        },
        [SAGEMAKER_NOTE],
    )
    assert kube.calls() == [f"{GET_IEC} -o json", f"{LIST_INGRESSES} -o json"]
    code, report, errors = check(capsys, *argv)  # without the operator's certificate
    assert errors == [
        f"GET {tls_server.url}/v1/models: TLS certificate verify failed: self-signed certificate "
        f"(fix: download the certificate the inference operator wrote (aws s3 cp {CERT_URI} "
        "ca.pem) and pass --ca-file ca.pem)"
    ]
    assert (code, report["endpoint"]["ca_certificate"]) == (1, CERT_URI)


@pytest.mark.parametrize(
    ("iec", "ingresses", "error"),
    [
        (
            None,
            [],
            "not found (fix: check --name, --namespace, --target and the kube context, or pass "
            "--url)",
        ),
        (
            live_iec("DeploymentInProgress"),
            [],
            "not ready: DeploymentInProgress (fix: wait until its status.state is ready (kubectl "
            "get inferenceendpointconfigs llama -n inference), or pass --url)",
        ),
        (
            live_iec("DeploymentFailed"),
            [],
            "not ready: DeploymentFailed (fix: see its status.conditions (kubectl describe "
            "inferenceendpointconfigs llama -n inference), or pass --url)",
        ),
        (
            live_iec(),
            [ingress("web")],
            "the inference operator has made no Ingress for it yet (none is owned by it or named "
            "alb-llama) (fix: wait for its load balancer (kubectl get ingresses -n inference), or "
            "pass --url https://<the ALB's DNS name>)",
        ),
    ],
)
def test_hyperpod_without_a_ready_endpoint(
    capsys: pytest.CaptureFixture[str],
    kube: FakeKubectl,
    iec: Any,
    ingresses: list[Any],
    error: str,
) -> None:
    kube.answer(GET_IEC, iec)
    kube.answer(LIST_INGRESSES, {"items": ingresses})
    code, report, errors = check(capsys, "--target", "hyperpod-eks")
    assert (code, errors) == (1, [f"InferenceEndpointConfig inference/llama: {error}"])
    assert report["calls"] == []


def test_hyperpod_operator_ingress_without_an_address(
    capsys: pytest.CaptureFixture[str], kube: FakeKubectl
) -> None:
    pending = operator_ingress()
    pending["status"]["loadBalancer"]["ingress"] = []
    kube.answer(GET_IEC, live_iec())
    kube.answer(LIST_INGRESSES, {"items": [pending]})
    assert check(capsys, "--target", "hyperpod-eks")[2] == [
        "Ingress inference/alb-llama: no load balancer address yet (status.loadBalancer.ingress "
        "is empty) (fix: wait for the load balancer (kubectl get ingress alb-llama -n inference "
        "shows its ADDRESS), or pass --url)"
    ]


def test_a_target_without_kubernetes_objects(
    capsys: pytest.CaptureFixture[str], kube: FakeKubectl
) -> None:
    code, _, errors = check(capsys, "--target", "realtime-inference")
    assert (code, len(errors), kube.calls()) == (1, 1, [])
    assert errors[0].startswith("--target: not a Kubernetes target (got 'realtime-inference'")
