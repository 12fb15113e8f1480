"""The route table's vocabulary and the request checks shared by every endpoint.

A :class:`Route` declares everything about one endpoint: method, path template,
handler, the schema of its JSON body, its query parameters, the schema and status of
its reply and the error statuses it can give. The :class:`Router` matches requests
against the table and turns raw query strings and bodies into checked values, or
raises :class:`~manual_slop.hooks.errors.BadRequest` with a message that names the
problem. :mod:`.openapi` renders the same table as the OpenAPI document, so the two
cannot drift apart.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs

from manual_slop.hooks.errors import BadRequest, MethodNotAllowed, NotFound
from manual_slop.hooks.guard import MAX_JSON_DEPTH, json_depth_exceeds
from manual_slop.hooks.schemas import GUI_ACTION_SCHEMAS, REQUEST_SCHEMAS, json_type

if TYPE_CHECKING:
    from jsonschema import Draft202012Validator

__all__ = ["Call", "QueryParam", "Reply", "Route", "Router", "TextParam"]

GUI_ACTION = "GuiAction"  # the one body whose schema depends on its "action" key
# A \uD800-\uDFFF escape: only a body with one can decode to a string holding a surrogate.
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


@dataclass(frozen=True, slots=True)
class QueryParam:
    """A numeric query parameter with a default and limits."""

    name: str
    kind: type  # int or float
    default: int | float
    minimum: int | float
    maximum: int | float
    doc: str

    def parse(self, values: list[str]) -> int | float:
        if len(values) != 1:
            raise BadRequest(f"query parameter {self.name!r} given {len(values)} times; give it once")
        text = values[0].strip()
        try:
            value: int | float = int(text) if self.kind is int else float(text)
        except ValueError:
            kind = "an integer" if self.kind is int else "a number"
            raise BadRequest(f"query parameter {self.name!r}: expected {kind}, got {text[:40]!r}") from None
        if not self.minimum <= value <= self.maximum:  # also rejects nan
            raise BadRequest(
                f"query parameter {self.name!r}: expected {self.minimum}..{self.maximum}, got {text[:40]}"
            )
        return value

    def schema(self) -> dict[str, Any]:
        return {
            "type": "integer" if self.kind is int else "number",
            "minimum": self.minimum,
            "maximum": self.maximum,
            "default": self.default,
        }


@dataclass(frozen=True, slots=True)
class TextParam:
    """A text query parameter: one of ``choices`` or, without choices, a full match of ``pattern``
    ('' always allowed: the default)."""

    name: str
    default: str
    doc: str
    choices: tuple[str, ...] = ()
    pattern: str = ""
    expected: str = ""  # what a pattern means, for the error message

    def parse(self, values: list[str]) -> str:
        if len(values) != 1:
            raise BadRequest(f"query parameter {self.name!r} given {len(values)} times; give it once")
        text = values[0]
        if self.choices and text not in self.choices:
            raise BadRequest(
                f"query parameter {self.name!r}: expected one of {', '.join(self.choices)}, got {text[:40]!r}"
            )
        if not self.choices and text and not re.fullmatch(self.pattern, text):
            expected = self.expected or f"text matching {self.pattern}"
            raise BadRequest(f"query parameter {self.name!r}: expected {expected}, got {text[:40]!r}")
        return text

    def schema(self) -> dict[str, Any]:
        if self.choices:
            return {"type": "string", "enum": list(self.choices), "default": self.default}
        return {"type": "string", "pattern": f"^(?:{self.pattern})?$", "default": self.default}


QueryValue = int | float | str


@dataclass(frozen=True, slots=True)
class Call:
    """What a handler receives: path parameters, checked query values and the checked body."""

    params: dict[str, str]
    query: dict[str, QueryValue]
    body: Any = None


@dataclass(frozen=True, slots=True)
class Reply:
    """A handler's answer when it is not a plain 200/route-status body."""

    body: dict[str, Any]
    status: int | None = None  # None: the route's status
    after: Callable[[], None] | None = None  # runs once the reply is on the wire


