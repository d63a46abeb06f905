"""``mlcc rollout check|apply``: roll an InferenceEndpointConfig out on a HyperPod cluster
without running out of GPUs (seed lora-delivery §4).

Both read the deployment exactly as ``mlcc render`` does (``-f`` and the same flags), so the
IEC they compare and apply is the one ``mlcc render`` prints. ``check`` only reads (kubectl:
the live IEC, nodes and pods; SageMaker: ``DescribeCluster``); it exits 1 when the rollout
needs a surge node, printing the ``apply ... --surge-node`` command and what it costs.
``apply`` runs the same check and applies when the pods can roll; ``--surge-node`` lets it
add the node first (``ops/rollout.py``). One command for both, rather than a flag on
``mlcc render``: render stays pure, and the check a reviewer runs is the one apply runs.
"""

from __future__ import annotations

import argparse
import re
import shlex
import shutil
import sys
from typing import Any

from mlcc_constructs.cli._parser import add_format_option, emit
from mlcc_constructs.core.support.errors import MlccError, fail

# DescribeCluster's ClusterName: a name or an ARN
# (https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_DescribeCluster.html).
_CLUSTER = re.compile(
    r"^(arn:aws[a-z\-]*:sagemaker:[a-z0-9\-]*:[0-9]{12}:cluster/[a-z0-9]{12})$"
    r"|^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$"
)
_GROUP = re.compile(r"^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$")
_SKIPPED = ("surge_node",)  # not repeated in the printed command (it is appended)


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from mlcc_constructs.cli.render import add_spec_options
    from mlcc_constructs.core.rollout.rules import rollout_targets

    parser = subparsers.add_parser(
        "rollout",
        help="check and apply an InferenceEndpointConfig rollout on a HyperPod cluster",
        description="Roll a hyperpod-eks deployment out without running out of GPUs: a changed "
        "pod template needs room for a surge pod, which a single-node instance group whose "
        "GPUs the serving pod takes does not have.",
    )
    commands = parser.add_subparsers(dest="rollout_command", metavar="SUBCOMMAND", required=True)
    check = commands.add_parser(
        "check",
        help="say whether applying rolls the pods and whether they fit (reads only)",
        description="Compare the rendered IEC with the live one and the GPUs free on the "
        "nodes; exit 1 (nothing applied) when the rollout needs a surge node, printing the "
        "command to run with --surge-node and what it costs.",
    )
    apply = commands.add_parser(
        "apply",
        help="check, then apply the rendered IEC (with --surge-node: add a node first)",
        description="Run the check; apply when the pods can roll. With --surge-node, when "
        "they cannot: raise the instance group by one node, wait for it, apply, wait for the "
        "new pod Ready and the old pod gone, then remove the vacated node. Any exit after the "
        "increase restores the group's count.",
    )
    targets = rollout_targets()
    for sub in (check, apply):
        add_spec_options(sub)
        _default_target(sub, targets)
        sub.add_argument(
            "--cluster",
            required=True,
            help="the HyperPod cluster (name or ARN) in --region (default: boto3's region)",
        )
        sub.add_argument(
            "--instance-group",
            default=None,
            help="the instance group that takes a surge node (default: the only group of the "
            "IEC's instance type)",
        )
        sub.add_argument(
            "--selector",
            default=None,
            metavar="KEY=VALUE[,...]",
            help="labels of the serving pods in the namespace (default: the target's pod name "
            "label, app=<name> on hyperpod-eks, set by the inference operator)",
        )
        add_format_option(sub, default="table")
        sub.set_defaults(command_parser=sub)
    check.set_defaults(func=run_check)
    apply.add_argument(
        "--surge-node",
        action="store_true",
        help="when the surge pod cannot schedule, add one node of the instance type for the "
        "rollout's duration (costs that node's price while it runs)",
    )
    apply.add_argument(
        "--node-timeout",
        type=float,
        default=1800.0,
        metavar="SECONDS",
        help="how long to wait for the surge node to be Ready (default: 1800)",
    )
    apply.add_argument(
        "--pod-timeout",
        type=float,
        default=2700.0,
        metavar="SECONDS",
        help="how long to wait for the new pod Ready and the old pod gone (default: 2700)",
    )
    apply.add_argument(
        "--apply-command",
        default=None,
        metavar="COMMAND",
        help="run this instead of `kubectl apply -f -` of the rendered objects, e.g. "
        "'npx cdk deploy mlcc-dev-serving' when CloudFormation owns the IEC",
    )
    apply.set_defaults(func=run_apply)


