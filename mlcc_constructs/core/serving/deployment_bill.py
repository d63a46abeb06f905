"""What a prepared deployment, and the app around it, runs by the hour: the
:class:`~mlcc_constructs.core.platform.bill.BillItem` s priced by
:func:`~mlcc_constructs.core.platform.bill.price_bill`.

Counted per deployment (:func:`deployment_items`):

* **Instances**, where the target launches the deployment's own GPU nodes (its manifest's
  ``cluster_gpu_nodes``: EKS Auto Mode EC2 instances, priced at EC2 on-demand Linux rates): the
  preferred instance type x replicas x nodes per copy (``nodes``: a model over several nodes
  bills every node of its group). Replicas are the fixed ``replicas``, or ``min..max`` when
  autoscaled (``0..max`` with ``scale_to_zero``). Beside them, Auto Mode's management fee per
  instance, the same count.
* **Its load balancer**: one Application Load Balancer per exposed deployment (``endpoint.scheme``
  not ``none``), or one per ``endpoint.group`` of a scheme, shared (the IngressClass of a group
  makes one ALB; the HyperPod operator makes one per InferenceEndpointConfig and takes no group).

Not counted per deployment: the nodes of a target whose platform provides them (HyperPod: the
cluster's instance groups, priced once by :func:`app_bill`); a rollout's surge node; fallback
instance types. :func:`app_bill` adds what the app runs once: the EKS cluster, its NAT gateways
and interface endpoints, the HyperPod cluster's instance groups.
"""

from __future__ import annotations

from collections.abc import Sequence

from mlcc_constructs.core.platform.app_settings import AppEnvironment, EgressSettings
from mlcc_constructs.core.platform.bill import BillItem, PriceReport, price_bill
from mlcc_constructs.core.platform.prices import PriceKind, PriceTable
from mlcc_constructs.core.platform.vpc_network import INTERFACE_ENDPOINTS
from mlcc_constructs.core.serving.prepared import PreparedDeployment

CLUSTER = "cluster"
HYPERPOD = "hyperpod cluster"
_ML = "ml."


def owner(prepared: PreparedDeployment) -> str:
    """How a bill names a deployment: ``<target> <namespace>/<name>`` (its identity)."""
    return f"{prepared.target.name} {prepared.spec.namespace}/{prepared.names.base}"


def replica_range(prepared: PreparedDeployment) -> tuple[int, int]:
    """The fewest and most replicas: fixed, or the autoscaler's bounds (0 with scale to zero)."""
    low = 0 if prepared.scales_to_zero else prepared.min_replicas
    return low, prepared.max_replicas


def deployment_items(prepared: PreparedDeployment, *, load_balancer: bool = True) -> list[BillItem]:
    """The hourly items of one deployment (module doc); ``load_balancer=False`` leaves its load
    balancer to the caller (:func:`app_bill` counts a group's once)."""
    who = owner(prepared)
    items: list[BillItem] = []
    if prepared.target.cluster_gpu_nodes:
        instance = prepared.instance_types[0].node_name
        low, high = replica_range(prepared)
        nodes = prepared.resolution.nodes
        note = _replica_note(prepared, low, high) + (f" x {nodes} nodes" if nodes > 1 else "")
        kinds: tuple[PriceKind, ...] = ("ec2_instance", "auto_mode_fee")
        for kind in kinds:
            items.append(
                BillItem(
                    kind=kind,
                    item=instance,
                    owner=who,
                    low=low * nodes,
                    high=high * nodes,
                    note=note,
                )
            )
    if load_balancer and prepared.spec.endpoint.exposed:
        items.append(_load_balancer(who, prepared, shared_by=()))
    return items


def deployment_notes(prepared: PreparedDeployment) -> list[str]:
    """What a deployment's own bill does not hold: the nodes a platform provides."""
    if prepared.target.cluster_gpu_nodes:
        return []
    return [
        f"{owner(prepared)} runs on nodes the {prepared.target.name} platform provides (the "
        "HyperPod cluster's instance groups): they are priced with that cluster, not per "
        "deployment"
    ]


def deployment_bill(
    prepared: PreparedDeployment, *, region: str | None = None, table: PriceTable | None = None
) -> PriceReport:
    """The price of one deployment (what ``mlcc plan`` shows): its instances, Auto Mode fees
    and load balancer, in ``region`` (default: the deployment's cluster region, else its model
    bucket's; unknown: nothing priced, and the report says why)."""
    region = region or prepared.cluster_region or prepared.model_region
    return price_bill(
        deployment_items(prepared),
        region=region,
        notes=deployment_notes(prepared),
        table=table,
    )


