"""The app's stacks (``app.py`` composes them): ``mlcc-<profile>-buckets`` and
``mlcc-<profile>-eks-cluster``."""

from __future__ import annotations

from stacks.app_context import AppEnvironment, environment_from_context
from stacks.buckets_stack import BucketsStack
from stacks.eks_cluster_stack import EksClusterStack

__all__ = ["AppEnvironment", "BucketsStack", "EksClusterStack", "environment_from_context"]
