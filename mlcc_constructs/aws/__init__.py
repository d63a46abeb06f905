"""AWS CDK constructs: thin shells that emit what ``mlcc_constructs.core`` decides.

``buckets`` (every bucket of ``stacks/buckets.json``), ``s3_csi`` (the Mountpoint S3 CSI
driver's IRSA role and add-on) and ``inference_components`` (one SageMaker inference component
per LoRA adapter). Importing this package starts the jsii runtime; ``mlcc_constructs`` exposes
the classes lazily.
"""
