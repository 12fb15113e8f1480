"""Building blocks of the Hook API's JSON Schemas, shared by :mod:`.schemas` and
:mod:`.memory_schemas` (which :mod:`.schemas` imports, so neither can own them)."""

from __future__ import annotations

from typing import Any

__all__ = ["ANY", "INT", "NULLABLE_STR", "NUM", "OBJECT", "STR", "Schema", "obj"]

Schema = dict[str, Any]

STR: Schema = {"type": "string"}
INT: Schema = {"type": "integer"}
NUM: Schema = {"type": "number"}
NULLABLE_STR: Schema = {"type": ["string", "null"]}
OBJECT: Schema = {"type": "object"}
ANY: Schema = {}


def obj(
    required: dict[str, Schema], optional: dict[str, Schema] | None = None, *, closed: bool = True
) -> Schema:
    """An object schema: ``required`` keys must be present; ``closed`` refuses others."""
    schema: Schema = {
        "type": "object",
        "properties": {**required, **(optional or {})},
        "required": list(required),
    }
    if closed:
        schema["additionalProperties"] = False
    return schema
