"""Mountpoint for Amazon S3 CSI driver facts the rendered volumes and the clean-up both read."""

from __future__ import annotations

S3_CSI_DRIVER = "s3.csi.aws.com"
"""The driver's CSI name (a PersistentVolume's ``spec.csi.driver``)."""
PV_CAPACITY = "1200Gi"
"""A static volume's ``capacity.storage``: required by Kubernetes, ignored by Mountpoint."""
