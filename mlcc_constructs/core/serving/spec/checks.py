"""Checks of a spec's values that match what the cluster and AWS will enforce, so a bad value is
refused at synth instead of by the API server, the kubelet or IAM at deploy time.

Integer fields are Kubernetes ``int32``; Secret names are DNS-1123 subdomains and their keys
ConfigMap-key characters; images follow the distribution reference grammar; regions and role
ARNs their AWS forms. The same rules apply to a spec built in Python, read from a file or given
as flags (the CLI's flags are one more layer of the spec mapping).
"""

from __future__ import annotations

import re

from mlcc_constructs.core.platform.buckets import REGION
from mlcc_constructs.core.serving.prepare.disruption import MAX_REQUEST_SECONDS_LIMIT
from mlcc_constructs.core.serving.prepare.ready_timeout import MAX_S, MIN_OVERRIDE_S
from mlcc_constructs.core.serving.spec.deployment import (
    MODEL_BYTES_FIX,
    DeploymentSpec,
    SecretRef,
)
from mlcc_constructs.core.support.errors import Problem, json_pointer
from mlcc_constructs.core.support.kube_names import MAX_SUBDOMAIN, is_subdomain

INT32_MAX = 2**31 - 1
"""Kubernetes ``int32`` fields (replicas)."""

ROLE_ARN = re.compile(r"^arn:aws[a-z-]*:iam::[0-9]{12}:role/[\w+=,.@/-]{1,512}$")
_DOMAIN_PART = r"[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?"
_PATH_PART = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
# distribution/reference: [domain[:port]/]path[:tag][@digest]
IMAGE = re.compile(
    rf"^(?:{_DOMAIN_PART}(?:\.{_DOMAIN_PART})*(?::[0-9]+)?/)?{_PATH_PART}(?:/{_PATH_PART})*"
    r"(?::[\w][\w.-]{0,127})?(?:@sha256:[0-9a-f]{64})?$"
)
_CONFIG_KEY = re.compile(r"^[-._a-zA-Z0-9]+$")
# An OpenAI API model id: one token a client sends in JSON and an engine takes as one argument
# (vLLM and SGLang take any text, Hugging Face ids included; whitespace would split it).
SERVED_MODEL_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:/@+-]{0,127}$")


