"""Where a deployment's secrets come from, decided once: :func:`plan_secrets`.

A ``secret_env`` entry names a Kubernetes Secret (used as is) or an AWS Secrets Manager secret;
the API key (``api_key_secret``) is always the latter. Secrets Manager values reach the pods
through the Secrets Store CSI driver and the AWS provider (the EKS add-on
``aws-secrets-store-csi-driver-provider``, installed by the cluster side with secret sync on):
the deployment's ``SecretProviderClass`` (``<name>-secrets``) lists them, the engine pod mounts
it read-only, and the driver syncs them into the Kubernetes Secret ``<name>-secrets``, which
the container env references by key. Nobody creates a Secret by hand, and no value is in a
template, a ConfigMap, a plain env value or an argv: an engine without a key variable of its
own (SGLang) gets ``MLCC_API_KEY``, which the mlcc wrapper writes to a private config file
for it (:func:`~mlcc_constructs.core.wrapper.key_config_args`) and drops from its env. The pods
read the secrets as their own identity (EKS Pod Identity: the CDK side grants
``GetSecretValue`` on exactly these secrets to the deployment's ServiceAccount).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from mlcc_constructs.core.engines.manifests import EngineManifest
from mlcc_constructs.core.platform.targets import TargetDescriptor
from mlcc_constructs.core.serving.prepare.names import Names
from mlcc_constructs.core.serving.spec.deployment import DeploymentSpec, SecretRef
from mlcc_constructs.core.serving.spec.endpoint import SecretsManagerSecret, secret_problems
from mlcc_constructs.core.support.errors import Problem
from mlcc_constructs.core.wrapper import API_KEY_ENV

API_KEY = "api-key"
"""The key of the API key in the synced Secret."""
MOUNT_PATH = "/mnt/secrets-store"
VOLUME = "secrets"


@dataclass(frozen=True, kw_only=True)
class SyncedSecret:
    """One Secrets Manager value synced into the deployment's Secret under ``key``."""

    key: str
    source: SecretsManagerSecret


@dataclass(frozen=True, kw_only=True)
class SecretsPlan:
    """The deployment's secrets (module doc).

    Fields:

    ``name``: The SecretProviderClass and the Secret it syncs (``<name>-secrets``).
    ``synced``: The Secrets Manager values, each under its key of that Secret.
    ``env``: Every Secret-backed variable of the engine container, as Kubernetes references.
    """

    name: str
    synced: tuple[SyncedSecret, ...] = ()
    env: Mapping[str, SecretRef] = field(default_factory=lambda: MappingProxyType({}))

    @property
    def syncs(self) -> bool:
        """The pods mount the SecretProviderClass (something comes from Secrets Manager)."""
        return bool(self.synced)


def secret_key(variable: str) -> str:
    """The synced Secret's key for env ``variable``: ``HF_TOKEN`` -> ``hf-token``."""
    return variable.lower().replace("_", "-")


def plan_secrets(
    spec: DeploymentSpec,
    manifest: EngineManifest,
    target: TargetDescriptor,
    names: Names,
    *,
    region: str | None,
    account: str | None,
) -> tuple[SecretsPlan, list[Problem]]:
    """The deployment's secrets and every problem with them (module doc)."""
    problems: list[Problem] = []
    env: dict[str, SecretRef] = {}
    synced: list[SyncedSecret] = []
    for variable, ref in spec.engine.secret_env.items():
        if isinstance(ref, SecretRef):
            env[variable] = ref
            continue
        pointer = f"/engine/secret_env/{variable}/secret"
        problems += secret_problems(ref.secret, region=region, account=account, pointer=pointer)
        synced.append(SyncedSecret(key=secret_key(variable), source=ref))
        env[variable] = SecretRef(name=names.secrets, key=secret_key(variable))
    if spec.endpoint.api_key_secret is not None:
        pointer = "/endpoint/api_key_secret"
        problems += secret_problems(
            spec.endpoint.api_key_secret, region=region, account=account, pointer=pointer
        )
        key_variable = manifest.api_key_env or (
            API_KEY_ENV if manifest.api_key_config_file else None
        )
        if key_variable is None:
            problems.append(
                Problem(
                    message=f"engine {manifest.engine!r} takes no API key (its manifest "
                    "declares no api_key): clients could call it without one",
                    pointer=pointer,
                    value=spec.endpoint.api_key_secret,
                    fix="drop endpoint.api_key_secret and keep the endpoint internal, or use an "
                    "engine "
                    "whose manifest declares api_key",
                )
            )
        elif key_variable in env:
            problems.append(
                Problem(
                    message=f"the API key's variable {key_variable} is also set in secret_env",
                    pointer=f"/engine/secret_env/{key_variable}",
                    value=key_variable,
                    fix="keep only endpoint.api_key_secret",
                )
            )
        else:
            synced.append(
                SyncedSecret(
                    key=API_KEY, source=SecretsManagerSecret(secret=spec.endpoint.api_key_secret)
                )
            )
            env[key_variable] = SecretRef(name=names.secrets, key=API_KEY)
        if key_variable == API_KEY_ENV and spec.engine.config_delivery == "args":
            problems.append(
                Problem(
                    message=f"engine {manifest.engine!r} reads its API key from a config file "
                    "the mlcc wrapper writes, and config_delivery args runs no wrapper",
                    pointer="/engine/config_delivery",
                    value="args",
                    allowed="env",
                    fix="use engine.config_delivery env (the image runs the mlcc wrapper)",
                )
            )
    if synced and not target.pod_volumes:
        note = target.notes.get("secrets_manager", "its pods take no volumes")
        problems.append(
            Problem(
                message=f"Secrets Manager values reach the pods through a CSI volume, and "
                f"target {target.name!r} cannot mount one: {note}",
                pointer="/endpoint/api_key_secret"
                if spec.endpoint.api_key_secret
                else "/engine/secret_env",
                value=target.name,
                fix="use a Kubernetes Secret (engine.secret_env SecretRef) on this target, or "
                "target eks",
            )
        )
    plan = SecretsPlan(name=names.secrets, synced=tuple(synced), env=MappingProxyType(env))
    return plan, problems
