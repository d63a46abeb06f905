"""Rollouts on a HyperPod instance group: read the live state, and ``--surge-node`` (seed
lora-delivery §4). The rules are ``core/rollout/rules.py``; this module only talks to SageMaker (a
boto3 client passed in) and to ``kubectl``, and waits on an injected clock.

The surge, step by step:

1. Everything is read and checked before the first change: the cluster and group are
   InService at their target count, every instance of the group is a Kubernetes node, the
   apply step can run.
2. ``UpdateCluster`` raises the group's ``InstanceCount`` by one. The request repeats the
   group's own settings from ``DescribeCluster`` (an instance group spec names them); only the
   count differs.
3. Wait for the new node to be Ready and schedulable; a new instance that SageMaker reports
   as failed (insufficient capacity...) ends the wait with SageMaker's message, verbatim.
4. The apply step runs (``kubectl apply -f -`` of the rendered objects, or the caller's).
5. Wait until every old serving pod is gone and the new ones are Ready.
6. Restore: ``BatchDeleteClusterNodes`` of the vacated instance, never one hosting a Ready
   serving pod, never the group's last Ready node (``core.rollout.node_to_remove``); then wait
   for the group's target count to be back.

``UpdateCluster`` scales a group down by choosing the instances itself, so a count-only
restore could terminate the serving node: "SageMaker AI handles the termination of nodes in a
way that reaches the new target instance counts"; ``BatchDeleteClusterNodes`` is the API for
"the individual nodes you want to terminate"
(https://docs.aws.amazon.com/sagemaker/latest/dg/smcluster-scale-down.html). A count-only
``UpdateCluster`` back to the old count is used only when no extra instance exists at all (the
increase never launched one), so there is nothing for SageMaker to choose from.

Any exit after step 2 (an error, a timeout, Ctrl-C or SIGTERM) runs step 6 before returning;
signals are held while it runs. Nothing here sets replicas or a count below one.
"""

from __future__ import annotations

import shlex
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from types import FrameType
from typing import Any

from mlcc_constructs.core.rollout.cluster_state import ClusterView, cluster_view, instance_groups
from mlcc_constructs.core.rollout.rules import (
    new_node,
    node_to_remove,
    rollout_done,
    serving_summary,
    surge_problems,
)
from mlcc_constructs.core.support.errors import MlccError, Problem, fail
from mlcc_constructs.ops.kubectl import kubectl

SageMakerClient = Any
"""A boto3 SageMaker client (``boto3.client("sagemaker", ...)``)."""
Log = Callable[[str], None]

# ClusterInstanceGroupDetails (DescribeCluster) members that UpdateCluster's
# ClusterInstanceGroupSpecification takes with the same shape: the group's own settings, sent
# back unchanged with the new InstanceCount (API_UpdateCluster, API_ClusterInstanceGroupDetails
# at https://docs.aws.amazon.com/sagemaker/latest/APIReference/).
_GROUP_SETTINGS = (
    "InstanceGroupName",
    "InstanceType",
    "LifeCycleConfig",
    "ExecutionRole",
    "ThreadsPerCore",
    "InstanceStorageConfigs",
    "OnStartDeepHealthChecks",
    "TrainingPlanArn",
    "OverrideVpcConfig",
    "ScheduledUpdateConfig",
    "CapacityRequirements",
)
DEEP_HEALTH_CHECK_S = 5400.0
"""A deep health check "takes around 60-90 minutes"
(https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-eks-autoscaling-nodeclass.html)."""
KUBECTL_FIX = "check the kube context (kubectl config current-context) and --namespace"


@dataclass(frozen=True, kw_only=True)
class Clock:
    """Time as the waits see it (tests pass a fake one: no test sleeps)."""

    now: Callable[[], float] = time.monotonic
    sleep: Callable[[float], None] = time.sleep


@dataclass(frozen=True, kw_only=True)
class SurgeTimes:
    """How long to wait, in seconds."""

    node: float = 1800.0
    """For the new node (HyperPod provisioning and health checks take minutes)."""
    pods: float = 2700.0
    """For the new pod Ready and the old one gone (a cold start without prefetch took ~15 min;
    the startup probe allows 30)."""
    restore: float = 600.0
    """For the group's target count to be back after the removal."""
    poll: float = 15.0


class Interrupted(BaseException):
    """SIGTERM while a surge runs (Ctrl-C is ``KeyboardInterrupt``)."""


