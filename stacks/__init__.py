"""The app's stacks, composed by ``app.py``: ``mlcc-<profile>-buckets``,
``mlcc-<profile>-eks-cluster``, ``mlcc-<profile>-hyperpod-cluster`` and
``mlcc-<profile>-inference-operator`` (``stacks.hyperpod_stacks``, when the context
declares HyperPod instance groups or a cluster to import), and the serving stacks
(``stacks.serving_stack``: ``mlcc-<profile>-serving`` with the namespaces, then one stack per
reference deployment). The serving and HyperPod modules are imported where they are used."""

from __future__ import annotations

from stacks.app_context import AppEnvironment, environment_from_context
from stacks.buckets_stack import BucketsStack
from stacks.eks_cluster_stack import EksClusterStack

__all__ = ["AppEnvironment", "BucketsStack", "EksClusterStack", "environment_from_context"]
