"""cdk8s constructs: thin wrappers that emit what ``mlcc_constructs.core`` renders.

One module per Kubernetes kind (``config_map``, ``deployment``, ``inference_endpoint``) and
``serving_chart`` composing them for a deployment's target; ``workload`` makes the rendered
Deployment a cdk8s-plus-28 target (HorizontalPodAutoscaler, NetworkPolicy). Importing this
package starts the jsii runtime; ``mlcc_constructs`` exposes the classes lazily.
"""
