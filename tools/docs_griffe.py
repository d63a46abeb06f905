"""A Griffe extension for the docs site (mkdocs.yml, mkdocstrings ``extensions``): the package's
docstrings cross-reference with Sphinx roles (``:class:`~x.ServedModel```), which Markdown would
show as typed; this shows each as inline code of the name (the last part after ``~``)."""

from __future__ import annotations

from typing import Any

import griffe

from tools.docs_reference import markdown_roles


class SphinxRolesAsCode(griffe.Extension):
    """Rewrites every docstring's Sphinx roles once the object tree is loaded."""

    def on_object(self, *, obj: griffe.Object, loader: griffe.GriffeLoader, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = markdown_roles(obj.docstring.value)
