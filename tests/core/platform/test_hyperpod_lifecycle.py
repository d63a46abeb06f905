"""The HyperPod OnCreate lifecycle script
(``mlcc_constructs/data/hyperpod-lifecycle/on_create.sh``), run for real with bash against
stand-in node file trees: ``MLCC_ROOT`` points the script at the tree, and stand-in
``mountpoint``/``systemctl`` first on PATH say which mounts exist and record the systemd
calls. No hardware, no root."""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from mlcc_constructs.core.platform.hyperpod import ON_CREATE, lifecycle_dir

SCRIPT = lifecycle_dir() / ON_CREATE
AL2 = 'NAME="Amazon Linux"\nVERSION="2"\nID="amzn"\nID_LIKE="centos rhel fedora"\nVERSION_ID="2"\n'
AL2023 = 'NAME="Amazon Linux"\nVERSION="2023"\nID="amzn"\nID_LIKE="fedora"\nVERSION_ID="2023"\n'
UBUNTU = 'NAME="Ubuntu"\nID=ubuntu\nVERSION_ID="22.04"\n'
# The AL2 EKS image's containerd config (amazon-eks-ami templates/al2/runtime), abridged,
# with a nested "root" that must stay.
AL2_CONFIG = """version = 2
root = "/var/lib/containerd"
state = "/run/containerd"
imports = ["/etc/containerd/config.d/*.toml"]

[grpc]
address = "/run/containerd/containerd.sock"

[proxy_plugins.soci.exports]
root = "/var/lib/soci-snapshotter-grpc"
"""
AL2023_CONFIG = 'version = 2\nroot = "/var/lib/containerd"\nstate = "/run/containerd"\n'
AL2_CONFIG_PATH = "etc/eks/containerd/containerd-config.toml"
DROPIN = "etc/systemd/system/containerd.service.d/50-mlcc-data-root.conf"
LOG = "var/log/provision/mlcc-on-create.log"
NVME = "/opt/dlami/nvme"
VOLUME = "/opt/sagemaker"
ROOT_LINE = 'root = "/opt/sagemaker/containerd/data-root"'

MOUNTPOINT = """#!/bin/bash
# stand-in: `mountpoint -q PATH` succeeds for the paths in MLCC_TEST_MOUNTED (":"-separated)
IFS=: read -ra mounted <<<"${MLCC_TEST_MOUNTED:-}"
for path in "${mounted[@]}"; do
    [ "$path" = "$2" ] && exit 0
done
exit 32
"""
SYSTEMCTL = """#!/bin/bash
# stand-in: records its arguments
echo "$*" >>"$MLCC_TEST_CALLS"
"""


@dataclass(frozen=True)
class Run:
    """One run of the script: its exit code, the log so far and the systemctl calls so far."""

    code: int
    log: str
    calls: list[str]


def _node(tmp_path: Path, os_release: str | None, *, layout: str = "al2023") -> Path:
    """A stand-in node: os-release, the image's containerd files and a kubeconfig in
    /var/lib/kubelet, and the secondary storage directories (mounted or not per run)."""
    root = tmp_path / "node"
    (root / "etc").mkdir(parents=True)
    if os_release is not None:
        (root / "etc/os-release").write_text(os_release, encoding="utf-8")
    if layout == "al2":
        (root / AL2_CONFIG_PATH).parent.mkdir(parents=True)
        (root / AL2_CONFIG_PATH).write_text(AL2_CONFIG, encoding="utf-8")
    else:
        (root / "etc/containerd").mkdir()
        (root / "etc/containerd/config.toml").write_text(AL2023_CONFIG, encoding="utf-8")
    cached = root / "var/lib/containerd/io.containerd.content.v1.content/blobs/pause"
    cached.parent.mkdir(parents=True)
    cached.write_text("pause image", encoding="utf-8")
    (root / "var/lib/kubelet").mkdir(parents=True)
    (root / "var/lib/kubelet/kubeconfig").write_text("kubeconfig", encoding="utf-8")
    (root / "var/lib/kubelet/.hidden").write_text("dotfile", encoding="utf-8")
    for disk in (NVME, VOLUME):
        (root / disk.lstrip("/")).mkdir(parents=True)
    return root


def _run(root: Path, *mounted: str) -> Run:
    bin_dir = root.parent / "bin"
    bin_dir.mkdir(exist_ok=True)
    for name, text in (("mountpoint", MOUNTPOINT), ("systemctl", SYSTEMCTL)):
        (bin_dir / name).write_text(text, encoding="utf-8")
        (bin_dir / name).chmod(0o755)
    calls = root.parent / "systemctl-calls"
    calls.touch()
    env = {
        **os.environ,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "MLCC_ROOT": str(root),
        "MLCC_MOUNT_WAIT_SECONDS": "0",
        "MLCC_TEST_MOUNTED": ":".join(f"{root}{disk}" for disk in mounted),
        "MLCC_TEST_CALLS": str(calls),
    }
    done = subprocess.run(
        ["bash", str(SCRIPT)], env=env, capture_output=True, text=True, check=False
    )
    assert done.stdout == done.stderr == ""  # everything goes to the log
    return Run(
        code=done.returncode,
        log=(root / LOG).read_text(encoding="utf-8"),
        calls=calls.read_text(encoding="utf-8").splitlines(),
    )


