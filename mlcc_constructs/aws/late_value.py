"""``LateString``: a string a construct made later fills in, for objects prepared before it.

An app prepares its deployments before its cluster exists (they size the cluster's GPU node
pool), yet an autoscaled deployment's objects name the cluster's Prometheus workspace, which
exists only once the cluster does. The deployments take a :class:`LateString`'s ``token`` (a
``cdk.Lazy`` string); the app fills it in once the cluster is made (:meth:`LateString.set`),
and the token resolves at synth. A token never filled in fails the synth with ``missing``.
"""

from __future__ import annotations

import aws_cdk as cdk
import jsii

from mlcc_constructs.core.support.errors import MlccError


@jsii.implements(cdk.IStableStringProducer)
class _Producer:
    def __init__(self, late: LateString) -> None:
        self._late = late

    def produce(self) -> str | None:
        if self._late.value is None:
            raise MlccError(self._late.missing.problems)
        return self._late.value


class LateString:
    """A string known later (module doc). ``token``: what to pass now; ``missing``: the error
    the synth fails with if :meth:`set` never gave a value."""

    def __init__(self, missing: MlccError) -> None:
        self.missing = missing
        self.value: str | None = None
        self.token: str = cdk.Lazy.string(_Producer(self))

    def set(self, value: str | None) -> None:
        """Fill it in (``None``: there is no value; the synth then fails with ``missing`` if
        something used the token)."""
        self.value = value

    def placeholder(self, text: str, placeholder: str) -> str:
        """``text`` with the token written as ``placeholder`` (for files written before the
        synth, e.g. dist/ for GitOps to substitute)."""
        return text.replace(self.token, placeholder)
