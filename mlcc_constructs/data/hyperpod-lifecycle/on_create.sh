#!/bin/bash
# mlcc-constructs: the OnCreate lifecycle script of every HyperPod instance group (EKS
# orchestrator). HyperPod runs it as root on each new node before the node joins the cluster.
#
# Engine images are 10-20 GB and model weights are cached beside them, so containerd's data
# root and kubelet's state (pod volumes, emptyDirs) move off the root volume onto the node's
# secondary storage: the NVMe instance store at /opt/dlami/nvme when the instance has one,
# else the instance group's extra EBS volume that HyperPod mounts at /opt/sagemaker. With
# neither mounted, or on an OS this script does not know, it changes nothing and exits 0:
# a failing lifecycle script fails the node's creation, while a node that keeps its state on
# the root volume still works (as before this script), and the log says why.
#
# Facts (no code taken from them):
# - The two mount points, the containerd data root under them, kubelet's state moved by a
#   /var/lib/kubelet symlink, seeding the new data root from /var/lib/containerd, and the
#   AL2 config file: AWS's reference HyperPod EKS lifecycle scripts,
#   https://github.com/aws-samples/awsome-distributed-training/blob/main/1.architectures/7.sagemaker-hyperpod-eks/LifecycleScripts/base-config/on_create_main.sh
# - Amazon Linux 2 (os-release ID=amzn VERSION_ID=2): bootstrap.sh copies
#   /etc/eks/containerd/containerd-config.toml (top-level root = "/var/lib/containerd") to
#   /etc/containerd/config.toml and restarts containerd,
#   https://github.com/awslabs/amazon-eks-ami/blob/0ab842803d827b8087d78dd2eff0bc408caec771/templates/al2/runtime/bootstrap.sh
# - Amazon Linux 2023 (ID=amzn VERSION_ID=2023, the EKS node images of Kubernetes 1.33+):
#   nodeadm rewrites /etc/containerd/config.toml on every `nodeadm init` (so an edit there
#   does not last), containerd.service runs /usr/bin/containerd with drop-ins in
#   /etc/systemd/system/containerd.service.d/, kubelet keeps its kubeconfig in
#   /var/lib/kubelet and its config in /etc/kubernetes/kubelet/config.json,
#   https://github.com/awslabs/amazon-eks-ami/tree/main/nodeadm/internal/containerd and
#   https://github.com/awslabs/amazon-eks-ami/tree/main/templates/al2023/runtime/rootfs/etc/systemd/system
# - containerd's --root flag overrides the config file's root (containerd 1.x and 2.x),
#   https://github.com/containerd/containerd/blob/main/cmd/containerd/command/main.go
# - kubelet's root dir is a command-line flag only, and CSI node plugins mount
#   /var/lib/kubelet by that path, so its path stays and its storage moves (a symlink).
#
# Testing: MLCC_ROOT (default empty: the real /) prefixes every path the script reads or
# writes; file contents and the symlink name the node's own paths. `mountpoint` and
# `systemctl` are called through is_mounted and reload_units, so a test can put stand-ins
# first on PATH. MLCC_MOUNT_WAIT_SECONDS (default 60) bounds the wait for the mounts.
set -euo pipefail

root="${MLCC_ROOT:-}"
root="${root%/}"
mount_wait="${MLCC_MOUNT_WAIT_SECONDS:-60}"

readonly nvme=/opt/dlami/nvme
readonly volume=/opt/sagemaker
readonly al2_containerd_config=/etc/eks/containerd/containerd-config.toml
readonly containerd_dropin=/etc/systemd/system/containerd.service.d/50-mlcc-data-root.conf
readonly containerd_default_root=/var/lib/containerd
readonly kubelet_dir=/var/lib/kubelet

log_dir="$root/var/log/provision"
mkdir -p "$log_dir"
exec >>"$log_dir/mlcc-on-create.log" 2>&1

log() {
    echo "$(date -u +%FT%TZ) mlcc on_create: $*"
}

is_mounted() {
    mountpoint -q "$root$1"
}

reload_units() {
    systemctl daemon-reload
}