def _tree(root: Path) -> dict[str, str]:
    """Every path under the node (the log aside): file text, symlink target or "dir"."""
    tree: dict[str, str] = {}
    for path in sorted(root.rglob("*")):
        name = str(path.relative_to(root))
        if name.startswith("var/log"):
            continue
        if path.is_symlink():
            tree[name] = "-> " + os.readlink(path)
        elif path.is_dir():
            tree[name] = "dir"
        else:
            tree[name] = path.read_text(encoding="utf-8")
    return tree


def _moved_kubelet(root: Path, disk: str) -> None:
    link = root / "var/lib/kubelet"
    assert link.is_symlink()
    assert os.readlink(link) == f"{disk}/kubelet"  # the node's own path, not the test tree's
    state = root / disk.lstrip("/") / "kubelet"
    assert (state / "kubeconfig").read_text(encoding="utf-8") == "kubeconfig"
    assert (state / ".hidden").read_text(encoding="utf-8") == "dotfile"


def _seeded_data_root(root: Path, disk: str) -> None:
    data_root = root / disk.lstrip("/") / "containerd/data-root"
    blob = data_root / "io.containerd.content.v1.content/blobs/pause"
    assert blob.read_text(encoding="utf-8") == "pause image"
    assert not (data_root.parent / "data-root.partial").exists()


@pytest.mark.parametrize(
    ("mounted", "disk"),
    [((VOLUME,), VOLUME), ((NVME,), NVME), ((VOLUME, NVME), NVME)],
    ids=["ebs-volume", "nvme", "nvme-preferred-over-volume"],
)
def test_al2023_moves_containerd_and_kubelet_onto_the_secondary_storage(
    tmp_path: Path, mounted: tuple[str, ...], disk: str
) -> None:
    root = _node(tmp_path, AL2023)
    run = _run(root, *mounted)
    assert run.code == 0
    assert (root / DROPIN).read_text(encoding="utf-8") == (
        f"# mlcc-constructs on_create.sh: containerd's data root on {disk}\n"
        "[Service]\n"
        "ExecStart=\n"
        f"ExecStart=/usr/bin/containerd --root {disk}/containerd/data-root\n"
    )
    assert run.calls == ["daemon-reload"]
    # nodeadm owns /etc/containerd/config.toml (it rewrites it): left alone.
    assert (root / "etc/containerd/config.toml").read_text(encoding="utf-8") == AL2023_CONFIG
    _seeded_data_root(root, disk)
    _moved_kubelet(root, disk)
    (other,) = {NVME, VOLUME} - {disk}
    assert list((root / other.lstrip("/")).iterdir()) == []
    assert (root / disk.lstrip("/") / ".mlcc-node-os").read_text(encoding="utf-8") == "amzn-2023\n"
    assert "OS: ID=amzn VERSION_ID=2023 (al2023 layout)" in run.log
    assert f"secondary storage: {disk}\n" in run.log
    assert f"kubelet state: {disk}/kubelet (linked from /var/lib/kubelet)" in run.log
    assert run.log.rstrip().endswith("mlcc on_create: done")


def test_al2_sets_the_root_of_the_eks_containerd_config(tmp_path: Path) -> None:
    root = _node(tmp_path, AL2, layout="al2")
    run = _run(root, VOLUME)
    assert run.code == 0
    expected = AL2_CONFIG.replace(
        'root = "/var/lib/containerd"', 'root = "/opt/sagemaker/containerd/data-root"'
    )
    assert (root / AL2_CONFIG_PATH).read_text(encoding="utf-8") == expected
    assert 'root = "/var/lib/soci-snapshotter-grpc"' in expected  # the nested root stays
    assert not (root / DROPIN).exists()
    assert run.calls == []  # AL2's bootstrap.sh installs the config and restarts containerd
    _seeded_data_root(root, VOLUME)
    _moved_kubelet(root, VOLUME)
    assert "containerd data root: /opt/sagemaker/containerd/data-root (set in" in run.log


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        (
            '# root = "/var/lib/containerd"\nstate = "/run/containerd"\n',
            'root = "/opt/sagemaker/containerd/data-root"\nstate = "/run/containerd"\n',
        ),
        (
            'version = 2\n\n[grpc]\nroot = "/nested"\n',
            f'version = 2\n\n{ROOT_LINE}\n[grpc]\nroot = "/nested"\n',
        ),
        ("version = 2\n", 'version = 2\nroot = "/opt/sagemaker/containerd/data-root"\n'),
    ],
    ids=["commented-out", "missing-before-a-table", "missing-no-table"],
)
def test_al2_sets_only_the_top_level_root(tmp_path: Path, config: str, expected: str) -> None:
    root = _node(tmp_path, AL2, layout="al2")
    (root / AL2_CONFIG_PATH).write_text(config, encoding="utf-8")
    assert _run(root, VOLUME).code == 0
    assert (root / AL2_CONFIG_PATH).read_text(encoding="utf-8") == expected