def app_bill(
    deployments: Sequence[PreparedDeployment],
    *,
    nat_gateways: int,
    region: str | None,
    hyperpod_instance_groups: Sequence[tuple[str, int]] = (),
    vpc_interface_endpoints: int = 0,
    table: PriceTable | None = None,
) -> PriceReport:
    """The price of the whole app in ``region``: one EKS cluster, ``nat_gateways`` NAT gateways,
    ``vpc_interface_endpoints`` interface endpoints (each endpoint in each zone counts one),
    the HyperPod cluster's ``hyperpod_instance_groups`` (instance type, count: ``ml.`` name or
    not), then each deployment's items (module doc), a grouped load balancer counted once."""
    if nat_gateways < 0 or vpc_interface_endpoints < 0:
        raise ValueError("a bill counts 0 or more NAT gateways and interface endpoints")
    items = [BillItem(kind="eks_cluster", item="standard-support", owner=CLUSTER, low=1, high=1)]
    shared: tuple[tuple[PriceKind, str, int], ...] = (
        ("nat_gateway", "nat-gateway", nat_gateways),
        ("vpc_interface_endpoint", "interface-endpoint", vpc_interface_endpoints),
    )
    for kind, item, count in shared:
        if count:
            items.append(BillItem(kind=kind, item=item, owner=CLUSTER, low=count, high=count))
    for instance_type, count in hyperpod_instance_groups:
        name = instance_type if instance_type.startswith(_ML) else _ML + instance_type
        items.append(
            BillItem(kind="hyperpod_instance", item=name, owner=HYPERPOD, low=count, high=count)
        )
    groups: dict[tuple[str, str], list[PreparedDeployment]] = {}
    notes: list[str] = []
    for prepared in deployments:
        items += deployment_items(prepared, load_balancer=False)
        notes += deployment_notes(prepared)
        endpoint = prepared.spec.endpoint
        if not endpoint.exposed:
            continue
        if endpoint.group is None:
            items.append(_load_balancer(owner(prepared), prepared, shared_by=()))
        else:
            groups.setdefault((endpoint.scheme, endpoint.group), []).append(prepared)
    for (scheme, group), members in groups.items():
        who = f"load balancer group {scheme}/{group}"
        items.append(_load_balancer(who, members[0], shared_by=members))
    if not hyperpod_instance_groups and any(not d.target.cluster_gpu_nodes for d in deployments):
        notes.append("no HyperPod instance groups were given: the HyperPod cluster is not priced")
    return price_bill(items, region=region, notes=notes, table=table)


def _load_balancer(
    who: str, prepared: PreparedDeployment, *, shared_by: Sequence[PreparedDeployment]
) -> BillItem:
    endpoint = prepared.spec.endpoint
    if shared_by:
        note = f"{endpoint.scheme}, shared by " + ", ".join(owner(d) for d in shared_by)
    elif endpoint.group is not None:
        note = f"{endpoint.scheme}, endpoint.group {endpoint.group}: one for the whole group"
    else:
        note = endpoint.scheme
    return BillItem(kind="load_balancer", item="application", owner=who, low=1, high=1, note=note)


def _replica_note(prepared: PreparedDeployment, low: int, high: int) -> str:
    if prepared.spec.scaling.autoscaling is None:
        return f"{high} replica" + ("s" if high != 1 else "")
    how = "autoscaled, to zero when idle" if prepared.scales_to_zero else "autoscaled"
    return f"{low}..{high} replicas, {how}"


def environment_bill(
    deployments: Sequence[PreparedDeployment],
    *,
    environment: AppEnvironment,
    egress: EgressSettings,
    hyperpod_instance_groups: Sequence[tuple[str, int]] = (),
) -> PriceReport:
    """:func:`app_bill` of one environment's stacks (the app's, a fleet stage's): its region,
    its NAT gateways and the cluster VPC's interface endpoints, one per service and zone."""
    return app_bill(
        deployments,
        nat_gateways=egress.nat_gateways,
        region=environment.region,
        hyperpod_instance_groups=hyperpod_instance_groups,
        vpc_interface_endpoints=len(INTERFACE_ENDPOINTS) * len(environment.availability_zones),
    )
