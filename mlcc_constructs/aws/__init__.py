"""AWS CDK constructs: thin shells that emit what ``mlcc_constructs.core`` decides.

``serving_cluster`` (``ServingCluster``: an EKS Auto Mode cluster with its GPU node pool,
access entries, OIDC provider and S3 CSI driver, on the team's VPC or a new one;
``IServingCluster`` and ``ServingCluster.from_cluster_attributes`` for a team's own cluster),
``served_model`` (``ServedModel``: one prepared deployment applied to any cluster),
``gpu_node_pool`` (the Auto Mode GPU ``NodePool``), ``buckets`` (the buckets of
``stacks/buckets.json``, named as the app says; every construct takes buckets as ``s3.IBucket``
objects), ``s3_csi`` (the Mountpoint S3 CSI driver's IRSA role and add-on),
``inference_components`` (one SageMaker inference component per LoRA adapter),
``kubernetes_objects`` (Kubernetes objects applied by CloudFormation, one resource per object),
``hyperpod_cluster`` (a SageMaker HyperPod cluster on an EKS cluster, or an imported one),
``inference_operator`` (the HyperPod inference operator add-on, its roles and dependencies) and
``nag`` (the project's cdk-nag pack). Importing this package starts the jsii runtime;
``mlcc_constructs`` exposes the classes lazily.
"""
