"""``mlcc render``: the done-when command, --out, -f spec files and their errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from mlcc_constructs import cli
from mlcc_constructs.core.serving.kinds._crd_rules import strict
from mlcc_constructs.core.serving.kinds._schemas import core_object_problems
from mlcc_constructs.ops.render_output import replace_files
from tests._flat import sectioned_doc

MODEL = "s3://mlcc-models-dev-123456789012-us-east-1/models/meta-llama/Llama-3.1-8B-Instruct/"
DONE_WHEN = [
    "render",
    "--engine",
    "sglang",
    "--model",
    MODEL,
    "--instance-type",
    "ml.g5.12xlarge",
    "--name",
    "llama-sglang",
    "--lora",
]


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = cli.main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture
def in_repo(monkeypatch: pytest.MonkeyPatch) -> None:
    """Run where the repository's cdk.json supplies the profile (as `make`/users do)."""
    monkeypatch.chdir(Path(__file__).resolve().parents[2])


def test_done_when_hyperpod_sglang_lora(
    capsys: pytest.CaptureFixture[str], in_repo: None, shared_dir: Path
) -> None:
    code, out, err = run(capsys, *DONE_WHEN, "--target", "hyperpod-eks")
    assert code == 0, err
    [iec] = list(yaml.safe_load_all(out))
    crd = yaml.safe_load(
        (
            shared_dir / "crds/inference.sagemaker.aws.amazon.com_inferenceendpointconfigs.yaml"
        ).read_text()
    )
    schema = next(v for v in crd["spec"]["versions"] if v["name"] == "v1")["schema"][
        "openAPIV3Schema"
    ]
    jsonschema.validate(iec, strict(schema))
    assert iec["spec"]["modelSourceConfig"]["prefetchEnabled"] is False
    env = {e["name"]: e["value"] for e in iec["spec"]["worker"]["environmentVariables"]}
    assert env["SGLANG_TP_SIZE"] == "4"
    assert env["SGLANG_ENABLE_LORA"] == "true"
    assert env["SGLANG_MAX_LORA_RANK"] == "16" and env["SGLANG_LORA_TARGET_MODULES"] == "all"
    assert iec["spec"]["tlsConfig"]["tlsCertificateOutputS3Uri"].startswith(
        "s3://mlcc-tls-dev-123456789012-us-east-1/"
    )


def test_done_when_eks_passes_kubernetes_validate(
    capsys: pytest.CaptureFixture[str], in_repo: None
) -> None:
    code, out, err = run(capsys, *DONE_WHEN, "--target", "eks")
    assert code == 0, err
    documents = list(yaml.safe_load_all(out))
    assert [d["kind"] for d in documents] == [
        "ServiceAccount",
        "NetworkPolicy",
        "ConfigMap",
        "ConfigMap",
        "PersistentVolume",
        "PersistentVolumeClaim",
        "Deployment",
        "Service",
        "Ingress",
    ]
    for document in documents:
        assert core_object_problems(document) == []


def test_out_writes_one_file_per_object(
    capsys: pytest.CaptureFixture[str], in_repo: None, tmp_path: Path
) -> None:
    code, out, _ = run(capsys, *DONE_WHEN, "--out", str(tmp_path))
    assert code == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        ".mlcc-render.json",
        "configmap-llama-sglang-config.yaml",
        "configmap-llama-sglang-wrapper.yaml",
        "deployment-llama-sglang.yaml",
        "ingress-llama-sglang.yaml",
        "networkpolicy-llama-sglang.yaml",
        "persistentvolume-default-llama-sglang-model.yaml",
        "persistentvolumeclaim-llama-sglang-model.yaml",
        "service-llama-sglang.yaml",
        "serviceaccount-llama-sglang.yaml",
    ]
    assert out.splitlines()[0] == str(tmp_path / "serviceaccount-llama-sglang.yaml")


def write_spec(tmp_path: Path, document: dict[str, Any], suffix: str = ".yaml") -> Path:
    path = tmp_path / f"spec{suffix}"
    path.write_text(
        json.dumps(sectioned_doc(document))
        if suffix == ".json"
        else yaml.safe_dump(sectioned_doc(document))
    )
    return path


