#!/bin/bash
# mlcc-constructs: the OnCreate lifecycle script of every HyperPod instance group (EKS
# orchestrator). HyperPod runs it as root on each new node before the node joins the cluster.
#
# Engine images are 10-20 GB and model weights are cached beside them: when the instance
# group has its extra EBS volume (mounted by HyperPod at /opt/sagemaker), containerd keeps its
# images there instead of on the root volume.
set -euo pipefail

log_dir=/var/log/provision
mkdir -p "$log_dir"
exec >>"$log_dir/mlcc-on-create.log" 2>&1
echo "$(date -u +%FT%TZ) mlcc on_create: start"

containerd_config=/etc/eks/containerd/containerd-config.toml
if mountpoint -q /opt/sagemaker && [ -f "$containerd_config" ]; then
    data_root=/opt/sagemaker/containerd/data-root
    mkdir -p "$data_root"
    # Replace the (possibly commented-out) top-level "root = ..." line of the config.
    sed -i -E "s|^[#[:space:]]*root[[:space:]]*=.*$|root = \"$data_root\"|" "$containerd_config"
    echo "containerd data root: $data_root"
else
    echo "no /opt/sagemaker volume: containerd keeps its default data root"
fi

echo "$(date -u +%FT%TZ) mlcc on_create: done"
