"""Every schema inside a grant's JSON Schema, found as the validator finds them.

Which keywords hold schemas depends on the schema's draft (its ``$schema``, 2020-12 when it
names none or one unknown): ``referencing`` knows them, so a check that looks at each schema
within a grant's (an unknown keyword, a pattern) walks them all through it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from referencing import Resource
from referencing.jsonschema import DRAFT202012, specification_with

__all__ = ["subschemas"]


def subschemas(schema: Any) -> Iterator[dict[str, Any]]:
    """``schema`` and every schema within it that is an object (a boolean schema holds no
    keyword); nothing when ``schema`` is no object."""
    if not isinstance(schema, dict):
        return
    draft = schema.get("$schema")
    draft = draft if isinstance(draft, str) else ""
    pending = [specification_with(draft, default=DRAFT202012).create_resource(schema)]
    while pending:
        resource: Resource[Any] = pending.pop()
        if isinstance(resource.contents, dict):
            yield resource.contents
        try:
            pending.extend(list(resource.subresources()))
        except (AttributeError, TypeError):
            # A keyword of a shape the walk does not know (draft 3's ``extends`` as one
            # schema): what it holds is not walked, and the validator still reads it.
            continue
