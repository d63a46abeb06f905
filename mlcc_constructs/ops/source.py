"""The interface every promotion source implements (:mod:`.adapter_sources`, :mod:`.hf_hub`)."""

from __future__ import annotations

from mlcc_constructs.core.adapters.s3_layout import S3Location
from mlcc_constructs.ops.s3 import S3Client


class Source:
    """Files of a promotion source (an S3 prefix, a ``.tar.gz`` on S3, a Hugging Face
    repository), each hashed when the source is opened."""

    uri: str
    files: dict[str, str]
    """relative name → sha256 hex"""

    def where(self, name: str) -> str:
        """The location of file ``name``, for errors about it."""
        return f"{self.uri} {name}"

    def read(self, name: str) -> bytes:
        """The bytes of file ``name``."""
        raise NotImplementedError

    def copy_to(self, s3: S3Client, name: str, dest: S3Location) -> None:
        """Write file ``name`` to ``dest``."""
        raise NotImplementedError

    def close(self) -> None:
        """Release what the source holds open."""
        return None
