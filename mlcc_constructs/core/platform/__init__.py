"""Platform facts: what AWS and Kubernetes are, as data and pure functions.

The instance catalog (:mod:`.catalog`), pinned versions (:mod:`.versions`), bucket names
(:mod:`.buckets`), deployment targets (:mod:`.targets`), IAM statements (:mod:`.iam_statement`,
:mod:`.alb_controller_iam`, :mod:`.hyperpod_iam`), EKS (:mod:`.cluster_access`, :mod:`.eks_rules`,
:mod:`.gpu_capacity`), the endpoint's cluster side (:mod:`.load_balancing`,
:mod:`.endpoint_components`), HyperPod (:mod:`.hyperpod`, :mod:`.inference_operator`) and the stack
history rules (:mod:`.stack_history`).
"""
