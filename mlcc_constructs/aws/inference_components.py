"""``AdapterInferenceComponents``: LoRA adapters on a SageMaker real-time endpoint.

Target ``realtime-inference`` has no pod to load adapters into: each adapter is its own
inference component whose ``Specification.BaseInferenceComponentName`` is the component
serving the base model. Props name each adapter by its canonical version
(``s3://<core>/models/<org>/<base>/<adapter folder>/<project>/<name>/v<hash12>/``, as
:mod:`mlcc_constructs.core.adapters.s3_layout` composes it); the component's
``Container.ArtifactUrl``
is that version's packed archive, ``.../<name>/v<hash12>.tar.gz``, because SageMaker reads an
ArtifactUrl only as "a single gzip compressed tar archive (.tar.gz suffix)"
(https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_InferenceComponentContainerSpecification.html).
``mlcc adapter pack VERSION`` writes it before ``cdk deploy``. Only versions are accepted: a
version never changes, so a deployed component always points at the bytes it was created with.

Construct ids are a contract: one child per adapter, its id the adapter (lora) name.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

import aws_cdk as cdk
from aws_cdk import aws_iam as iam, aws_sagemaker as sagemaker
from constructs import Construct

from mlcc_constructs.core.adapters import s3_layout
from mlcc_constructs.core.support.errors import MlccError, Problem, fail, json_pointer
from mlcc_constructs.core.support.typecheck import check_fields

# SageMaker InferenceComponentName
_COMPONENT_NAME = re.compile(r"^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$")

BaseComponentRef = sagemaker.CfnInferenceComponent | str


@dataclass(frozen=True, kw_only=True)
class AdapterInferenceComponentsProps:
    """Props of :class:`AdapterInferenceComponents`."""

    endpoint_name: str
    """The SageMaker endpoint the base component runs on."""
    base_component: BaseComponentRef
    """The base model's inference component (the construct, which also orders the deployment after
    it, or its name)."""
    adapters: Mapping[str, str] = field(default_factory=dict)
    """Lora name → canonical adapter version URI (``.../v<hash12>/``)."""
    name_prefix: str | None = None
    """Component names are ``<name_prefix>-<lora name>``; default: the base component's name
    (required when the base construct has no literal name)."""
    variant_name: str | None = None
    """The endpoint variant; default ``None`` (omitted: SageMaker's default)."""

    def __post_init__(self) -> None:
        if isinstance(self.adapters, Mapping):
            object.__setattr__(self, "adapters", MappingProxyType(dict(self.adapters)))
        check_fields(self)


class AdapterInferenceComponents(Construct):
    """One ``AWS::SageMaker::InferenceComponent`` per LoRA adapter on a base component."""

    def __init__(
        self, scope: Construct, id: str, *, props: AdapterInferenceComponentsProps
    ) -> None:
        super().__init__(scope, id)
        base = props.base_component
        base_name = base if isinstance(base, str) else base.inference_component_name
        prefix = props.name_prefix or base_name
        if not base_name or not prefix or cdk.Token.is_unresolved(prefix):
            raise fail(
                "the base inference component has no literal name",
                where="AdapterInferenceComponentsProps.base_component",
                fix="set inference_component_name on the base component, or pass its name "
                "and name_prefix",
            )
        problems: list[Problem] = []
        versions: dict[str, s3_layout.CanonicalAdapter] = {}
        for lora_name, uri in sorted(props.adapters.items()):
            pointer = json_pointer("adapters", lora_name)
            adapter = s3_layout.parse_canonical_adapter(uri)
            if adapter is None or adapter.version is None:
                problems.append(
                    Problem(
                        message="not a canonical adapter version",
                        where="AdapterInferenceComponentsProps",
                        pointer=pointer,
                        value=uri,
                        allowed="s3://<core>/models/<org>/<base>/<adapters>/<project>/<name>/"
                        "v<hash12>/",
                        fix="promote the adapter (mlcc adapter promote) and use its version URI",
                    )
                )
                continue
            if not _COMPONENT_NAME.match(f"{prefix}-{lora_name}"):
                problems.append(
                    Problem(
                        message="the inference component name would be invalid",
                        where="AdapterInferenceComponentsProps",
                        pointer=pointer,
                        value=f"{prefix}-{lora_name}",
                        allowed="letters, digits and '-', at most 63 characters",
                        fix="rename the adapter or pass a shorter name_prefix",
                    )
                )
                continue
            versions[lora_name] = adapter
        if problems:
            raise MlccError(problems)
        self.adapters = MappingProxyType(dict(versions))
        self.components: Mapping[str, sagemaker.CfnInferenceComponent] = {}
        components = {}
        for lora_name, adapter in versions.items():
            component = sagemaker.CfnInferenceComponent(
                self,
                lora_name,
                endpoint_name=props.endpoint_name,
                inference_component_name=f"{prefix}-{lora_name}",
                variant_name=props.variant_name,
                specification=sagemaker.CfnInferenceComponent.InferenceComponentSpecificationProperty(
                    base_inference_component_name=base_name,
                    container=sagemaker.CfnInferenceComponent.InferenceComponentContainerSpecificationProperty(
                        artifact_url=adapter.packed.uri
                    ),
                ),
            )
            if not isinstance(base, str):
                component.add_dependency(base)
            components[lora_name] = component
        self.components = MappingProxyType(components)

    def grant_read(self, grantee: iam.IGrantable) -> iam.Grant:
        """Let ``grantee`` (the endpoint's execution role) read exactly these adapters' packed
        archives (``s3:GetObject`` on each object, nothing listed)."""
        partition = cdk.Aws.PARTITION
        archives = sorted({(a.packed.bucket, a.packed.key) for a in self.adapters.values()})
        if not archives:
            raise fail("there are no adapters to grant", where="AdapterInferenceComponents")
        return iam.Grant.add_to_principal(
            grantee=grantee,
            actions=["s3:GetObject"],
            resource_arns=[f"arn:{partition}:s3:::{b}/{k}" for b, k in archives],
        )
