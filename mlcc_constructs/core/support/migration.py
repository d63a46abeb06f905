"""Calls in the form of an earlier release: a clear error that says how to migrate.

The first release's cdk8s constructs took loose keyword arguments (``spec=``, ``context=``,
``registry=``, ``config_map=``; ``name=``... on ``CacheBackend``); today each takes one frozen
props object (``props=XxxProps(...)``). :func:`replaced_keywords` wraps such a constructor: a
call that passes one of the first release's keywords raises :class:`LegacyKeywordError`, naming
the construct, the keywords it got, the props class and the migrated call, before anything is
built. Every other call reaches the constructor unchanged, so a keyword no release ever had
still gets Python's own ``TypeError``.

The decorator returns the callable type it was given: type checkers see the constructor's real
signature and keep reporting ``Unexpected keyword argument "spec"``. Plain Python (no jsii);
wrapping costs nothing at import, and a call pays one set intersection.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Any, TypeVar, cast

from mlcc_constructs.core.support.errors import MlccError, Problem

CHANGELOG = "CHANGELOG.md"
"""Where every breaking change and its migration is listed (the repository's root)."""
CHANGELOG_SECTION = "cdk8s constructs take props"
"""The CHANGELOG heading that shows the migrated call of every construct."""
PREPARE_KEYWORDS = ("spec", "context", "registry")
"""The first release's keywords that are now :func:`prepare`'s arguments."""

F = TypeVar("F", bound=Callable[..., None])


@dataclass(frozen=True, kw_only=True)
class PropsMigration:
    """How one construct's first-release keyword form maps onto its props.

    Fields:

    ``construct``: The construct's class name (``EngineConfigMap``).
    ``props``: Its props class name (``EngineConfigMapProps``).
    ``prepared``: The props take ``deployment=prepare(spec, context=..., registry=...)``: the
        first release's ``spec``, ``context`` and ``registry`` keywords are :func:`prepare`'s
        arguments now. Default: false.
    ``required``: First-release keywords that are props fields of the same name, required.
        Default: none.
    ``optional``: First-release keywords that are optional props fields of the same name.
        Default: none.
    """

    construct: str
    props: str
    prepared: bool = False
    required: tuple[str, ...] = ()
    optional: tuple[str, ...] = ()

    @property
    def keywords(self) -> tuple[str, ...]:
        """Every keyword the first release's constructor took, in its signature's order."""
        return (*(PREPARE_KEYWORDS if self.prepared else ()), *self.required, *self.optional)

    def migrated_call(self, given: Collection[str]) -> str:
        """The call in today's form for a call that passed the keywords ``given``: required
        fields always, optional ones only where the call gave them; ``...`` stands for the
        caller's values."""
        fields = []
        if self.prepared:
            arguments = ["spec", *(f"{k}=..." for k in PREPARE_KEYWORDS[1:] if k in given)]
            fields.append(f"deployment=prepare({', '.join(arguments)})")
        fields += [f"{k}=..." for k in self.required]
        fields += [f"{k}=..." for k in self.optional if k in given]
        return f"{self.construct}(scope, id, props={self.props}({', '.join(fields)}))"

    def imports(self) -> str:
        """The package-root names the migrated call uses."""
        return " and ".join([self.props, *(["prepare"] if self.prepared else [])])


class LegacyKeywordError(MlccError, TypeError):
    """A construct was called with keyword arguments of the first release.

    A ``TypeError`` (the call is wrong) and an :class:`MlccError` (one :class:`Problem`, in the
    project's words: what, the value, what is allowed, the fix).

    :ivar migration: the construct's :class:`PropsMigration`.
    :ivar keywords: the first-release keywords the call passed, in the old signature's order.
    """

    def __init__(self, migration: PropsMigration, keywords: Collection[str]) -> None:
        self.migration = migration
        self.keywords: tuple[str, ...] = tuple(k for k in migration.keywords if k in keywords)
        super().__init__(
            Problem(
                message="the first release's keyword arguments are gone; the construct takes "
                f"props={migration.props}(...)",
                where=migration.construct,
                value=list(self.keywords),
                allowed="props",
                fix=f"{migration.migrated_call(self.keywords)} with {migration.imports()} from "
                f'mlcc_constructs; {CHANGELOG} "{CHANGELOG_SECTION}" shows each construct',
            )
        )


def replaced_keywords(migration: PropsMigration) -> Callable[[F], F]:
    """Decorate a construct's ``__init__`` whose first-release keywords ``migration`` names:
    a call with any of them raises :class:`LegacyKeywordError` (nothing is constructed);
    every other call is passed through. The wrapped ``__init__`` keeps its name, docstring,
    annotations and signature (``functools.wraps``) and, for type checkers, its type."""
    legacy = frozenset(migration.keywords)

    def decorate(init: F) -> F:
        @functools.wraps(init)
        def checked(self: Any, *args: Any, **kwargs: Any) -> None:
            if legacy.intersection(kwargs):
                raise LegacyKeywordError(migration, kwargs)
            init(self, *args, **kwargs)

        return cast(F, checked)

    return decorate