# The value of KEY in /etc/os-release, unquoted (the file is read, never sourced).
os_release() {
    local key=$1 line value=""
    while IFS= read -r line || [ -n "$line" ]; do
        case $line in
            "$key="*) value=${line#*=} ;;
        esac
    done <"$root/etc/os-release"
    value=${value#[\"\']}
    value=${value%[\"\']}
    printf '%s' "$value"
}

# Write CONTENT to FILE unless it already holds exactly that; sets wrote=yes when it wrote.
wrote=no
write_if_changed() {
    local file=$1 content=$2
    wrote=no
    if [ -f "$file" ] && [ "$(cat "$file")" = "$content" ]; then
        return 0
    fi
    mkdir -p "$(dirname "$file")"
    printf '%s\n' "$content" >"$file.mlcc-tmp"
    mv "$file.mlcc-tmp" "$file"
    wrote=yes
}

# Set the top-level `root = ...` of a containerd TOML config (the line before the first
# [table]; a commented-out one is replaced too, a missing one is added at the top level).
set_toml_root() {
    local file=$1 data_root=$2 updated
    updated=$(awk -v line="root = \"$data_root\"" '
        !done && /^[[:space:]]*\[/ { print line; done = 1 }
        !done && /^[#[:space:]]*root[[:space:]]*=/ { print line; done = 1; next }
        { print }
        END { if (!done) print line }
    ' "$file")
    write_if_changed "$file" "$updated"
}

log "start"

if [ ! -f "$root/etc/os-release" ]; then
    log "no /etc/os-release: unknown OS, containerd and kubelet stay on the root volume"
    exit 0
fi
os_id=$(os_release ID)
os_version=$(os_release VERSION_ID)
case "$os_id-$os_version" in
    amzn-2) layout=al2 ;;
    amzn-2023) layout=al2023 ;;
    *)
        log "unsupported OS ID=$os_id VERSION_ID=$os_version (only Amazon Linux 2 and 2023):" \
            "containerd and kubelet stay on the root volume"
        exit 0
        ;;
esac
log "OS: ID=$os_id VERSION_ID=$os_version ($layout layout)"

# HyperPod may still be mounting the volume: wait for either mount, up to $mount_wait s.
disk=""
waited=0
while :; do
    if is_mounted "$nvme"; then
        disk=$nvme
    elif is_mounted "$volume"; then
        disk=$volume
    fi
    if [ -n "$disk" ] || [ "$waited" -ge "$mount_wait" ]; then
        break
    fi
    sleep 5
    waited=$((waited + 5))
done
if [ -z "$disk" ]; then
    log "neither $nvme nor $volume is a mount point (waited ${waited}s):" \
        "containerd and kubelet stay on the root volume"
    exit 0
fi
log "secondary storage: $disk"

data_root="$disk/containerd/data-root"
kubelet_state="$disk/kubelet"

# State from another OS (the volume outlived a root-volume replacement) is not reused.
os_marker="$root$disk/.mlcc-node-os"
if [ -f "$os_marker" ]; then
    previous_os=$(cat "$os_marker")
    if [ "$previous_os" != "$os_id-$os_version" ]; then
        log "$disk holds state of $previous_os: removing $data_root and $kubelet_state"
        rm -rf "$root$data_root" "$root$kubelet_state"
    fi
fi
write_if_changed "$os_marker" "$os_id-$os_version"

# containerd: seed the new data root once from the image's own (it may hold the cached
# pause image), copying to a temporary name first so an interrupted copy is redone.
if [ ! -d "$root$data_root" ]; then
    mkdir -p "$root$disk/containerd"
    rm -rf "$root$data_root.partial"
    if [ -d "$root$containerd_default_root" ]; then
        cp -a "$root$containerd_default_root" "$root$data_root.partial"
        log "copied $containerd_default_root to $data_root"
    else
        mkdir "$root$data_root.partial"
    fi
    mv "$root$data_root.partial" "$root$data_root"
fi

case $layout in
    al2)
        if [ -f "$root$al2_containerd_config" ]; then
            set_toml_root "$root$al2_containerd_config" "$data_root"
            if [ "$wrote" = yes ]; then
                log "containerd data root: $data_root (set in $al2_containerd_config)"
            else
                log "containerd data root: $data_root (already set in $al2_containerd_config)"
            fi
        else
            log "no $al2_containerd_config: containerd keeps its default data root"
        fi
        ;;
    al2023)
        dropin="# mlcc-constructs on_create.sh: containerd's data root on $disk
[Service]
ExecStart=
ExecStart=/usr/bin/containerd --root $data_root"
        write_if_changed "$root$containerd_dropin" "$dropin"
        if [ "$wrote" = yes ]; then
            reload_units
            log "containerd data root: $data_root (set in $containerd_dropin)"
        else
            log "containerd data root: $data_root (already set in $containerd_dropin)"
        fi
        ;;
esac

# kubelet: /var/lib/kubelet becomes a symlink to the secondary storage, keeping what the
# image put there (the kubeconfig).
if [ -L "$root$kubelet_dir" ]; then
    current=$(readlink "$root$kubelet_dir")
    if [ "$current" = "$kubelet_state" ]; then
        log "kubelet state: $kubelet_state (already linked from $kubelet_dir)"
    else
        log "$kubelet_dir already links to $current: left as it is"
    fi
else
    mkdir -p "$root$kubelet_state"
    if [ -d "$root$kubelet_dir" ]; then
        cp -a "$root$kubelet_dir/." "$root$kubelet_state/"
        rm -rf "$root$kubelet_dir"
    fi
    mkdir -p "$(dirname "$root$kubelet_dir")"
    ln -s "$kubelet_state" "$root$kubelet_dir"
    log "kubelet state: $kubelet_state (linked from $kubelet_dir)"
fi

log "done"