# -- reads -----------------------------------------------------------------------------------


def read_view(*, namespace: str, selector: Mapping[str, str]) -> ClusterView:
    """Nodes and the deployment's pods, from kubectl."""
    nodes = kubectl("get", "nodes", fix=KUBECTL_FIX)
    pods = kubectl(
        "get",
        "pods",
        "--all-namespaces",
        "--field-selector=status.phase!=Succeeded,status.phase!=Failed",
        fix=KUBECTL_FIX,
    )
    return cluster_view(nodes or {}, pods or {}, namespace=namespace, selector=selector)


def read_live_iec(*, name: str, namespace: str) -> dict[str, Any] | None:
    """The live ``InferenceEndpointConfig``, or ``None`` when it does not exist."""
    live: dict[str, Any] | None = kubectl(
        "get",
        "inferenceendpointconfig",
        name,
        "-n",
        namespace,
        "--ignore-not-found",
        fix=KUBECTL_FIX,
    )
    return live


def describe_cluster(sm: SageMakerClient, cluster: str) -> dict[str, Any]:
    """``DescribeCluster``."""
    described: dict[str, Any] = sm.describe_cluster(ClusterName=cluster)
    return described


def group_instances(sm: SageMakerClient, cluster: str, group: str) -> dict[str, dict[str, Any]]:
    """Instance id → ``ClusterNodeSummary`` of every instance of ``group`` (every page;
    ``InstanceGroupNameContains`` is a substring filter, so the name is matched here)."""
    found: dict[str, dict[str, Any]] = {}
    token: str | None = None
    while True:
        kwargs: dict[str, Any] = {"ClusterName": cluster, "InstanceGroupNameContains": group}
        if token:
            kwargs["NextToken"] = token
        page = sm.list_cluster_nodes(**kwargs)
        for node in page.get("ClusterNodeSummaries") or []:
            if node.get("InstanceGroupName") == group:
                found[str(node["InstanceId"])] = node
        token = page.get("NextToken")
        if not token:
            return found


def kubectl_apply(manifest: str) -> Callable[[], None]:
    """The default apply step: ``kubectl apply -f -`` of the rendered YAML."""

    def apply() -> None:
        kubectl("apply", "-f", "-", stdin=manifest, fix=KUBECTL_FIX)

    return apply


def command_apply(argv: list[str]) -> Callable[[], None]:
    """An apply step that runs ``argv`` (its output goes to the terminal); a non-zero exit is
    an error."""

    def apply() -> None:
        done = subprocess.run(argv, check=False, stdout=2)  # stdout stays mlcc's result
        if done.returncode != 0:
            raise fail(
                f"the apply command exited with {done.returncode}",
                where="--apply-command",
                value=shlex.join(argv),
            )

    return apply


# -- the surge -------------------------------------------------------------------------------


def _group_details(described: Mapping[str, Any], group: str) -> dict[str, Any]:
    for details in described.get("InstanceGroups") or []:
        if details.get("InstanceGroupName") == group:
            return dict(details)
    raise fail(f"the cluster has no instance group {group!r}", where="--instance-group")


def _group_spec(details: Mapping[str, Any], count: int) -> dict[str, Any]:
    if count < 1:  # a group that serves is never scaled to zero
        raise fail(f"refusing to set instance group {details.get('InstanceGroupName')!r} to 0")
    spec = {key: details[key] for key in _GROUP_SETTINGS if key in details}
    kubernetes = details.get("KubernetesConfig") or {}
    desired = {
        key: kubernetes[f"Desired{key}"]
        for key in ("Labels", "Taints")
        if kubernetes.get(f"Desired{key}") is not None
    }
    if desired:  # the details show current and desired; the spec takes the desired state
        spec["KubernetesConfig"] = desired
    spec["InstanceCount"] = count
    return spec


def _client_error(error: BaseException) -> bool:
    # By class name (botocore is not imported here); modelled errors subclass ClientError.
    return any(
        c.__name__ == "ClientError" and c.__module__.startswith("botocore")
        for c in type(error).__mro__
    )


