"""What resolution produces (:class:`Resolution`) and the library-wide values it rests on:
companion defaults, sentinel values, credential-looking env names."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from mlcc_constructs.core.engines.manifests import EngineManifest, StreamLoad
from mlcc_constructs.core.platform.catalog import InstanceType
from mlcc_constructs.core.serving.spec.deployment import ModelLoad, ModelSource
from mlcc_constructs.core.support.errors import fail
from mlcc_constructs.core.wrapper import WrapperError, build_argv

# Names that hold credentials: they must come from a Secret, never a ConfigMap or plain value.
_SECRET_NAME = re.compile(
    r"(^|_)(TOKEN|SECRET|SECRETS|PASSWORD|PASSWD|API_KEY|APIKEY|ACCESS_KEY|PRIVATE_KEY|"
    r"CREDENTIAL|CREDENTIALS|SESSION_TOKEN)(_|$)"
)


@dataclass(frozen=True)
class Skipped:
    """A capability that was asked for but not emitted, and why."""

    capability: str
    key: str
    reason: str

    def __str__(self) -> str:
        return f"omitting {self.key}: {self.reason}"


@dataclass(frozen=True, kw_only=True)
class Resolution:
    """What the engine receives. ``env`` is Tier 1, then Tier 2, then plain env."""

    manifest: EngineManifest
    instance: InstanceType
    source: ModelSource
    """The parsed model source (parsed once, here)."""
    tensor_parallel_degree: int
    tier1: tuple[tuple[str, str], ...]
    tier2: tuple[tuple[str, str], ...]
    plain: tuple[tuple[str, str], ...] = ()
    skipped: tuple[Skipped, ...] = ()
    warnings: tuple[str, ...] = ()
    capability_values: Mapping[str, str] = field(default_factory=dict)
    """Emitted Tier-1 values by capability name (e.g. ``lora_max_rank`` → ``"16"``)."""
    model_load: ModelLoad = "mount"
    """How the engine reads the weights (``mount`` or ``stream``: resolve/model_load.py)."""
    stream: StreamLoad | None = None
    """The engine's streaming load format, with ``model_load`` ``stream``."""
    nodes: int = 1
    """Nodes one model copy spans (a LeaderWorkerSet group's size on eks)."""
    pipeline_parallel_degree: int = 1
    mounts_model: bool = False
    """The pods mount the ``s3://`` model prefix: its weights (``mount``), or with ``stream``
    only for the LoRA adapters delivered under it."""

    @property
    def gpus_per_pod(self) -> int:
        """The GPUs each serving pod asks for: TP x PP spread over the nodes."""
        return self.tensor_parallel_degree * self.pipeline_parallel_degree // self.nodes

    @property
    def env(self) -> dict[str, str]:
        return dict(self.tier1 + self.tier2 + self.plain)

    @property
    def own_env(self) -> tuple[tuple[str, str], ...]:
        """The Tier-1 and Tier-2 keys the engine reads from its environment itself (manifest
        ``engine_env``: the runtime adapter switch, the user's engine variables): env under
        every config delivery, never flags."""
        return tuple((k, v) for k, v in self.tier1 + self.tier2 if k in self.manifest.engine_env)

    @property
    def flag_keys(self) -> tuple[str, ...]:
        """The Tier-1 and Tier-2 keys the wrapper translates into arguments (``MLCC_ENGINE_KEYS``;
        a ``false`` without an off form gives none): the engine's environment never holds them."""
        own = self.manifest.engine_env
        return tuple(k for k, _ in self.tier1 + self.tier2 if k not in own)

    def argv(self, pod_env: Mapping[str, str] | None = None) -> list[str]:
        """The engine's command line as the wrapper builds it from :attr:`env` (and
        ``pod_env``: what the platform adds at pod start, a LeaderWorkerSet's ``LWS_*``)."""
        try:
            return build_argv(self.manifest.raw, self.env | dict(pod_env or {}))
        except WrapperError as error:
            raise fail(str(error), pointer="/engine/name", value=self.manifest.engine) from error


def is_secret_name(key: str) -> bool:
    """True for env names that carry credentials (``HF_TOKEN``, ``*_API_KEY``...)."""
    return bool(_SECRET_NAME.search(key.upper()))
