"""Labels every object the library creates carries, cluster-side or per deployment."""

from __future__ import annotations

MANAGED_BY = {"app.kubernetes.io/managed-by": "mlcc-constructs"}
"""``kubectl get ... -l app.kubernetes.io/managed-by=mlcc-constructs`` lists them."""
