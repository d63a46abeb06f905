"""Target renderers: one module per target, named by the target's manifest (``renderer``).

Each exposes ``render(prepared) -> list[RenderedObject]``: the target's objects in apply
order, each with its construct id. A renderer lays out what the
:class:`~mlcc_constructs.core.serving.prepare.deployment.PreparedDeployment` carries; it decides
nothing and never branches on an engine or a target name.
"""
