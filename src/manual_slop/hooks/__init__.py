"""The Hook API: an HTTP server that drives the app from outside, and its client.

``HookServer`` serves the endpoints of :mod:`.api` (documented by the OpenAPI document
it serves at ``/openapi.json``); ``ApiHookClient`` calls them. See docs/guide_hook_api.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from manual_slop.hooks.errors import (
    BadRequest,
    Conflict,
    ErrorCode,
    Forbidden,
    HeadersTooLarge,
    HookApiError,
    HookConnectionError,
    HookError,
    HookStartError,
    HookTaskFailed,
    HookWaitTimeout,
    InternalError,
    MethodNotAllowed,
    NotFound,
    PayloadTooLarge,
    RequestTimedOut,
    Unauthorized,
    UnsupportedMediaType,
)
from manual_slop.hooks.guard import is_loopback

if TYPE_CHECKING:
    from manual_slop.hooks.api_client import ApiHookClient
    from manual_slop.hooks.server import HookServer

# Imported on first use: a client should not pay for the server, nor the server for the client.
_LAZY = {"ApiHookClient": "api_client", "HookServer": "server"}

__all__ = [
    "ApiHookClient",
    "BadRequest",
    "Conflict",
    "ErrorCode",
    "Forbidden",
    "HeadersTooLarge",
    "HookApiError",
    "HookConnectionError",
    "HookError",
    "HookServer",
    "HookStartError",
    "HookTaskFailed",
    "HookWaitTimeout",
    "InternalError",
    "MethodNotAllowed",
    "NotFound",
    "PayloadTooLarge",
    "RequestTimedOut",
    "Unauthorized",
    "UnsupportedMediaType",
    "is_loopback",
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(f"manual_slop.hooks.{_LAZY[name]}"), name)
    raise AttributeError(f"module 'manual_slop.hooks' has no attribute {name!r}")
