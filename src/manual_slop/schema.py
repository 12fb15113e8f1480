"""Typed fields with defaults, used to validate every TOML file and every automation write.

A :class:`Field` knows its type, default and limits, and turns a raw value into a
checked one or raises :class:`FieldError` with a message that says what was
expected. :func:`normalize` applies a whole schema (dotted keys) to a parsed TOML
document: missing keys get their defaults, bad values are replaced by defaults
and reported as :class:`Problem` records that name the file, key and expected type.
Keys the schema does not know are kept as they are, so nothing a user wrote is lost.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Field", "FieldError", "Problem", "Schema", "describe_value", "get_path", "normalize", "set_path"]

_TYPE_NAMES: dict[type, str] = {
    str: "string",
    int: "integer",
    float: "number",
    bool: "boolean",
    list: "list",
    dict: "table",
}


class FieldError(ValueError):
    """A value does not fit its field; the message says what was expected."""

    def __init__(self, key: str, expected: str, value: object) -> None:
        self.key = key
        self.expected = expected
        self.value = value
        super().__init__(f"{key}: expected {expected}, got {describe_value(value)}")


def describe_value(value: object) -> str:
    """Short, safe description of a value for error messages (type name and a clipped repr)."""
    text = repr(value)
    if len(text) > 60:
        text = text[:57] + "..."
    return f"{type(value).__name__} {text}"


@dataclass(frozen=True, slots=True)
class Field:
    """One typed setting: its type, default and the limits a value must respect.

    ``kind`` is one of ``str``, ``int``, ``float``, ``bool``, ``list`` or ``dict``.
    ``items`` types the elements of a list, ``values`` the values of a table with
    free-form keys (``[gui.show_windows]``).
    """

    kind: type
    default: Any
    doc: str = ""
    choices: tuple[Any, ...] | None = None
    minimum: float | None = None
    maximum: float | None = None
    items: type | None = None
    values: type | None = None
    pattern: str | None = None  # full-match regex for strings
    pattern_doc: str = ""  # how the pattern reads in messages

    def expected(self) -> str:
        """Human description of what this field accepts."""
        name = _TYPE_NAMES.get(self.kind, self.kind.__name__)
        if self.choices is not None:
            return "one of " + ", ".join(repr(c) for c in self.choices)
        if self.pattern is not None:
            return f"{name} ({self.pattern_doc or 'matching ' + self.pattern})"
        if self.items is not None:
            name = f"list of {_TYPE_NAMES.get(self.items, self.items.__name__)}s"
        if self.values is not None:
            name = f"table of {_TYPE_NAMES.get(self.values, self.values.__name__)}s"
        if self.minimum is not None and self.maximum is not None:
            return f"{name} between {_number(self.minimum)} and {_number(self.maximum)}"
        if self.minimum is not None:
            return f"{name} >= {_number(self.minimum)}"
        if self.maximum is not None:
            return f"{name} <= {_number(self.maximum)}"
        return name

    def check(self, key: str, value: object) -> Any:
        """Return ``value`` converted to this field's type, or raise :class:`FieldError`."""
        checked = _coerce(self.kind, value)
        if checked is _INVALID:
            raise FieldError(key, self.expected(), value)
        if self.choices is not None and checked not in self.choices:
            raise FieldError(key, self.expected(), value)
        if self.pattern is not None and not re.fullmatch(self.pattern, checked):
            raise FieldError(key, self.expected(), value)
        if isinstance(checked, int | float) and not isinstance(checked, bool):
            if self.minimum is not None and checked < self.minimum:
                raise FieldError(key, self.expected(), value)
            if self.maximum is not None and checked > self.maximum:
                raise FieldError(key, self.expected(), value)
        if self.items is not None:
            converted = [_coerce(self.items, item) for item in checked]
            if any(item is _INVALID for item in converted):
                raise FieldError(key, self.expected(), value)
            checked = converted
        if self.values is not None:
            converted_map = {k: _coerce(self.values, v) for k, v in checked.items()}
            if any(v is _INVALID for v in converted_map.values()) or not all(
                isinstance(k, str) for k in converted_map
            ):
                raise FieldError(key, self.expected(), value)
            checked = converted_map
        return checked

    def fresh_default(self) -> Any:
        """A private copy of the default, so callers may mutate lists and tables."""
        return copy.deepcopy(self.default)


