"""The app's stacks of this name are the library's (:mod:`mlcc_constructs.aws.serving_stacks`),
so a fleet stage (:class:`~mlcc_constructs.aws.serving_stage.ServingStage`) composes the very
same stacks as the single-environment app."""

from mlcc_constructs.aws.serving_stacks import DeploymentServingStack, ServingNamespacesStack

__all__ = ["DeploymentServingStack", "ServingNamespacesStack"]
