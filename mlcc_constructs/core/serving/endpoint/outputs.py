"""What a deploy tells its user: where the endpoint is and the commands that reach it, as stack
outputs (``cdk deploy`` prints them; ``aws cloudformation describe-stacks`` reads them later).

A serving stack says (:func:`serving_outputs`):

* ``EndpointUrl``: ``https://<hostname>`` when the endpoint has a hostname and a certificate
  (``http://`` without one), else the load balancer's own DNS name, which the deploy reads back
  from the Ingress once the workload is ready (``ServedModel.endpoint_address``). An internal
  endpoint answers inside the VPC only (its description says so).
* ``ServedModelName``: what clients send as ``model``.
* ``ApiKeySecret`` and ``ApiKeyCommand`` (with ``api_key_secret``): the secret and the command
  that puts the key in ``LLM_KEY`` for ``mlcc endpoint check --api-key-env LLM_KEY``.
* ``CheckCommand``: ``mlcc endpoint check`` against the URL.
* ``PortForwardCommand`` and ``LocalCheckCommand`` (a deployment whose pods the library makes):
  the way in from the deployer's machine without a load balancer it can reach: ``kubectl
  port-forward`` to the deployment's Service, then the check on ``http://127.0.0.1:8000``.
* ``EndpointLookup`` (``hyperpod-eks`` without a hostname): the operator makes the load balancer,
  so ``mlcc endpoint check --name`` finds it through kubectl.

The cluster stack says ``KubeconfigCommand`` and ``ApiEndpointAccess``
(:func:`cluster_outputs`): kubectl needs both.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import dataclass

from mlcc_constructs.core.serving.prepared import PreparedDeployment

LOCAL_PORT = 8000
"""The deployer's local port of ``kubectl port-forward``."""
KEY_ENV = "LLM_KEY"
"""The variable the commands put the API key in (``mlcc endpoint check --api-key-env``)."""


@dataclass(frozen=True, kw_only=True)
class StackOutput:
    """One output: ``key`` (the ``CfnOutput`` id), ``value`` and ``description``."""

    key: str
    value: str
    description: str


def endpoint_url(deployment: PreparedDeployment, address: str | None) -> str | None:
    """The endpoint's base URL (module doc): the hostname's, else the load balancer's
    ``address``; ``None`` when neither is known (no load balancer, or one the stack does not
    read)."""
    endpoint = deployment.spec.endpoint
    if not endpoint.exposed:
        return None
    scheme = "https" if endpoint.https else "http"
    host = (
        endpoint.hostname
        if endpoint.hostname and not endpoint.hostname.startswith("*.")
        else address
    )
    return f"{scheme}://{host}" if host else None


def _check(url: str, deployment: PreparedDeployment) -> str:
    command = ["mlcc", "endpoint", "check", "--url", url, "--model", deployment.served_name]
    if deployment.spec.endpoint.api_key_secret is not None:
        command += ["--api-key-env", KEY_ENV]
    return " ".join(shlex.quote(part) if "${" not in part else part for part in command)


def serving_outputs(
    deployment: PreparedDeployment, *, address: str | None, region: str
) -> list[StackOutput]:
    """The outputs of the stack that serves ``deployment`` (module doc); ``address``: the load
    balancer's DNS name read back at deploy (a token), ``None`` when the stack reads none."""
    spec = deployment.spec
    name = f"{spec.namespace}/{deployment.names.base}"
    outputs: list[StackOutput] = []
    url = endpoint_url(deployment, address)
    if url is not None:
        reach = (
            "from inside the VPC only (the load balancer is internal)"
            if spec.endpoint.scheme == "internal"
            else "from the internet"
        )
        outputs.append(
            StackOutput(
                key="EndpointUrl",
                value=url,
                description=f"{name}: the OpenAI-compatible API's base URL, reachable {reach}",
            )
        )
    outputs.append(
        StackOutput(
            key="ServedModelName",
            value=deployment.served_name,
            description=f"{name}: the model clients send (the API's model field)",
        )
    )
    secret = spec.endpoint.api_key_secret
    if secret is not None:
        outputs += [
            StackOutput(
                key="ApiKeySecret",
                value=secret,
                description=f"{name}: the Secrets Manager secret of the API key (Authorization: "
                "Bearer)",
            ),
            StackOutput(
                key="ApiKeyCommand",
                value=f"export {KEY_ENV}=$(aws secretsmanager get-secret-value --secret-id "
                f"{shlex.quote(secret)} --region {region} --query SecretString --output text)",
                description=f"{name}: puts the API key in {KEY_ENV} without printing it",
            ),
        ]
    if url is not None:
        outputs.append(
            StackOutput(
                key="CheckCommand",
                value=_check(url, deployment),
                description=f"{name}: lists the models and streams one chat completion",
            )
        )
    elif spec.endpoint.exposed:  # the operator's load balancer: found through kubectl
        outputs.append(
            StackOutput(
                key="EndpointLookup",
                value=f"mlcc endpoint check --name {deployment.names.base} --namespace "
                f"{spec.namespace} --target {deployment.target.name}"
                + (f" --api-key-env {KEY_ENV}" if secret is not None else ""),
                description=f"{name}: finds the operator's load balancer with kubectl and checks "
                "it",
            )
        )
    if deployment.target.pod_volumes:  # the library's own pods behind a Service of its own
        outputs += [
            StackOutput(
                key="PortForwardCommand",
                value=f"kubectl -n {spec.namespace} port-forward service/"
                f"{deployment.names.base} {LOCAL_PORT}:{deployment.container.port}",
                description=f"{name}: the way in from your machine (needs kubectl access: "
                "the cluster stack's KubeconfigCommand)",
            ),
            StackOutput(
                key="LocalCheckCommand",
                value=_check(f"http://127.0.0.1:{LOCAL_PORT}", deployment),
                description=f"{name}: the check through the port-forward",
            ),
        ]
    return outputs


def cluster_outputs(
    *,
    cluster_name: str,
    region: str,
    admin_role_arns: Sequence[str],
    public_cidrs: Sequence[str],
) -> list[StackOutput]:
    """The cluster stack's outputs: the kubeconfig command (assuming the first admin role when
    the app grants any) and how the API endpoint may be reached."""
    command = f"aws eks update-kubeconfig --name {cluster_name} --region {region}"
    if admin_role_arns:
        command += f" --role-arn {admin_role_arns[0]}"
    access = (
        f"public from {', '.join(public_cidrs)} and private: kubectl works from those networks"
        if public_cidrs
        else "private: kubectl works only from inside the VPC (a bastion, a VPN, an SSM "
        "session); to use it from your machine, deploy with -c endpoint_public_cidrs=<your "
        "IP>/32"
    )
    return [
        StackOutput(
            key="KubeconfigCommand",
            value=command,
            description="writes the kubeconfig entry of the cluster"
            + (" for its first admin role" if admin_role_arns else ""),
        ),
        StackOutput(
            key="ApiEndpointAccess",
            value=access,
            description="where the cluster's Kubernetes API answers",
        ),
    ]