def _default_target(parser: argparse.ArgumentParser, targets: list[str]) -> None:
    """Default ``--target`` to the one target that renders an InferenceEndpointConfig, for a
    spec that sets none (``mlcc render``'s default, eks, renders none); with several, a spec
    or the flag must choose."""
    (option,) = (a for a in parser._actions if "--target" in a.option_strings)
    if len(targets) == 1:
        parser.set_defaults(spec_defaults={"target": targets[0]})
        option.help = (
            f"the deployment's target (default: the spec's, else {targets[0]}, the target "
            "whose objects hold the InferenceEndpointConfig rolled out)"
        )
    else:
        option.help = f"the deployment's target: one of {', '.join(targets)}"


def _clock() -> Any:
    from mlcc_constructs.ops.rollout import Clock

    return Clock()


def _sagemaker(region: str | None) -> Any:
    import boto3  # type: ignore[import-untyped]

    return boto3.client("sagemaker", region_name=region)


def surge_command(args: argparse.Namespace) -> str:
    """``mlcc rollout apply <the options given> --surge-node``, from the parsed options."""
    parser: argparse.ArgumentParser = args.command_parser
    words = ["mlcc", "rollout", "apply"]
    for action in parser._actions:
        if not action.option_strings or action.dest in _SKIPPED:
            continue
        value = getattr(args, action.dest, None)
        if value is None or value == action.default or value is False:
            continue
        flag = action.option_strings[-1]
        if value is True:
            words.append(flag)
        elif isinstance(value, list):
            for item in value:
                words += [flag, str(item)]
        else:
            words += [flag, str(value)]
    return shlex.join([*words, "--surge-node"])


def _log(message: str) -> None:
    print(f"mlcc: {message}", file=sys.stderr)


class _Plan:
    """Everything read and checked before anything changes."""

    def __init__(self, args: argparse.Namespace) -> None:
        from mlcc_constructs.cli._common import registry_from
        from mlcc_constructs.cli.render import build_spec
        from mlcc_constructs.core.platform.targets import load_target
        from mlcc_constructs.core.rollout.cluster_state import parse_selector
        from mlcc_constructs.core.rollout.rules import require_rendered_iec
        from mlcc_constructs.core.serving.render import render

        if not _CLUSTER.match(args.cluster):
            raise fail(
                "not a HyperPod cluster name or ARN",
                where="--cluster",
                value=args.cluster,
                allowed="letters, digits and '-', at most 63; or a cluster ARN",
            )
        if args.instance_group is not None and not _GROUP.match(args.instance_group):
            raise fail(
                "not an instance group name",
                where="--instance-group",
                value=args.instance_group,
                allowed="letters, digits and '-', at most 63",
            )
        loaded, context = build_spec(args)
        try:
            rendered = render(loaded.spec, context=context, registry=registry_from(args))
        except MlccError as error:
            raise loaded.locate(error) from None
        for note in rendered.warnings:
            _log(note)
        self.objects = rendered.objects
        self.iec = require_rendered_iec(rendered.objects, target=loaded.spec.target)
        self.name = str(self.iec["metadata"]["name"])
        self.namespace = str(self.iec["metadata"]["namespace"])
        self.replicas = int(self.iec["spec"].get("replicas") or 1)
        self.selector = parse_selector(
            args.selector
            if args.selector is not None
            else load_target(loaded.spec.target).pod_selector(self.name)
        )
        self.region = context.region
        if shutil.which("kubectl") is None:
            raise fail("kubectl is not on PATH", fix="install kubectl and select the cluster")

    def check(self, args: argparse.Namespace) -> Any:
        from mlcc_constructs.core.rollout.cluster_state import instance_groups
        from mlcc_constructs.core.rollout.rules import check_rollout
        from mlcc_constructs.ops.rollout import describe_cluster, read_live_iec, read_view

        self.sm = _sagemaker(self.region)
        live = read_live_iec(name=self.name, namespace=self.namespace)
        view = read_view(namespace=self.namespace, selector=self.selector)
        groups = instance_groups(describe_cluster(self.sm, args.cluster))
        return check_rollout(
            rendered=self.iec,
            live=live,
            view=view,
            groups=groups,
            cluster=args.cluster,
            instance_group=args.instance_group,
        )


