"""The OpenAPI 3.1 document of the Hook API, rendered from the route table.

Every operation lists its path and query parameters, its JSON body, its success reply
and every error status it can give (400, 403, 413, 431 and 500 on all of them, 401
wherever a token can be required, 415 on POSTs, plus the route's own). Schemas come
from :mod:`.schemas`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from manual_slop.hooks.guard import BODY_METHODS
from manual_slop.hooks.routes import Route
from manual_slop.hooks.schemas import EVENT_TYPES, component_schemas

__all__ = ["COMMON_ERRORS", "ERROR_DESCRIPTIONS", "build_openapi"]

COMMON_ERRORS: tuple[int, ...] = (400, 403, 413, 431, 500)

ERROR_DESCRIPTIONS: dict[int, str] = {
    400: "bad_request: malformed JSON, unknown action, field or query parameter, wrong type, missing key",
    401: "unauthorized: 'Authorization: Bearer <token>' is missing or wrong",
    403: "forbidden: the Host is not this server, or the Origin / Sec-Fetch-Site is another site",
    404: "not_found: no such field, task, dialog or request",
    405: "method_not_allowed: the path exists with other methods (see the Allow header)",
    408: "timeout: the main thread (or the user) did not answer in time",
    409: "conflict: already resolved, feature not available yet, or the app is shutting down",
    413: "payload_too_large: the body is over 1 MiB",
    415: "unsupported_media_type: the body is not 'Content-Type: application/json'",
    431: "headers_too_large: the request headers are over 64 KiB",
    500: "internal: a server bug (never caused by client input); details in app.log",
}

DESCRIPTION = """\
Drives a running Manual Slop app: read and set fields, click actions, watch events,
approve or reject pending actions, ask the user, send messages, read logs, discussions
and MMA state. Writes are validated, then queued for the main thread (202 + task id;
poll /api/gui/task/{task_id}). Every error is {"error": {"code", "message"}}.
Event types: """ + ", ".join(EVENT_TYPES)


NO_BODY: dict[str, Any] = {"type": "object", "description": "no keys are read; send {}"}


def _json(schema: str) -> dict[str, Any]:
    return {"application/json": {"schema": {"$ref": f"#/components/schemas/{schema}"}}}


def _operation(route: Route) -> dict[str, Any]:
    operation: dict[str, Any] = {
        "operationId": route.operation_id,
        "summary": route.summary,
        "responses": {str(route.status): {"description": route.summary, "content": _json(route.response)}},
    }
    if route.description:
        operation["description"] = route.description
    if not route.auth:
        operation["security"] = []
    parameters = [
        {"name": name, "in": "path", "required": True, "schema": {"type": "string"}}
        for name in route.path_params
    ]
    parameters += [
        {"name": q.name, "in": "query", "required": False, "description": q.doc, "schema": q.schema()}
        for q in route.query
    ]
    if parameters:
        operation["parameters"] = parameters
    if route.request is not None:
        operation["requestBody"] = {"required": True, "content": _json(route.request)}
    elif route.method in BODY_METHODS:
        # the guard wants 'Content-Type: application/json' on every POST/PUT (a browser form
        # cannot send it), so even a bodiless one documents a JSON body: any object, read by no one
        operation["requestBody"] = {"required": True, "content": {"application/json": {"schema": NO_BODY}}}
    errors = set(COMMON_ERRORS) | set(route.errors) | ({401} if route.auth else set())
    if route.method in BODY_METHODS:
        errors.add(415)
    for status in sorted(errors):
        operation["responses"][str(status)] = {
            "description": ERROR_DESCRIPTIONS[status],
            "content": _json("Error"),
        }
    return operation


def build_openapi(
    routes: Sequence[Route], version: str, server_url: str = "http://127.0.0.1:8999"
) -> dict[str, Any]:
    """The whole document for ``routes``."""
    paths: dict[str, dict[str, Any]] = {}
    for route in routes:
        paths.setdefault(route.path, {})[route.method.lower()] = _operation(route)
    return {
        "openapi": "3.1.0",
        "info": {"title": "Manual Slop Hook API", "version": version, "description": DESCRIPTION},
        "servers": [{"url": server_url}],
        "security": [{"bearer": []}],
        "paths": paths,
        "components": {
            "schemas": component_schemas(),
            "securitySchemes": {
                "bearer": {
                    "type": "http",
                    "scheme": "bearer",
                    "description": (
                        "always required (SLOP_HOOK_TOKEN, hook.token, else generated at start and "
                        "written to the per-user runtime file hook-<port>.token)"
                    ),
                }
            },
        },
    }
