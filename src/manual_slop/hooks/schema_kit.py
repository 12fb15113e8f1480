"""Building blocks of the Hook API's JSON Schemas, shared by :mod:`.schemas` and
:mod:`.memory_schemas` (which :mod:`.schemas` imports, so neither can own them)."""

from __future__ import annotations

from typing import Any

__all__ = ["ANY", "INT", "NOT_BLANK", "NULLABLE_STR", "NUM", "OBJECT", "SPACE", "STR", "Schema", "obj"]

Schema = dict[str, Any]

STR: Schema = {"type": "string"}
INT: Schema = {"type": "integer"}
NUM: Schema = {"type": "number"}
NULLABLE_STR: Schema = {"type": ["string", "null"]}
OBJECT: Schema = {"type": "object"}
ANY: Schema = {}

# The characters str.strip() removes (str.isspace), spelled out: "\s" means other sets in the
# ECMA-262 regexes the document promises (no \x1c-\x1f or \x85, but \ufeff) than in Python's re,
# so a fuzzer and the server would disagree on "\x1e" (schemathesis found it).
SPACE = r"[\t\n\x0b\x0c\r\x1c-\x1f \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]"
NOT_BLANK = SPACE.replace("[", "[^", 1)  # a pattern: some character strip() keeps


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