def _guarded(args: argparse.Namespace, run: Any) -> int:
    """Run ``run``: an AWS error becomes an ``mlcc: error:`` line (verbatim), and so does an
    interrupt before anything changed (the surge handles its own)."""
    from mlcc_constructs.ops.rollout import Interrupted

    try:
        code: int = run(args)
    except (KeyboardInterrupt, Interrupted):
        raise fail("interrupted", fix="re-run `mlcc rollout check` to see the state") from None
    except Exception as error:
        if type(error).__module__.split(".")[0] not in ("botocore", "boto3"):
            raise
        raise fail(
            f"SageMaker: {error}",
            where="--cluster",
            fix="check AWS credentials, --region and --cluster",
        ) from None
    return code


def run_check(args: argparse.Namespace) -> int:
    return _guarded(args, _check)


def _check(args: argparse.Namespace) -> int:
    from mlcc_constructs.core.rollout.rules import stop_problem

    plan = _Plan(args)
    result = plan.check(args)
    if result.action == "surge":
        raise MlccError(
            stop_problem(result, cluster=args.cluster, surge_command=surge_command(args))
        )
    _print(args, result.action, result.summary)
    return 0


def run_apply(args: argparse.Namespace) -> int:
    return _guarded(args, _apply)


def _apply(args: argparse.Namespace) -> int:
    from mlcc_constructs.core.rollout.rules import stop_problem
    from mlcc_constructs.core.support.yaml_output import to_yaml
    from mlcc_constructs.ops.rollout import Surge, SurgeTimes, command_apply, kubectl_apply

    for option in ("node_timeout", "pod_timeout"):
        if not getattr(args, option) > 0:
            flag = "--" + option.replace("_", "-")
            raise fail(
                "must be a positive number of seconds", where=flag, value=getattr(args, option)
            )
    argv = shlex.split(args.apply_command) if args.apply_command is not None else None
    if argv is not None and (not argv or shutil.which(argv[0]) is None):
        raise fail(
            "the apply command is not on PATH",
            where="--apply-command",
            value=args.apply_command,
            fix="give a command line whose program is on PATH",
        )
    plan = _Plan(args)
    apply_step = command_apply(argv) if argv else kubectl_apply(to_yaml(plan.objects))
    result = plan.check(args)
    if result.action != "surge":
        if args.surge_node:
            _log(f"--surge-node is not needed: {result.summary}")
        apply_step()
        _print(args, result.action, f"{result.summary}; applied", applied=True)
        return 0
    if not args.surge_node:
        raise MlccError(
            stop_problem(result, cluster=args.cluster, surge_command=surge_command(args))
        )
    assert result.group is not None  # a surge check names its group
    done = Surge(
        sm=plan.sm,
        cluster=args.cluster,
        group=result.group.name,
        namespace=plan.namespace,
        selector=plan.selector,
        replicas=plan.replicas,
        apply=apply_step,
        log=_log,
        clock=_clock(),
        times=SurgeTimes(node=args.node_timeout, pods=args.pod_timeout),
    ).run()
    _print(
        args, result.action, f"{result.summary}; applied with a surge node ({done})", applied=True
    )
    return 0


def _print(args: argparse.Namespace, action: str, summary: str, *, applied: bool = False) -> None:
    document: dict[str, Any] = {"action": action, "summary": summary}
    if args.rollout_command == "apply":
        document["applied"] = applied
    emit(args, document, table=lambda: f"{summary}\n")