SPEC = {
    "engine": {
        "name": "vllm",
        "env": {"VLLM_MAX_NUM_SEQS": "16", "VLLM_ENFORCE_EAGER": "true"},
        "secret_env": {"HF_TOKEN": {"name": "hf", "key": "token"}},
        "config_delivery": "args",
    },
    "model": {"uri": "mistralai/Mistral-7B-Instruct-v0.3"},
    "compute": {"instance_type": "g5.2xlarge"},
    "name": "mistral",
    "namespace": "inference",
    "target": "hyperpod-eks",
    "account": "123456789012",
    "region": "eu-west-1",
    "profile": "prod",
}


@pytest.mark.parametrize("suffix", [".yaml", ".json"])
def test_spec_file(capsys: pytest.CaptureFixture[str], tmp_path: Path, suffix: str) -> None:
    code, out, err = run(capsys, "render", "-f", str(write_spec(tmp_path, SPEC, suffix)))
    assert code == 0, err
    [iec] = list(yaml.safe_load_all(out))
    worker = iec["spec"]["worker"]
    # the operator's init container stages the Hugging Face model at the model mount
    assert worker["args"][:2] == ["/opt/ml/model", "--enforce-eager"]
    assert "--max-num-seqs" in worker["args"]
    assert iec["spec"]["tlsConfig"]["tlsCertificateOutputS3Uri"] == (
        "s3://mlcc-tls-prod-123456789012-eu-west-1/inference/mistral"
    )
    assert iec["spec"]["modelSourceConfig"]["huggingFaceModel"]["tokenSecretRef"] == {
        "name": "hf",
        "key": "token",
    }


def test_flags_override_the_spec_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = write_spec(tmp_path, SPEC)
    code, out, err = run(
        capsys,
        "render",
        "-f",
        str(path),
        "--target",
        "eks",
        "--name",
        "other",
        "--set",
        "NCCL_DEBUG=INFO",
    )
    assert code == 0, err
    deployment = next(d for d in yaml.safe_load_all(out) if d["kind"] == "Deployment")
    assert deployment["metadata"]["name"] == "other"
    env = deployment["spec"]["template"]["spec"]["containers"][0]["env"]
    assert {"name": "NCCL_DEBUG", "value": "INFO"} in env


@pytest.mark.parametrize(
    ("document", "expected"),
    [
        (
            {**SPEC, "instance-type": "x"},
            [
                "mlcc: error: {path}:/: Additional properties are not allowed ('instance-type' was "
                "unexpected) (fix: see mlcc_constructs/data/deployment-spec.schema.json for the "
                "fields)"
            ],
        ),
        (
            {**SPEC, "replicas": 0, "target": "gke"},
            [
                "mlcc: error: {path}:/scaling/replicas: 0 is less than the minimum of 1 (fix: see "
                "mlcc_constructs/data/deployment-spec.schema.json for the fields)",
                "mlcc: error: {path}:/target: 'gke' is not one of ['eks', 'hyperpod-eks'] (fix: "
                "see mlcc_constructs/data/deployment-spec.schema.json for the fields)",
            ],
        ),
    ],
)
def test_bad_spec_file_names_file_and_field(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    document: dict[str, Any],
    expected: list[str],
) -> None:
    path = write_spec(tmp_path, document)
    code, out, err = run(capsys, "render", "-f", str(path))
    assert code == 1 and out == ""
    assert err.splitlines() == [line.format(path=path) for line in expected]


def test_missing_required_inputs(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "render", "--engine", "vllm")
    assert code == 1
    assert err.strip() == (
        "mlcc: error: command line: missing model.uri, compute.instance_type "
        "(fix: pass --model --instance-type or -f FILE)"
    )


