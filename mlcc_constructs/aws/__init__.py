"""AWS CDK constructs: thin shells that emit what ``mlcc_constructs.core`` decides.

``buckets`` (every bucket of ``stacks/buckets.json``), ``s3_csi`` (the Mountpoint S3 CSI
driver's IRSA role and add-on), ``inference_components`` (one SageMaker inference component
per LoRA adapter), ``kubernetes_objects`` (Kubernetes objects applied by CloudFormation, one
resource per object), ``hyperpod_cluster`` (a SageMaker HyperPod cluster on an EKS cluster, or an
imported one), ``inference_operator`` (the HyperPod inference operator add-on, its roles and
dependencies) and ``nag`` (the project's cdk-nag pack). Importing this package starts
the jsii runtime; ``mlcc_constructs`` exposes
the classes lazily.
"""
