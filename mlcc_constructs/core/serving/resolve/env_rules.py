"""One rule for the keys and one for the values of a deployment's ``env``, whatever layer they
came from (a spec file, ``--set``, a cdk.json or ``-c`` deployment, a ``DeploymentSpec`` built
in Python): every layer ends in ``DeploymentSpec.env``, and
:func:`~mlcc_constructs.core.serving.resolve.settings.read_settings`, its only reader, asks
:func:`key_problem` and :func:`value_problem` about each entry.

Keys (in this order; the first that fails is reported):

* **Shape.** A C identifier (``[A-Za-z_][A-Za-z0-9_]*``) of at most :data:`MAX_KEY`
  characters. Kubernetes takes more since 1.34 (any printable ASCII but ``=``: KEP-4369,
  https://www.kubernetes.dev/resources/keps/4369/; alpha in 1.30 behind
  ``RelaxedEnvironmentVariableValidation``), but the engine keys travel as ConfigMap data read
  with ``envFrom``, whose keys are ``[-._a-zA-Z0-9]+`` of at most 253 characters
  (https://kubernetes.io/docs/reference/generated/kubernetes-api/v1.31/#configmap-v1-core;
  the 253 is apimachinery's ``IsConfigMapKey``, DNS-1123 subdomain length), and a shell or
  ``os.environ`` consumer in the image expects an identifier. The intersection is the rule.
* **Reserved** (:data:`RESERVED`): the wrapper's ``MLCC_*`` variables, the variables every
  pod gets (``HOME``, ``USER``) and EKS Pod Identity's, read from the data that places them
  (:mod:`~mlcc_constructs.core.support.container_env`). The engine's API key variable
  (``VLLM_API_KEY``) is Tier 1: the settings reader refuses it as env
  (:mod:`~mlcc_constructs.core.serving.resolve.computed_keys`) and points to
  ``api_key_secret``/``secret_env``.
* **Case.** A key whose upper-case form has an engine prefix must be upper-case: the wrapper
  lower-cases the suffix into the flag, so ``VLLM_Tensor_Parallel_Size`` would slip past the
  Tier-1 checks and give the engine a second ``--tensor-parallel-size``, and a lower-case
  prefix (``vllm_max_loras``) would silently become plain env.
* **Flag name.** The suffix after the active engine's prefix is
  :data:`~mlcc_constructs.core.wrapper.FLAG_SUFFIX` (upper-case words joined by single ``_``),
  the shape the wrapper refuses otherwise: so ``VLLM_`` (``--``), ``VLLM__`` (``---``) and
  ``VLLM_MODEL_`` (``--model-``) are refused here, and no two keys give one flag.

Plain env (no engine prefix) keeps its case: ``http_proxy`` and ``HTTP_PROXY`` are different
variables, and tools read both.

Values: no control character (Unicode category ``Cc``: C0, DEL, C1) except tab, and no
Unicode line or paragraph separator. NUL cannot be in a process environment or an argv at
all; CR, LF and the separators split the value where a line-oriented reader (``env``,
``kubectl describe``, logs, YAML 1.1 for U+0085/U+2028/U+2029) meets it, and ESC and the other
controls are terminal escapes in whoever prints it. A tab is one ordinary byte for every one
of them and may be part of a real value.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Collection, Mapping
from dataclasses import dataclass

from mlcc_constructs.core.engines.manifests import EngineManifest, EngineRegistry
from mlcc_constructs.core.support.container_env import POD_ENV, POD_IDENTITY_ENV, WRAPPER_PREFIX
from mlcc_constructs.core.support.errors import Problem
from mlcc_constructs.core.support.kube_names import MAX_SUBDOMAIN
from mlcc_constructs.core.wrapper import FLAG_SUFFIX

ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
"""An env key's shape (module doc)."""
MAX_KEY = MAX_SUBDOMAIN
"""The longest env key: a ConfigMap key's limit (module doc)."""
_SEPARATORS = frozenset("\u2028\u2029")