Handler = Callable[[Call], "dict[str, Any] | Reply"]


@dataclass(frozen=True, slots=True)
class Route:
    """One endpoint of the Hook API."""

    method: str
    path: str  # template, e.g. "/api/gui/value/{field}"
    operation_id: str
    summary: str
    handler: Handler
    response: str  # component schema of the success body
    status: int = 200
    request: str | None = None  # component schema of the JSON body
    query: tuple[QueryParam | TextParam, ...] = ()
    errors: tuple[int, ...] = ()  # statuses beyond the common ones (400, 401, 413, 500)
    auth: bool = True
    description: str = ""
    path_params: tuple[str, ...] = field(init=False)
    _pattern: re.Pattern[str] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        names = tuple(re.findall(r"\{(\w+)\}", self.path))
        regex = "".join(
            f"(?P<{part[1:-1]}>[^/]+)" if part.startswith("{") else re.escape(part)
            for part in re.split(r"(\{\w+\})", self.path)
        )
        object.__setattr__(self, "path_params", names)
        object.__setattr__(self, "_pattern", re.compile(regex + r"\Z"))

    def match(self, path: str) -> dict[str, str] | None:
        found = self._pattern.match(path)
        return None if found is None else found.groupdict()


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


class Router:
    """Matches requests to routes and checks their query strings and bodies."""

    def __init__(self, routes: Sequence[Route]) -> None:
        self.routes: tuple[Route, ...] = tuple(routes)
        seen: set[tuple[str, str]] = set()
        for route in self.routes:
            key = (route.method, route.path)
            if key in seen:
                raise ValueError(f"route {route.method} {route.path} declared twice")
            seen.add(key)
        # Compiled on first use: jsonschema costs start-up ~40 ms, and /status needs none of it.
        # Two threads may compile the same schema at once; either result is the same validator.
        self._validators: dict[str, Draft202012Validator] = {}

    def match(self, method: str, path: str) -> tuple[Route, dict[str, str]]:
        """The route for ``method path``; NotFound or MethodNotAllowed (with the allowed methods)."""
        allowed: list[str] = []
        for route in self.routes:
            params = route.match(path)
            if params is None:
                continue
            if route.method == method:
                return route, params
            allowed.append(route.method)
        if allowed:
            methods = tuple(sorted(set(allowed)))
            raise MethodNotAllowed(f"{method} is not allowed on {path}; use {', '.join(methods)}", methods)
        raise NotFound(f"no endpoint {path}; GET /openapi.json lists them all")

    @staticmethod
    def parse_query(route: Route, query_string: str) -> dict[str, QueryValue]:
        try:
            raw = parse_qs(query_string, keep_blank_values=True, errors="strict")
        except (UnicodeDecodeError, ValueError):
            raise BadRequest("the query string is not valid UTF-8 after percent-decoding") from None
        known = {param.name: param for param in route.query}
        unknown = sorted(set(raw) - set(known))
        if unknown:
            accepted = ", ".join(known) if known else "none"
            raise BadRequest(f"unknown query parameter {unknown[0][:40]!r}; accepted: {accepted}")
        return {
            name: param.parse(raw[name]) if name in raw else param.default for name, param in known.items()
        }

    def parse_body(self, route: Route, raw: bytes) -> Any:
        """The body decoded and checked against the route's request schema (None for bodiless
        routes, which take an empty body or any JSON object)."""
        if route.request is None and not raw:  # (whitespace is no JSON: a 400 below)
            return None
        if not raw.strip():
            raise BadRequest("the request body is empty; expected a JSON object")
        if json_depth_exceeds(raw, MAX_JSON_DEPTH):
            raise BadRequest(f"the body is nested deeper than {MAX_JSON_DEPTH} levels")
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise BadRequest(
                f"the body is not valid UTF-8 (byte {raw[exc.start]:#04x} at {exc.start})"
            ) from None
        try:
            body = json.loads(text, parse_constant=_reject_constant)
        except json.JSONDecodeError as exc:
            raise BadRequest(
                f"the body is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
            ) from None
        except ValueError as exc:
            raise BadRequest(f"the body is not valid JSON: {exc}") from None
        if not isinstance(body, dict):
            raise BadRequest(f"the body must be a JSON object, got {json_type(body)}")
        if _SURROGATE_ESCAPE.search(raw) and _has_lone_surrogate(body):
            raise BadRequest(
                "the body has a lone surrogate escape (\\ud800-\\udfff) in a string; strings must be "
                "valid Unicode"
            )
        if route.request is None:
            return None
        from jsonschema.exceptions import best_match

        validator = self._validator_for(route.request, body)
        error = best_match(validator.iter_errors(body))
        if error is not None:
            where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path)
            raise BadRequest(f"body{where}: {_schema_message(error)}")
        return _whole_numbers(body, validator.schema)

    def _validator_for(self, schema: str, body: dict[str, Any]) -> Draft202012Validator:
        if schema != GUI_ACTION:
            return self._compiled(schema, REQUEST_SCHEMAS[schema])
        action = body.get("action")
        if not isinstance(action, str) or action not in GUI_ACTION_SCHEMAS:
            problem = "is missing" if action is None else f"{repr(action)[:60]} is not a GUI action"
            raise BadRequest(f"body.action {problem}; expected one of {', '.join(GUI_ACTION_SCHEMAS)}")
        return self._compiled(f"{GUI_ACTION}:{action}", GUI_ACTION_SCHEMAS[action])

    def _compiled(self, key: str, schema: dict[str, Any]) -> Draft202012Validator:
        validator = self._validators.get(key)
        if validator is None:
            from jsonschema import Draft202012Validator

            validator = self._validators.setdefault(key, Draft202012Validator(schema))
        return validator