def test_bad_secret_env(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, *DONE_WHEN, "--secret-env", "HF_TOKEN=hf")
    assert code == 1
    assert err.strip() == (
        "mlcc: error: --secret-env: --secret-env takes NAME=SECRET:KEY (got 'HF_TOKEN=hf'; "
        "fix: e.g. --secret-env HF_TOKEN=hf-token:token)"
    )


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        (
            ["--replicas", "0"],
            "mlcc: error: --replicas:/scaling/replicas: 0 is less than the minimum of 1 (fix: see "
            "mlcc_constructs/data/deployment-spec.schema.json for the fields)",
        ),
        (
            ["--role-arn", "notanarn"],
            "mlcc: error: --role-arn:/service_account_role_arn: 'notanarn' does not match "
            "'^arn:aws[a-z-]*:iam::[0-9]{12}:role/.+$' (fix: see "
            "mlcc_constructs/data/deployment-spec.schema.json for the fields)",
        ),
        (
            ["--image", ""],
            "mlcc: error: --image:/engine/image: '' should be non-empty (fix: see "
            "mlcc_constructs/data/deployment-spec.schema.json for the fields)",
        ),
    ],
)
def test_flags_pass_the_checks_of_their_file_fields(
    capsys: pytest.CaptureFixture[str], flags: list[str], expected: str
) -> None:
    code, out, err = run(capsys, *DONE_WHEN, *flags)
    assert (code, out) == (1, "")
    assert err.splitlines() == [expected]