_INVALID = object()


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def _coerce(kind: type, value: object) -> Any:
    # bool is an int subclass: never let True pass as 1 or 1 as True.
    if kind is bool:
        return value if isinstance(value, bool) else _INVALID
    if kind is int:
        if isinstance(value, bool) or not isinstance(value, int):
            return _INVALID
        return value
    if kind is float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            return _INVALID
        number = float(value)
        return number if number == number and abs(number) != float("inf") else _INVALID
    if kind is str:
        return value if isinstance(value, str) else _INVALID
    if kind is list:
        return list(value) if isinstance(value, list | tuple) else _INVALID
    if kind is dict:
        return dict(value) if isinstance(value, Mapping) else _INVALID
    return value if isinstance(value, kind) else _INVALID


Schema = Mapping[str, Field]


@dataclass(frozen=True, slots=True)
class Problem:
    """Something wrong in a file that was repaired on load; shown to the user."""

    file: str
    key: str
    message: str
    severity: str = "warning"
    extra: dict[str, Any] = field(default_factory=dict)

    def __str__(self) -> str:
        return f"{self.file}: {self.key}: {self.message}" if self.key else f"{self.file}: {self.message}"


def get_path(data: Mapping[str, Any], dotted: str, default: Any = None) -> Any:
    """Read ``a.b.c`` from nested tables; ``default`` when any part is missing."""
    node: Any = data
    for part in dotted.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return default
        node = node[part]
    return node


def set_path(data: dict[str, Any], dotted: str, value: Any) -> None:
    """Write ``a.b.c`` into nested tables, creating (or replacing non-table) parents."""
    parts = dotted.split(".")
    node = data
    for part in parts[:-1]:
        child = node.get(part)
        if not isinstance(child, dict):
            child = {}
            node[part] = child
        node = child
    node[parts[-1]] = value


def _leaf_keys(data: Mapping[str, Any], prefix: str = "") -> Iterable[str]:
    for key, value in data.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, Mapping):
            yield from _leaf_keys(value, dotted + ".")
        else:
            yield dotted


def _non_table_parent(data: Mapping[str, Any], dotted: str) -> str | None:
    """The first parent of ``dotted`` that exists but is not a table, if any."""
    node: Any = data
    parts = dotted.split(".")
    for index, part in enumerate(parts[:-1]):
        if part not in node:
            return None
        node = node[part]
        if not isinstance(node, Mapping):
            return ".".join(parts[: index + 1])
    return None


def normalize(
    raw: Mapping[str, Any], schema: Schema, file_label: str
) -> tuple[dict[str, Any], list[Problem]]:
    """Apply ``schema`` to a parsed document; return the repaired copy and what was repaired."""
    data: dict[str, Any] = copy.deepcopy(dict(raw))
    problems: list[Problem] = []
    reported_parents: set[str] = set()
    for key, spec in schema.items():
        sentinel = object()
        value = get_path(data, key, sentinel)
        if value is sentinel:
            blocker = _non_table_parent(data, key)
            if blocker is not None and blocker not in reported_parents:
                reported_parents.add(blocker)
                problems.append(
                    Problem(
                        file_label,
                        blocker,
                        f"expected a table, got {describe_value(get_path(data, blocker))}; "
                        "replaced by the default table",
                    )
                )
            set_path(data, key, spec.fresh_default())
            continue
        try:
            set_path(data, key, spec.check(key, value))
        except FieldError as exc:
            problems.append(
                Problem(
                    file_label,
                    key,
                    f"expected {exc.expected}, got {describe_value(value)}; using the default "
                    f"{spec.default!r}",
                )
            )
            set_path(data, key, spec.fresh_default())
    free_tables = tuple(k + "." for k, spec in schema.items() if spec.kind is dict)
    for key in _leaf_keys(raw):
        if key in schema or key.startswith(free_tables) or any(k.startswith(key + ".") for k in schema):
            continue
        problems.append(Problem(file_label, key, "unknown key (kept as it is)", severity="info"))
    return data, problems
