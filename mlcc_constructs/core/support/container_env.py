"""The env names the library itself places in every engine container, in one place: the code
that places them reads them from here, and so does the rule that keeps a user's env off them
(:mod:`mlcc_constructs.core.serving.resolve.env_rules`).

* The wrapper's own variables: every name with :data:`~mlcc_constructs.core.wrapper.CONTROL_PREFIX`
  (``MLCC_ENGINE``, ``MLCC_ENGINE_MANIFEST``, ``MLCC_ENGINE_KEYS``, ``MLCC_API_KEY``...).
* :data:`POD_ENV`: ``HOME`` and ``USER``, set in every pod the library renders.
* :data:`POD_IDENTITY_ENV`: what the EKS Pod Identity webhook adds to a pod whose
  ServiceAccount has an association (the deployment's role: Secrets Manager values, a streamed
  model); a user value would point the pod's AWS SDKs at other credentials.

The engine's cache variables (manifest ``cache_dirs``) and a streamed model's region variables
(manifest ``model_load.stream.env``) are not here: a deployment may set them itself and the
library then leaves them alone (``serving/prepare/engine_cache.py``, ``serving/prepared.py``).
"""

from __future__ import annotations

from mlcc_constructs.core.wrapper import CONTROL_PREFIX

USER = "mlcc"
"""``USER`` for UID 1000: images have no passwd entry for it, and getpass.getuser() (torch
inductor, triton caches) fails without one."""
HOME = "/home/mlcc"
"""``HOME``: a writable ``emptyDir`` (the root filesystem is read-only)."""
POD_ENV: tuple[tuple[str, str], ...] = (("HOME", HOME), ("USER", USER))
"""The variables every rendered engine container gets, in order."""
POD_IDENTITY_ENV = ("AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE")
"""The variables EKS sets in a pod with a Pod Identity association, which the AWS SDKs' container
credential provider reads (https://docs.aws.amazon.com/sdkref/latest/guide/feature-container-credentials.html;
aws/amazon-eks-pod-identity-webhook pkg/handler)."""
WRAPPER_PREFIX = CONTROL_PREFIX
"""The wrapper's variables' prefix (the wrapper, stdlib-only, owns the value)."""