def test_a_render_problem_names_the_flag_its_field_came_from(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = write_spec(
        tmp_path,
        {
            "engine": {"name": "vllm"},
            "model": {"uri": MODEL},
            "compute": {"instance_type": "g5.xlarge"},
        },
    )
    code, _, err = run(capsys, "render", "-f", str(path), "--name", "x", "--tp", "2")
    assert code == 1
    assert err.startswith(
        "mlcc: error: --tp:/compute/tensor_parallel_degree: tensor-parallel degree must divide "
        "the 1 "
        "GPU(s) of ml.g5.xlarge"
    )


def test_out_replaces_its_own_earlier_render_entirely(
    capsys: pytest.CaptureFixture[str], in_repo: None, tmp_path: Path
) -> None:
    out = tmp_path / "rendered"
    assert run(capsys, *DONE_WHEN, "--out", str(out))[0] == 0
    assert "persistentvolume-default-llama-sglang-model.yaml" in {p.name for p in out.iterdir()}
    hub = [a if a != MODEL else "meta-llama/Llama-3.1-8B-Instruct" for a in DONE_WHEN]
    assert run(capsys, *hub, "--out", str(out))[0] == 0
    names = {p.name for p in out.iterdir()}
    # the s3:// model's volume and claim are gone with the earlier render
    assert not any(n.startswith("persistentvolume") for n in names)
    assert json.loads((out / ".mlcc-render.json").read_text())["files"] == sorted(
        names - {".mlcc-render.json"}
    )
    assert [p.name for p in tmp_path.iterdir()] == ["rendered"]  # no staging folder left


def test_out_refuses_a_folder_it_did_not_write(
    capsys: pytest.CaptureFixture[str], in_repo: None, tmp_path: Path
) -> None:
    (tmp_path / "notes.txt").write_text("mine", encoding="utf-8")
    code, out, err = run(capsys, *DONE_WHEN, "--out", str(tmp_path))
    assert (code, out) == (1, "")
    assert err == (
        f"mlcc: error: {tmp_path}: --out names a folder mlcc render did not write; it is not "
        "replaced (got ['notes.txt']; fix: pass a new or empty folder (the command replaces only "
        "its own earlier output))\n"
    )
    assert [p.name for p in tmp_path.iterdir()] == ["notes.txt"]


def test_out_refuses_files_added_to_its_folder(
    capsys: pytest.CaptureFixture[str], in_repo: None, tmp_path: Path
) -> None:
    out = tmp_path / "rendered"
    assert run(capsys, *DONE_WHEN, "--out", str(out))[0] == 0
    before = {p.name: p.read_text() for p in out.iterdir()}
    (out / "extra.yaml").write_text("kind: Secret\n", encoding="utf-8")
    code, _, err = run(capsys, *DONE_WHEN, "--replicas", "2", "--out", str(out))
    assert code == 1
    assert "--out holds files an earlier render did not write" in err
    assert "['extra.yaml']" in err
    assert {p.name: p.read_text() for p in out.iterdir() if p.name != "extra.yaml"} == before


def test_a_failed_write_leaves_the_earlier_render(
    capsys: pytest.CaptureFixture[str],
    in_repo: None,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    out = tmp_path / "rendered"
    assert run(capsys, *DONE_WHEN, "--out", str(out))[0] == 0
    before = {p.name: p.read_text() for p in out.iterdir()}
    written: list[str] = []
    real_write = Path.write_text

    def failing_write(self: Path, text: str, *args: Any, **kwargs: Any) -> int:
        written.append(self.name)
        if len(written) == 3:
            raise OSError(28, "No space left on device")
        return real_write(self, text, *args, **kwargs)

    monkeypatch.setattr(Path, "write_text", failing_write)
    code, _, err = run(capsys, *DONE_WHEN, "--replicas", "2", "--out", str(out))
    monkeypatch.undo()
    assert code == 1 and "cannot write --out: No space left on device" in err
    assert {p.name: p.read_text() for p in out.iterdir()} == before
    assert [p.name for p in tmp_path.iterdir()] == ["rendered"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "  env:\n    VLLM_ENFORCE_EAGER: yes\n",
            ["/engine/env/VLLM_ENFORCE_EAGER: True is not of type 'string'"],
        ),
        ("  env:\n    VLLM_X: 0777\n", ["/engine/env/VLLM_X: 511 is not of type 'string'"]),
        (
            "  env:\n    VLLM_X: '1'\n    VLLM_X: '2'\n",
            [
                ": duplicate key 'VLLM_X' at line 10 column 5 (first at line 9): YAML keeps only "
                "the last one (fix: keep the key once)"
            ],
        ),
    ],
)
def test_yaml_pitfalls_are_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, text: str, expected: list[str]
) -> None:
    base = (
        "model:\n  uri: org/name\ncompute:\n  instance_type: g5.xlarge\nname: x\n"
        "engine:\n  name: vllm\n"
    )
    path = tmp_path / "spec.yaml"
    path.write_text(base + text, encoding="utf-8")
    code, out, err = run(capsys, "render", "-f", str(path))
    assert (code, out) == (1, "")
    lines = err.splitlines()
    assert len(lines) == len(expected)
    for line, part in zip(lines, expected, strict=True):
        assert line.startswith(f"mlcc: error: {path}")
        assert part in line
    if "not of type" in expected[0]:
        assert "fix: quote the value" in err


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"engine: vllm\x00\n", "the spec file is binary (a NUL byte at offset 12), not text"),
        (
            "engine: vllm # caf\xe9\n".encode("latin-1"),
            "the spec file is not UTF-8 text (byte 0xe9 at offset 18)",
        ),
    ],
)
def test_binary_and_non_utf8_files_are_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, content: bytes, message: str
) -> None:
    path = tmp_path / "spec.yaml"
    path.write_bytes(content)
    code, _, err = run(capsys, "render", "-f", str(path))
    assert code == 1
    assert err.startswith(f"mlcc: error: {path}: {message}")


