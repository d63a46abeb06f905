"""The engine contract (ADR-010): engine manifests and their checks, and the rules of the values
that become an engine's arguments.

:mod:`.manifests` (the registry of built-in and plugin engines), :mod:`.manifest_checks` (the
semantic checks beyond the schema), :mod:`.values` (value shapes, companion defaults, sentinels).
The container-side program that applies the contract is :mod:`mlcc_constructs.core.wrapper`.
"""