@dataclass(frozen=True, kw_only=True)
class ReservedEnv:
    """Env names the library places in the container itself: ``names`` (each with what sets
    it) and ``prefixes``."""

    names: Mapping[str, str]
    prefixes: tuple[str, ...]

    def reason(self, key: str) -> str | None:
        """What sets ``key``, when it is reserved."""
        if key in self.names:
            return self.names[key]
        prefix = next((p for p in self.prefixes if key.startswith(p)), None)
        return f"the mlcc wrapper's own variables ({prefix}*)" if prefix else None

    def describe(self) -> str:
        """The reserved names and prefixes, for a message."""
        return ", ".join([*(f"{p}*" for p in self.prefixes), *sorted(self.names)])


RESERVED = ReservedEnv(
    names={
        **{name: "the rendered pod sets it" for name, _ in POD_ENV},
        **{name: "EKS Pod Identity sets it" for name in POD_IDENTITY_ENV},
    },
    prefixes=(WRAPPER_PREFIX,),
)
"""The names no user key may take (module doc)."""


def value_problem(value: str, pointer: str) -> Problem | None:
    """Why ``value`` cannot be an env value, if it cannot (module doc)."""
    bad = next(
        (c for c in value if c in _SEPARATORS or (c != "\t" and unicodedata.category(c) == "Cc")),
        None,
    )
    if bad is None:
        return None
    return Problem(
        message=f"the value holds the control character {bad!r} (U+{ord(bad):04X}), which "
        "would split or corrupt it where the container's env is read",
        pointer=pointer,
        value=value,
        allowed="text without control characters (tab allowed), on one line",
        fix="remove the character; several values go in one line (a JSON array where the "
        "flag takes a list)",
    )


def key_problem(
    key: str,
    pointer: str,
    *,
    manifest: EngineManifest,
    registry: EngineRegistry,
    keys: Collection[str] = (),
) -> Problem | None:
    """Why ``key`` cannot be an env key of a deployment of ``manifest``'s engine, if it cannot
    (module doc); ``keys``: every key of the env, to name a key that differs only by case."""
    if len(key) > MAX_KEY or not ENV_NAME.match(key):
        return Problem(
            message="not an environment variable name",
            pointer=pointer,
            value=key,
            allowed=f"letters, digits and '_', not starting with a digit, at most {MAX_KEY}",
        )
    reason = RESERVED.reason(key)
    if reason is not None:
        return Problem(
            message=f"{key} is reserved: {reason}",
            pointer=pointer,
            value=key,
            allowed=f"any name but {RESERVED.describe()}",
            fix="drop it: the pod gets it without you, and a second value would replace it",
        )
    prefix, upper = manifest.env_var_prefix, key.upper()
    owner = registry.owner_of(upper)
    if owner is not None and upper != key:
        same = f"; {upper} is set too" if upper in keys else ""
        fix = f"write it {upper}" + (" (once)" if same else "")
        if owner is not manifest:
            fix = (
                f"write it {prefix}{upper[len(owner.env_var_prefix) :]} (the active engine "
                f"{manifest.engine!r} reads only {prefix}*)"
            )
        return Problem(
            message=f"an engine key must be upper-case: the engine would get the same flag as "
            f"{upper}, past its checks{same}",
            pointer=pointer,
            value=key,
            allowed=f"{owner.env_var_prefix}<FLAG_NAME> in upper case",
            fix=fix,
        )
    if owner is manifest and not FLAG_SUFFIX.match(key[len(prefix) :]):
        suffix = key[len(prefix) :]
        return Problem(
            message=f"{repr(suffix) if suffix else 'the bare prefix'} names no "
            f"{manifest.engine} flag",
            pointer=pointer,
            value=key,
            allowed=f"{prefix}<FLAG_NAME>: upper-case letters and digits, words joined by "
            "single '_'",
            fix=f"e.g. {prefix}MAX_NUM_SEQS for --max-num-seqs",
        )
    return None


def plain_env_note(key: str, manifest: EngineManifest, registry: EngineRegistry) -> str | None:
    """A note for a ``--set`` key with no engine prefix: it reaches the container as plain
    env, not as an engine flag (``None``: it has a prefix). Only ``--set`` asks: plain env in a
    spec file is written on purpose (``NCCL_DEBUG``) and is not noted on every render."""
    if registry.owner_of(key.upper()) is not None:
        return None
    return (
        f"warning: --set {key} has no engine prefix: it becomes plain env in the container, "
        f"not a {manifest.engine} flag (engine flags are {manifest.env_var_prefix}<FLAG_NAME>)"
    )