def test_hyperpod_outside_a_clone_takes_the_environment_from_flags(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # no cdk.json here
    hub = ["render", "--engine", "vllm", "--model", "org/name", "--instance-type", "g5.xlarge"]
    hub += ["--name", "x", "--target", "hyperpod-eks"]
    code, out, err = run(capsys, *hub)
    assert (code, out) == (1, "")
    assert err == (
        "mlcc: error: /account: the IEC's TLS bucket (stacks/buckets.json 'tls') needs account, "
        "region, profile (fix: pass --account --region --profile (or set them in cdk.json context "
        "/ RenderContext))\n"
    )
    flags = ["--account", "123456789012", "--region", "us-west-2", "--profile", "prod"]
    code, out, _ = run(capsys, *hub, *flags)
    assert code == 0
    [iec] = list(yaml.safe_load_all(out))
    assert iec["spec"]["tlsConfig"]["tlsCertificateOutputS3Uri"] == (
        "s3://mlcc-tls-prod-123456789012-us-west-2/default/x"
    )


def test_a_spec_list_renders_every_deployment(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    base = {
        "engine": {"name": "vllm"},
        "model": {"uri": "org/name"},
        "compute": {"instance_type": "g5.xlarge"},
    }
    deployments = [{**base, "name": "a"}, {**base, "name": "b", "target": "hyperpod-eks"}]
    path = tmp_path / "list.yaml"
    path.write_text(yaml.safe_dump(sectioned_doc(deployments)), encoding="utf-8")
    flags = ["--account", "123456789012", "--region", "us-east-1", "--profile", "dev"]
    code, out, _ = run(capsys, "render", "-f", str(path), *flags)
    assert code == 0
    kinds = [(d["kind"], d["metadata"]["name"]) for d in yaml.safe_load_all(out)]
    assert kinds[-1] == ("InferenceEndpointConfig", "b")
    assert ("Deployment", "a") in kinds
    code, out, _ = run(capsys, "render", "-f", str(path), *flags, "--out", str(tmp_path / "o"))
    assert code == 0
    assert sorted(p.name for p in (tmp_path / "o").iterdir()) == [
        ".mlcc-render.json",
        "eks-default-a.k8s.yaml",
        "hyperpod-eks-default-b.k8s.yaml",
    ]


def test_a_spec_list_reports_every_deployment_s_problems(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    base = {
        "engine": {"name": "vllm"},
        "model": {"uri": "org/name"},
        "compute": {"instance_type": "g5.xlarge"},
    }
    path = tmp_path / "list.yaml"
    path.write_text(
        yaml.safe_dump(
            sectioned_doc([{**base, "name": "a", "replicas": 0}, {**base, "name": "B"}])
        ),
        encoding="utf-8",
    )
    code, out, err = run(capsys, "render", "-f", str(path), "--out", str(tmp_path / "o"))
    assert (code, out) == (1, "")
    assert [line.split(": ")[2] for line in err.splitlines()] == [
        f"{path}#0:/scaling/replicas",
        f"{path}#1:/name",
    ]
    assert not (tmp_path / "o").exists()


def test_a_file_set_is_written_whole_or_not_at_all(tmp_path: Path) -> None:
    """dist/ and ``mlcc dashboard -o``: a write that fails part-way (here the third file's text
    cannot be encoded; a full disk fails the same way) leaves the folder as it was."""
    folder = tmp_path / "dist"
    folder.mkdir()
    (folder / "a.k8s.yaml").write_text("old a\n")
    (folder / "gone.k8s.yaml").write_text("old gone\n")
    before = {p.name: p.read_text() for p in folder.iterdir()}
    bad = {"a.k8s.yaml": "new a\n", "b.k8s.yaml": "new b\n", "c.k8s.yaml": "\udc80"}
    with pytest.raises(UnicodeEncodeError):
        replace_files(folder, bad, stale=folder.glob("*.k8s.yaml"))
    assert {p.name: p.read_text() for p in folder.iterdir()} == before
    good = {"a.k8s.yaml": "new a\n", "b.k8s.yaml": "new b\n"}
    written = replace_files(folder, good, stale=list(folder.glob("*.k8s.yaml")))
    assert written == [folder / "a.k8s.yaml", folder / "b.k8s.yaml"]
    assert {p.name: p.read_text() for p in folder.iterdir()} == good  # the stale file is gone
    assert all(oct(p.stat().st_mode & 0o777) == "0o644" for p in written)


def test_the_dashboard_on_a_full_disk_keeps_the_old_file(tmp_path: Path) -> None:
    """``mlcc dashboard -o FILE`` past a file-size limit: exit 1, the earlier FILE intact."""
    import resource

    out = tmp_path / "grafana-dashboard.json"
    out.write_text("{}\n")

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))

    done = subprocess.run(
        [sys.executable, "-m", "mlcc_constructs.cli", "dashboard", "-o", str(out)],
        capture_output=True,
        text=True,
        preexec_fn=limit,
        check=False,
    )
    assert done.returncode == 1
    assert done.stderr.startswith("mlcc: error: File too large"), done.stderr
    assert out.read_text() == "{}\n"
    assert [p.name for p in tmp_path.iterdir()] == [out.name]
