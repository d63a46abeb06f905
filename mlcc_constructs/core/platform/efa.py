"""The network of a multi-node deployment: the EFA devices its pods ask for, the libfabric/NCCL
environment its engine's collectives need on EFA, and the check of an instance without EFA.

* **Resources.** An EFA is scheduled as the extended resource :data:`EFA_RESOURCE`
  (``vpc.amazonaws.com/efa``), advertised by the EFA device plugin as an integer count per node;
  a pod asks for its EFAs in its container's requests and limits ("Manage EFA devices on Amazon
  EKS", https://docs.aws.amazon.com/eks/latest/userguide/device-management-efa.html). A
  multi-node group's pod takes a whole node (every GPU of it), so it asks for every EFA the
  instance has: the catalog's ``efa_max_interfaces``. On EKS Auto Mode (and Karpenter), an
  instance launched for a pod that requests ``vpc.amazonaws.com/efa`` gets all of its
  interfaces as EFA (same page), so the request is also what turns EFA on for the node.
* **Environment.** ``FI_PROVIDER=efa`` makes libfabric (which the AWS OFI NCCL plugin drives)
  use the EFA provider and fail loudly instead of falling back to TCP sockets (libfabric's
  ``FI_PROVIDER`` selects the provider, https://ofiwg.github.io/libfabric/main/man/fabric.7.html).
  ``FI_EFA_USE_DEVICE_RDMA=1`` turns on EFA's RDMA for GPU memory where the instance's EFA
  supports RDMA read (the catalog's ``efa_device_rdma``: the EC2 guide's "RDMA read support"
  table, https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/efa.html#efa-instance-types);
  SageMaker's own distributed launcher sets exactly this for its RDMA instance types
  (aws/sagemaker-training-toolkit src/sagemaker_training/torch_distributed.py,
  ``SM_EFA_RDMA_INSTANCES`` → ``FI_EFA_USE_DEVICE_RDMA=1``). Elsewhere it is left unset, so
  libfabric decides. The engine image must carry the EFA userspace (libfabric, aws-ofi-nccl);
  the variables do nothing without it.
* **Required or recommended.** vLLM's "Distributed inference and serving" page makes the
  network a performance matter: for tensor parallelism across nodes it recommends making the
  nodes' communication efficient with high-speed network cards such as InfiniBand
  (https://docs.vllm.ai/en/v0.8.4/serving/distributed_serving.html); it names no network it
  refuses to start on. SGLang's multi-node launch (``--nnodes``, ``--node-rank``,
  ``--dist-init-addr``) takes a plain TCP address; no SGLang page on record requires RDMA.
  So the engines' data says EFA is recommended, not required: an instance without EFA gets
  :func:`multi_node_network_warnings` (a warning string, like the renderers' other
  warnings), and :func:`multi_node_network_problems` refuses only for an engine whose data
  says it requires EFA (``requires_efa``).
"""

from __future__ import annotations

from mlcc_constructs.core.platform.catalog import InstanceType
from mlcc_constructs.core.support.errors import Problem

EFA_RESOURCE = "vpc.amazonaws.com/efa"
"""The extended resource the EFA device plugin advertises (one per EFA interface)."""


def multi_node_network(instance: InstanceType) -> tuple[dict[str, str], dict[str, str]]:
    """The container resource limits and the environment of one multi-node pod on ``instance``:
    ``({"vpc.amazonaws.com/efa": "<N>"}, {"FI_PROVIDER": "efa", ...})`` where it has EFA,
    ``({}, {})`` where it has none (module doc)."""
    if not instance.efa_supported or instance.efa_max_interfaces < 1:
        return {}, {}
    limits = {EFA_RESOURCE: str(instance.efa_max_interfaces)}
    env = {"FI_PROVIDER": "efa"}
    if instance.efa_device_rdma:
        env["FI_EFA_USE_DEVICE_RDMA"] = "1"
    return limits, env


def multi_node_network_problems(
    instance: InstanceType, *, requires_efa: bool, where: str, pointer: str
) -> list[Problem]:
    """The refusal of ``instance`` for a multi-node deployment of an engine that requires EFA
    (``requires_efa``) when the instance has none; ``[]`` otherwise. ``where``/``pointer`` name
    the spec field that chose the instance."""
    if not requires_efa or instance.efa_supported:
        return []
    return [
        Problem(
            message=f"{instance.name} has no Elastic Fabric Adapter, which this engine "
            "requires between the nodes of a multi-node deployment",
            where=where,
            pointer=pointer,
            value=instance.name,
            allowed="an instance type whose catalog entry has efa_supported true (e.g. "
            + ", ".join(_efa_examples())
            + ")",
            fix="choose an EFA instance type, or serve the model on one node (nodes: 1)",
        )
    ]


def multi_node_network_warnings(instance: InstanceType, *, nodes: int) -> list[str]:
    """The warning for a deployment over ``nodes`` > 1 nodes of an instance without EFA (its
    collectives cross the nodes over TCP: it serves, slowly); ``[]`` otherwise."""
    if nodes <= 1 or instance.efa_supported:
        return []
    return [
        f"{instance.name} has no Elastic Fabric Adapter: the {nodes} nodes' tensor/pipeline "
        "traffic goes over TCP; the engines' multi-node docs recommend a high-speed network (an "
        "EFA type such as " + ", ".join(_efa_examples()) + " is recommended)"
    ]


def _efa_examples() -> tuple[str, ...]:
    # Named in messages only; the rule itself reads the instance's own catalog facts.
    return ("ml.p5.48xlarge", "ml.p5en.48xlarge", "ml.p6-b200.48xlarge")
