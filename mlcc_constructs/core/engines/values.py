"""Checks of the values that become an engine's arguments (ADR-010 value shapes), for the
resolver: a boolean is ``true`` or ``false``, and ``false`` reaches the engine only as the
flag's off form (manifest ``negation``); a valued capability is concrete and allowed; a JSON
array value is a list of values (manifest ``list_values``). Problems and warnings are
collected into the resolver's lists, never raised one by one."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from mlcc_constructs.core.engines.manifests import Capability, EngineManifest
from mlcc_constructs.core.support.errors import Problem
from mlcc_constructs.core.wrapper import ListValueError, list_form, list_values

TRUE, FALSE = "true", "false"
COMPANION_DEFAULTS: Mapping[str, str] = {"lora_max_rank": "16", "lora_target_modules": "all"}
"""Library defaults for companions, keyed by capability name; a manifest ``default`` wins."""

SENTINELS = frozenset({"", "none", "null", "nil", "undefined"})
"""Values that mean 'unset': a valued capability is never emitted with one."""


def companion_default(manifest: EngineManifest, name: str) -> str | None:
    """The default of capability ``name`` when it is a companion: the manifest's own
    ``default``, else the library table :data:`COMPANION_DEFAULTS`, else none."""
    capability = manifest.capability(name)
    if capability is not None and capability.default is not None:
        return capability.default
    return COMPANION_DEFAULTS.get(name)


def requirement_text(groups: tuple[tuple[str, ...], ...]) -> str:
    """Companion groups as a reader says them: ``[[a, b], [c]]`` → ``(a and b) or c``."""
    if len(groups) == 1:
        return " and ".join(groups[0])
    return " or ".join(
        f"({' and '.join(group)})" if len(group) > 1 else group[0] for group in groups
    )


@dataclass
class ValueChecks:
    """The value checks of one resolution (module doc)."""

    manifest: EngineManifest
    version: tuple[int, int, int] | None
    """The engine version (``None``: unknown, version gates fail open)."""
    given_version: str | None
    problems: list[Problem]
    warnings: list[str]

    def _suffix(self, key: str) -> str:
        return key[len(self.manifest.env_var_prefix) :]

    def has_off_form(self, key: str) -> bool:
        """Whether ``key=false`` reaches the engine as the flag's off form; if not, a warning
        says that it passes nothing (the seed rule)."""
        blocker = self.manifest.off_form_blocker(self._suffix(key), self.version)
        if blocker is not None:
            self.warnings.append(
                f"{key}=false passes nothing: {blocker}; the engine's default applies"
            )
        return blocker is None

    def tier2_ok(self, key: str, value: str, pointer: str) -> bool:
        """Whether the Tier-2 ``value`` can become arguments: a ``false`` the engine cannot
        turn into an off form is forwarded with a warning (it passes nothing), or refused when
        only the engine version stands in the way; a JSON array must be a list of values."""
        if value.lower() != FALSE:
            return self.arguments(key, value, pointer) is not None
        blocker = self.manifest.off_form_blocker(self._suffix(key), self.version)
        if blocker is not None and self.manifest.off_form_blocker(self._suffix(key), None) is None:
            self.problems.append(
                Problem(
                    message=f"false asks for the off form of the flag, but {blocker} "
                    f"(engine version {self.given_version})",
                    pointer=pointer,
                    value=value,
                    fix="remove the key (the engine's default applies) or use a newer image",
                )
            )
            return False
        self.has_off_form(key)
        return True

    def arguments(self, key: str, value: str, pointer: str) -> list[str] | None:
        """The arguments ``value`` gives (its elements for a JSON array, else itself); ``None``
        (and a problem) when it is a malformed list."""
        try:
            values = list_values(key, value, list_form(self.manifest.raw, self._suffix(key)))
        except ListValueError as error:
            self.problems.append(
                Problem(message=error.detail, pointer=pointer, value=value, fix=error.fix)
            )
            return None
        return [value] if values is None else values

    def capability_ok(self, capability: Capability, value: str, source: str) -> bool:
        """Whether ``value`` fits ``capability`` (its value type, concrete, allowed)."""
        key = self.manifest.key(capability)
        if capability.value_type == "boolean":
            if value.lower() not in (TRUE, FALSE):
                self.problems.append(
                    Problem(
                        message=f"{key} is a presence-only flag",
                        pointer=source,
                        value=value,
                        allowed="true, false",
                    )
                )
                return False
            return True
        if value.strip().lower() in SENTINELS:
            self.problems.append(
                Problem(
                    message=f"{key} needs a concrete value: "
                    "an empty or sentinel value makes engines reject startup",
                    pointer=source,
                    value=value,
                    fix="omit the setting to leave it unset",
                )
            )
            return False
        values = self.arguments(key, value, source)
        if values is None:
            return False
        if capability.allowed is not None and any(v not in capability.allowed for v in values):
            self.problems.append(
                Problem(
                    message=f"value not allowed for {key}",
                    pointer=source,
                    value=value,
                    allowed=", ".join(capability.allowed),
                    fix="use one of the allowed values (declared in the engine manifest)",
                )
            )
            return False
        return True