class _Signals:
    """SIGINT and SIGTERM during a surge: while ``raising``, either raises :class:`Interrupted`
    (so the restore runs); once the restore starts, they are only recorded (it must finish).
    Main thread only; elsewhere the process's handlers stay."""

    def __init__(self) -> None:
        self.raising = True
        self.received: list[str] = []
        self._previous: dict[int, Any] = {}

    def __enter__(self) -> _Signals:
        if threading.current_thread() is threading.main_thread():
            for number in (signal.SIGINT, signal.SIGTERM):
                self._previous[number] = signal.signal(number, self._handle)
        return self

    def _handle(self, signum: int, _frame: FrameType | None) -> None:
        name = signal.Signals(signum).name
        self.received.append(name)
        if self.raising:
            raise Interrupted(name)

    def __exit__(self, *_: object) -> None:
        for number, previous in self._previous.items():
            signal.signal(number, previous)


@dataclass(kw_only=True)
class Surge:
    """One ``--surge-node`` rollout (module doc). Build it, then :meth:`run`."""

    sm: SageMakerClient
    cluster: str
    group: str
    """The instance group that takes the surge node."""
    namespace: str
    selector: Mapping[str, str]
    replicas: int
    apply: Callable[[], None]
    log: Log
    clock: Clock
    times: SurgeTimes

    def run(self) -> str:
        """Raise the count, apply, wait, restore; returns what the restore did. On any failure
        after the increase, restores and raises one :class:`MlccError` naming the failure and
        the group's state."""
        described = describe_cluster(self.sm, self.cluster)
        details = _group_details(described, self.group)
        group = next(g for g in instance_groups(described) if g.name == self.group)
        before = set(group_instances(self.sm, self.cluster, self.group))
        view = read_view(namespace=self.namespace, selector=self.selector)
        problems = surge_problems(
            group,
            cluster_status=str(described.get("ClusterStatus", "")),
            group_ids=before,
            view=view,
        )
        if problems:
            raise MlccError(problems)
        old_pods = {p.name for p in view.serving}
        original = group.target_count
        if details.get("OnStartDeepHealthChecks") and self.times.node < DEEP_HEALTH_CHECK_S:
            self.log(
                f"instance group {self.group!r} runs deep health checks on new nodes, which take "
                f"60-90 minutes; --node-timeout is {self.times.node:g} s"
            )

        with _Signals() as signals:
            try:
                self.log(f"raising {self._label} from {original} to {original + 1} (UpdateCluster)")
                spec = _group_spec(details, original + 1)
                self.sm.update_cluster(ClusterName=self.cluster, InstanceGroups=[spec])
                node = self._wait_for_node(before)
                self.log(f"new node {node} is Ready; applying")
                self.apply()
                self._wait_for_rollout(old_pods)
            except BaseException as error:
                signals.raising = False  # from here on the restore must finish
                raise self._failed(error, before=before, original=original) from None
            signals.raising = False
            self.log("the new pod is Ready and the old pod is gone; restoring the group's count")
            try:
                done = self._restore(before, original)
            except MlccError:
                raise
            except Exception as error:  # an AWS or kubectl failure: the count is still raised
                raise fail(
                    f"the rollout is done, but restoring the count failed: {error}",
                    where=f"instance group {self.group!r}",
                    fix=self._manual_fix(None),
                ) from None
        self.log(f"{self._label} is back to {original} ({done})")
        return done

    @property
    def _label(self) -> str:
        return f"instance group {self.group!r} of cluster {self.cluster!r}"

    # -- steps -----------------------------------------------------------------------------

    def _wait_for_node(self, before: set[str]) -> str:
        deadline = self.clock.now() + self.times.node
        while True:
            instances = group_instances(self.sm, self.cluster, self.group)
            for instance, summary in sorted(instances.items()):
                status = summary.get("InstanceStatus") or {}
                if instance not in before and status.get("Status") == "Failure":
                    raise fail(
                        f"new instance {instance} failed: {status.get('Message', '')}",
                        where=f"instance group {self.group!r}",
                    )
            view = read_view(namespace=self.namespace, selector=self.selector)
            node = new_node(view, group_ids=instances, before=before)
            if node is not None:
                return node.name
            if self.clock.now() >= deadline:
                raise fail(
                    f"no new node of instance group {self.group!r} became Ready within "
                    f"{self.times.node:g} s",
                    where="--node-timeout",
                )
            self.clock.sleep(self.times.poll)

    def _wait_for_rollout(self, old_pods: set[str]) -> None:
        deadline = self.clock.now() + self.times.pods
        while True:
            view = read_view(namespace=self.namespace, selector=self.selector)
            if rollout_done(view, old_pods=old_pods, replicas=self.replicas):
                return
            if self.clock.now() >= deadline:
                raise fail(
                    f"the new pod was not Ready, or the old pod not gone, within "
                    f"{self.times.pods:g} s (serving pods: {serving_summary(view)})",
                    where="--pod-timeout",
                    fix="the new configuration stays applied; `kubectl describe pod` says why "
                    "the new pod is not Ready",
                )
            self.clock.sleep(self.times.poll)

    def _restore(self, before: set[str], original: int) -> str:
        """Bring the group back to ``original`` by removing one instance (module doc) and wait
        for the target count; returns what was done, or raises when it cannot be done safely."""
        target = self._target_count()
        if target <= original:
            return "its count was never raised"
        instances = group_instances(self.sm, self.cluster, self.group)
        new_ids = set(instances) - before
        view = read_view(namespace=self.namespace, selector=self.selector)
        removal = node_to_remove(view, group_ids=instances, new_ids=new_ids)
        if removal is not None:
            name = removal.node or removal.instance_id
            self.log(f"removing {name} ({removal.reason}) (BatchDeleteClusterNodes)")
            answer = self.sm.batch_delete_cluster_nodes(
                ClusterName=self.cluster, NodeIds=[removal.instance_id]
            )
            for failed in answer.get("Failed") or []:
                raise fail(
                    f"BatchDeleteClusterNodes refused {failed.get('NodeId')}: "
                    f"{failed.get('Code')}: {failed.get('Message')}",
                    where=f"instance group {self.group!r}",
                    fix=self._manual_fix(removal.instance_id),
                )
            done = f"removed {name}: {removal.reason}"
        elif not new_ids:
            # No extra instance exists: lowering the target leaves SageMaker nothing to choose.
            self.log(f"no new instance was launched; setting the count back to {original}")
            details = _group_details(describe_cluster(self.sm, self.cluster), self.group)
            self.sm.update_cluster(
                ClusterName=self.cluster, InstanceGroups=[_group_spec(details, original)]
            )
            done = "no new instance had been launched"
        else:
            raise fail(
                "no node of the group can be removed safely: each hosts a Ready serving pod or "
                f"is the last Ready node (serving pods: {serving_summary(view)})",
                where=f"instance group {self.group!r}",
                fix=self._manual_fix(None),
            )
        deadline = self.clock.now() + self.times.restore
        while (count := self._target_count()) > original:
            if self.clock.now() >= deadline:
                raise fail(
                    f"the group's target count is still {count} after the removal ({done}), "
                    f"expected {original}",
                    where=f"instance group {self.group!r}",
                    fix=f"check `aws sagemaker describe-cluster --cluster-name {self.cluster}`",
                )
            self.clock.sleep(self.times.poll)
        return done

    # -- failures --------------------------------------------------------------------------

    def _target_count(self) -> int:
        details = _group_details(describe_cluster(self.sm, self.cluster), self.group)
        return int(details.get("TargetCount", 0))

    def _manual_fix(self, instance: str | None) -> str:
        return (
            "once the node hosts no serving pod, run `aws sagemaker batch-delete-cluster-nodes "
            f"--cluster-name {self.cluster} --node-ids {instance or '<instance id>'}` "
            f"(instance group {self.group!r} is one above its count)"
        )

    def _failed(self, error: BaseException, *, before: set[str], original: int) -> MlccError:
        if isinstance(error, MlccError):
            first = list(error.problems)
        elif isinstance(error, KeyboardInterrupt | Interrupted):
            name = str(error) or "SIGINT"
            first = [Problem(message=f"interrupted ({name}) during the surge rollout")]
        elif _client_error(error):
            first = [Problem(message=str(error))]  # AWS's words, verbatim
        else:
            first = [Problem(message=f"{type(error).__name__}: {error}")]
        self.log(f"restoring {self._label} to {original} after: {first[0]}")
        try:
            done = self._restore(before, original)
        except MlccError as restore_error:
            return MlccError([*first, *restore_error.problems])
        except Exception as restore_error:
            problem = Problem(
                message=f"restoring the count failed: {restore_error}",
                where=f"instance group {self.group!r}",
                fix=self._manual_fix(None),
            )
            return MlccError([*first, problem])
        last = first[-1]
        state = f"instance group {self.group!r} is at its count of {original} ({done})"
        return MlccError(
            [*first[:-1], replace(last, fix=f"{last.fix}; {state}" if last.fix else state)]
        )
