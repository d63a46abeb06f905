"""Labels every object the library creates carries, cluster-side or per deployment."""

from __future__ import annotations

MANAGED_BY = {"app.kubernetes.io/managed-by": "mlcc-constructs"}
"""``kubectl get ... -l app.kubernetes.io/managed-by=mlcc-constructs`` lists them."""

STREAMED_MODEL_ANNOTATION = "mlcc-constructs/streamed-model"
"""The annotation of a Deployment whose engine streams its model from S3 (``model_load:
stream``): the model's ``s3://`` URI, which no PersistentVolume then names. Here rather than
in :mod:`~mlcc_constructs.core.adapters.clean`, its reader: the render path writes it, and
importing the clean-up's modules costs its start-up."""