def spec_problems(spec: DeploymentSpec) -> list[Problem]:
    """Every value of ``spec`` the cluster or AWS would refuse."""
    problems: list[Problem] = []
    if not 1 <= spec.scaling.replicas <= INT32_MAX:
        problems.append(
            Problem(
                message="replicas must be at least 1 and fit Kubernetes' int32",
                pointer="/scaling/replicas",
                value=spec.scaling.replicas,
                allowed=f"1..{INT32_MAX}",
            )
        )
    problems += _node_problems(spec)
    if spec.engine.image is not None and (
        len(spec.engine.image) > 255 or not IMAGE.match(spec.engine.image)
    ):
        problems.append(
            Problem(
                message="not a container image reference",
                pointer="/engine/image",
                value=spec.engine.image,
                allowed="[registry[:port]/]repository[:tag][@sha256:<digest>], lower-case path",
                fix="e.g. registry.example.com/team/server:1.2 (lower-case repository path)",
            )
        )
    if spec.region is not None and not REGION.match(spec.region):
        problems.append(
            Problem(
                message="not an AWS region",
                pointer="/region",
                value=spec.region,
                allowed="an AWS region such as us-east-1",
            )
        )
    role = spec.service_account_role_arn
    if role is not None and not ROLE_ARN.match(role):
        problems.append(
            Problem(
                message="not an IAM role ARN",
                pointer="/service_account_role_arn",
                value=role,
                allowed="arn:aws:iam::<12-digit account>:role/<name>",
            )
        )
    if not 0 < spec.engine.gpu_memory_utilization <= 1:
        problems.append(
            Problem(
                message="not a share of GPU memory",
                pointer="/engine/gpu_memory_utilization",
                value=spec.engine.gpu_memory_utilization,
                allowed="a number in (0, 1]",
            )
        )
    for env_name, ref in spec.engine.secret_env.items():
        if not isinstance(ref, SecretRef):
            continue  # a Secrets Manager secret: prepare's plan_secrets checks it
        if not is_subdomain(ref.name):
            problems.append(
                Problem(
                    message="not a Kubernetes Secret name (DNS-1123 subdomain)",
                    pointer=json_pointer("engine", "secret_env", env_name, "name"),
                    value=ref.name,
                    allowed="lower-case letters, digits, '-' and '.', at most 253",
                )
            )
        if len(ref.key) > MAX_SUBDOMAIN or not _CONFIG_KEY.match(ref.key):
            problems.append(
                Problem(
                    message="not a Secret key",
                    pointer=json_pointer("engine", "secret_env", env_name, "key"),
                    value=ref.key,
                    allowed="letters, digits, '-', '_' and '.', at most 253",
                )
            )
    for index, rank in enumerate(spec.lora.tune_ranks):
        if rank < 1:
            problems.append(
                Problem(
                    message="a LoRA rank is at least 1",
                    pointer=json_pointer("lora", "tune_ranks", index),
                    value=rank,
                )
            )
    if spec.served_model_name is not None and not SERVED_MODEL_NAME.match(spec.served_model_name):
        problems.append(
            Problem(
                message="not a served model name",
                pointer="/served_model_name",
                value=spec.served_model_name,
                allowed="1-128 letters, digits and . _ : / @ + -, starting with a letter or digit",
                fix="e.g. chat-8b or org/model-8b-instruct",
            )
        )
    timeout = spec.rollout.ready_timeout_seconds
    if timeout is not None and not MIN_OVERRIDE_S <= timeout <= MAX_S:
        problems.append(
            Problem(
                message="not a ready timeout the deploy can wait (CloudFormation waits at most an "
                "hour for a custom resource, less the waiter's margins)",
                pointer="/rollout/ready_timeout_seconds",
                value=timeout,
                allowed=f"{MIN_OVERRIDE_S}..{MAX_S}",
                fix="leave it unset to compute it from the model's size and load path, or give "
                f"seconds within {MIN_OVERRIDE_S}..{MAX_S}",
            )
        )
    if spec.model.bytes is not None and spec.model.bytes < 1:
        problems.append(
            Problem(
                message="not a model size",
                pointer="/model/bytes",
                value=spec.model.bytes,
                allowed="a positive integer (bytes)",
                fix=MODEL_BYTES_FIX,
            )
        )
    if not 1 <= spec.endpoint.max_request_seconds <= MAX_REQUEST_SECONDS_LIMIT:
        problems.append(
            Problem(
                message="not a request duration the drain can wait for",
                pointer="/endpoint/max_request_seconds",
                value=spec.endpoint.max_request_seconds,
                allowed=f"1..{MAX_REQUEST_SECONDS_LIMIT}",
                fix="give the longest request's seconds (default 600, the load balancer's "
                "idle timeout)",
            )
        )
    return problems


def _node_problems(spec: DeploymentSpec) -> list[Problem]:
    """``nodes`` (an int of at least 1, or ``auto``) and ``pipeline_parallel_degree`` (at least
    1); the TP x PP rule needs the instance and is the resolver's."""
    problems: list[Problem] = []
    nodes = spec.compute.nodes
    if nodes != "auto" and (isinstance(nodes, bool) or not isinstance(nodes, int) or nodes < 1):
        problems.append(
            Problem(
                message="nodes must be a whole number of at least 1, or auto",
                pointer="/compute/nodes",
                value=nodes,
                allowed="1, 2, 3, ... or auto",
                fix="set nodes to how many instances one model copy spans (1: one node), or "
                "auto to derive it from model.bytes",
            )
        )
    pp = spec.compute.pipeline_parallel_degree
    if isinstance(pp, bool) or not isinstance(pp, int) or pp < 1:
        problems.append(
            Problem(
                message="pipeline_parallel_degree must be a whole number of at least 1",
                pointer="/compute/pipeline_parallel_degree",
                value=pp,
                allowed="1, 2, 3, ...",
                fix="set it to the pipeline stages (usually nodes), or leave it out for 1",
            )
        )
    return problems