def _whole_numbers(value: Any, schema: Any) -> Any:
    """``value`` with every integral float where ``schema`` says "integer" turned into an int.

    JSON Schema counts 39.0 as an integer, so the validator lets it through; handlers that
    slice or range() with it would then fail (a 500). Request schemas are self-contained
    (no $ref), so properties and items are all there is to follow."""
    if not isinstance(schema, dict):
        return value
    kinds = schema.get("type")
    if (
        isinstance(value, float)
        and value.is_integer()
        and (kinds == "integer" or (isinstance(kinds, list) and "integer" in kinds))
    ):
        return int(value)
    if isinstance(value, dict):
        properties = schema.get("properties", {})
        return {key: _whole_numbers(item, properties.get(key)) for key, item in value.items()}
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [_whole_numbers(item, schema["items"]) for item in value]
    return value


def _schema_message(error: Any) -> str:
    """What a schema error says, without quoting a long value whole (a 5,000-character string
    "is too long" must not push the reason out of the reply)."""
    size = {"maxLength": len, "minLength": len, "maxItems": len, "minItems": len}.get(error.validator)
    if size is not None and isinstance(error.instance, str | list):
        kind = "characters" if isinstance(error.instance, str) else "items"
        bound = "at most" if error.validator.startswith("max") else "at least"
        return f"{size(error.instance):,} {kind}; {bound} {error.validator_value:,} are allowed"
    # a pattern or oneOf says nothing a user understands: the schema's "x-error" says it in words
    # (best_match may pick an error inside a oneOf branch: the words are on the oneOf's schema)
    cause = error
    while cause is not None:
        said = cause.schema.get("x-error") if isinstance(cause.schema, dict) else None
        if said and cause.validator in ("pattern", "oneOf", "anyOf", "not"):
            return str(said)
        cause = cause.parent
    message = str(error.message)
    return message if len(message) <= 300 else message[:150] + " … " + message[-140:]


def _has_lone_surrogate(body: Any) -> bool:
    """True when a string in ``body`` holds a lone surrogate: ``"\\udfff"`` parses, but it is no
    text and could never be written back (a surrogate pair decodes to one character)."""
    try:
        json.dumps(body, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False
