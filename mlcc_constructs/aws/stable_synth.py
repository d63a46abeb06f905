"""Byte-stable synthesis: what an app sets so that ``cdk.out/`` is the same on every run and
machine (construct stack traces name jsii's temporary folder)."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

import aws_cdk as cdk

# Construct creation and annotation stack traces off: their frames name jsii's temporary
# folder, so cdk.out/ would differ from run to run (aws-cdk-lib cx-api
# DISABLE_CREATION_STACK_TRACES / DISABLE_METADATA_STACK_TRACE; `cdk synth --debug` still records
# creation traces). Set by the app, not in cdk.json: the CDK CLI warns about every `aws:` key
# under cdk.json's "context" ("A reserved context key ('context.aws:') ...", aws-cdk
# lib/cli/user-configuration.js).
TRACE_CONTEXT: Mapping[str, bool] = MappingProxyType(
    {"aws:cdk:disable-creation-stack-traces": True, "aws:cdk:disable-stack-trace": True}
)


def quiet_stack_traces(app: cdk.App) -> None:
    """Turn construct creation and annotation stack traces off on ``app`` (``TRACE_CONTEXT``)
    unless its context sets the key (``-c aws:cdk:disable-stack-trace=false``). Call it
    before the app has children: context is set on the root."""
    for key, value in TRACE_CONTEXT.items():
        if app.node.try_get_context(key) is None:
            app.node.set_context(key, value)
