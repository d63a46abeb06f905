"""Stage 4, objects: the Kubernetes kinds the library renders, one module per kind.

:mod:`.registry` holds them (how each is rendered, validated, ordered and required, and how a
live object's readiness is read); every other public module of this package is one kind and
defines ``KIND``. Helpers start with ``_``: :mod:`._schemas` (core kinds against the Kubernetes
schemas), :mod:`._crd_rules` (custom resources against rule data per CRD version,
``mlcc_constructs/data/crd_rules/``), :mod:`._common`.
"""