@pytest.mark.parametrize(("os_release", "layout"), [(AL2023, "al2023"), (AL2, "al2")])
def test_no_secondary_storage_changes_nothing(tmp_path: Path, os_release: str, layout: str) -> None:
    # The directories exist (as on an image) but nothing is mounted on them.
    root = _node(tmp_path, os_release, layout=layout)
    before = _tree(root)
    run = _run(root)
    assert run.code == 0
    assert _tree(root) == before
    assert run.calls == []
    assert (
        "neither /opt/dlami/nvme nor /opt/sagemaker is a mount point (waited 0s):"
        " containerd and kubelet stay on the root volume"
    ) in run.log


@pytest.mark.parametrize(
    ("os_release", "layout", "mounted"),
    [(AL2023, "al2023", VOLUME), (AL2023, "al2023", NVME), (AL2, "al2", VOLUME)],
    ids=["al2023-volume", "al2023-nvme", "al2-volume"],
)
def test_a_second_run_changes_nothing(
    tmp_path: Path, os_release: str, layout: str, mounted: str
) -> None:
    root = _node(tmp_path, os_release, layout=layout)
    first = _run(root, mounted)
    after_first = _tree(root)
    second = _run(root, mounted)
    assert first.code == second.code == 0
    assert _tree(root) == after_first
    assert second.calls == first.calls  # no second daemon-reload
    again = second.log[len(first.log) :]
    assert "containerd data root:" in again and "(already set in" in again
    assert f"kubelet state: {mounted}/kubelet (already linked from /var/lib/kubelet)" in again


def test_state_left_by_another_os_is_not_reused(tmp_path: Path) -> None:
    # The volume kept an AL2 node's state (its root volume was replaced by an AL2023 one).
    root = _node(tmp_path, AL2023)
    volume = root / VOLUME.lstrip("/")
    (volume / ".mlcc-node-os").write_text("amzn-2\n", encoding="utf-8")
    (volume / "containerd/data-root").mkdir(parents=True)
    (volume / "containerd/data-root/al2-only").write_text("old", encoding="utf-8")
    (volume / "kubelet").mkdir()
    (volume / "kubelet/stale-pod").write_text("old", encoding="utf-8")
    run = _run(root, VOLUME)
    assert run.code == 0
    assert not (volume / "containerd/data-root/al2-only").exists()
    assert not (volume / "kubelet/stale-pod").exists()
    _seeded_data_root(root, VOLUME)
    _moved_kubelet(root, VOLUME)
    assert (volume / ".mlcc-node-os").read_text(encoding="utf-8") == "amzn-2023\n"
    assert "/opt/sagemaker holds state of amzn-2: removing" in run.log


def test_a_foreign_kubelet_symlink_is_left_alone(tmp_path: Path) -> None:
    root = _node(tmp_path, AL2023)
    kubelet = root / "var/lib/kubelet"
    for child in kubelet.iterdir():
        child.unlink()
    kubelet.rmdir()
    kubelet.symlink_to("/somewhere/else")
    run = _run(root, VOLUME)
    assert run.code == 0
    assert os.readlink(kubelet) == "/somewhere/else"
    assert "/var/lib/kubelet already links to /somewhere/else: left as it is" in run.log


@pytest.mark.parametrize(
    ("os_release", "logged"),
    [
        (UBUNTU, "unsupported OS ID=ubuntu VERSION_ID=22.04 (only Amazon Linux 2 and 2023)"),
        ('ID="amzn"\nVERSION_ID="2027"\n', "unsupported OS ID=amzn VERSION_ID=2027"),
        (None, "no /etc/os-release: unknown OS"),
    ],
    ids=["ubuntu", "future-amazon-linux", "no-os-release"],
)
def test_an_unknown_os_changes_nothing_and_does_not_fail_the_node(
    tmp_path: Path, os_release: str | None, logged: str
) -> None:
    # Exit 0: a failing OnCreate fails the node's creation, while a node with its state on
    # the root volume still works; the log line says why nothing moved.
    root = _node(tmp_path, os_release)
    before = _tree(root)
    run = _run(root, VOLUME)
    assert run.code == 0
    assert _tree(root) == before
    assert run.calls == []
    assert logged in run.log
    assert "containerd and kubelet stay on the root volume" in run.log


def test_a_failing_step_fails_the_script(tmp_path: Path) -> None:
    # set -e: a step that cannot be done (a file where the containerd directory goes) fails
    # the run instead of being skipped, so the node is not half moved.
    root = _node(tmp_path, AL2023)
    (root / VOLUME.lstrip("/") / "containerd").write_text("not a directory", encoding="utf-8")
    run = _run(root, VOLUME)
    assert run.code != 0
    assert not (root / DROPIN).exists()
    assert (root / "var/lib/kubelet").is_dir() and not (root / "var/lib/kubelet").is_symlink()
    assert "mlcc on_create: done" not in run.log
