"""Checks of the values that become an engine's arguments (ADR-010 value shapes), for the
resolver: a boolean is ``true`` or ``false``, and ``false`` reaches the engine only as the
flag's off form (manifest ``negation``); a valued capability is concrete and allowed; a JSON
array value is a list of values (manifest ``list_values``). Problems and warnings are
collected into the resolver's lists, never raised one by one.

Every Tier-2 flag is also checked against the recorded parser of the engine release the
deployment names (``engine_version``, else the pinned one; ``parser_facts``): a flag the
release does not have is refused with a did-you-mean, a flag that takes no value takes only
``true``/``false`` (``1``, ``yes``, ``on`` are refused, not normalised: the manifest rule is
one spelling, and a refusal shows the user the rule where a silent rewrite would not), a flag
that takes several values takes a JSON array (a comma- or space-separated value is refused:
the engine would get one token), an int/float/choices flag a value of its type, and a flag whose
recorded facts carry the engine's bounds or JSON shape a value within them. A release without
recorded facts is warned about, flag by flag."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from mlcc_constructs.core.engines.manifests import Capability, EngineManifest
from mlcc_constructs.core.engines.parser_facts import (
    FlagCheck,
    ParserFacts,
    parser_facts,
    recorded_versions,
)
from mlcc_constructs.core.support.errors import Problem
from mlcc_constructs.core.wrapper import ListValueError, flag_for, list_form, list_values

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
    pinned_release: str | None = None
    """The release the default image runs (``data/versions.json``): its parser applies when
    no version is given (``None``: no parser check then)."""

    def _suffix(self, key: str) -> str:
        return key[len(self.manifest.env_var_prefix) :]

    def _release(self) -> str | None:
        """The engine release whose parser applies: the one named, else the pinned one."""
        if self.given_version is None:
            return self.pinned_release
        if self.version is None:
            return None  # not a version: refused where the version is read
        return ".".join(str(part) for part in self.version)

    def _facts(self, key: str, *, warn: bool) -> ParserFacts | None:
        """The recorded parser of :meth:`_release`; a warning naming ``key`` when none is and
        ``warn``."""
        release = self._release()
        if release is None:
            return None
        facts = parser_facts(self.manifest.engine, release)
        if facts is None and warn:
            recorded = ", ".join(recorded_versions(self.manifest.engine)) or "none"
            self.warnings.append(
                f"{key}: not checked against {self.manifest.engine} {release}'s parser (the "
                f"flag's spelling and value shape): no parser of that release is recorded "
                f"(recorded: {recorded})"
            )
        return facts

    def own_env(self, key: str) -> bool:
        """An ``engine_env`` key passes as env; a warning when the release does not read it."""
        release = self._release()
        facts = parser_facts(self.manifest.engine, release) if release else None
        if facts is not None and key not in facts.env:
            self.warnings.append(
                f"{key} is passed as env, but {facts.label} does not read it (its env registry "
                f"is recorded in mlcc_constructs/data/engine_parsers/)"
            )
        return True

    def _parser_problem(
        self, key: str, value: str, pointer: str, *, warn: bool = True
    ) -> Problem | None:
        """What the release's recorded parser says against ``key=value`` (module doc); with
        ``warn``, a warning when the release has no recorded parser."""
        facts = self._facts(key, warn=warn)
        if facts is None:
            return None
        flag = flag_for(self._suffix(key), self.manifest.launch.get("flag_style", "kebab"))
        check = FlagCheck(facts=facts, key=key, flag=flag, value=value, pointer=pointer)
        fact = facts.flags.get(flag)
        if fact is None:
            return check.unknown()
        lowered = value.lower()
        if not fact.takes_value or flag in fact.off:
            return check.boolean(fact, lowered)
        if lowered in (TRUE, FALSE) and fact.nargs != "?":
            return check.bare(fact)
        try:
            values = list_values(key, value, list_form(self.manifest.raw, self._suffix(key)))
        except ListValueError:
            return None  # reported by arguments()
        return check.values(fact, values)

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
        only the engine version stands in the way; a JSON array must be a list of values; the
        flag and its value must fit the release's recorded parser."""
        problem = self._parser_problem(key, value, pointer)
        if problem is not None:
            self.problems.append(problem)
            return False
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
        # a capability's flag is checked against the recorded parsers by the tests; here its
        # value (unrecorded releases: no warning per capability)
        problem = self._parser_problem(key, value, source, warn=False)
        if problem is not None:
            if problem not in self.problems:  # a companion is checked where it is required too
                self.problems.append(problem)
            return False
        return True
