"""Errors of the Hook API, shared by the server (which replies with them) and the client
(which raises them again from the reply).

An error reply is ``{"error": {"code": CODE, "message": TEXT}}``; the classes below map
one-to-one onto its codes, so ``except NotFound`` works the same on both sides.

Exceptions::

    HookError                    anything raised by manual_slop.hooks
    ├── HookStartError           the server cannot start (port in use, non-loopback host
    │                            without a token)
    ├── HookApiError             an error reply; ``status`` and ``code`` say which
    │   ├── BadRequest           400 bad_request: malformed JSON, unknown action or field,
    │   │                        wrong value type, missing key, bad query parameter
    │   ├── Unauthorized         401 unauthorized: missing or wrong bearer token
    │   ├── Forbidden            403 forbidden: a foreign Host, Origin or Sec-Fetch-Site
    │   │                        (another site or a DNS-rebound name)
    │   ├── NotFound             404 not_found: unknown path, field, task, dialog or request
    │   ├── MethodNotAllowed     405 method_not_allowed: the path exists, the method does not
    │   ├── RequestTimedOut      408 timeout: the main thread or a human did not answer in time
    │   ├── Conflict             409 conflict: already resolved, feature not available yet,
    │   │                        the app is shutting down
    │   ├── PayloadTooLarge      413 payload_too_large: a body over 1 MiB
    │   ├── UnsupportedMediaType 415 unsupported_media_type: a POST that is not application/json
    │   ├── HeadersTooLarge      431 headers_too_large: request headers over 64 KiB
    │   └── InternalError        500 internal: a bug in the server (never caused by input)
    ├── HookConnectionError      the client could not reach the server
    ├── HookTaskFailed           ApiHookClient.wait_for_task: the task ended in state "error"
    └── HookWaitTimeout          an ApiHookClient.wait_for_* ran out of time (also a TimeoutError)
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, ClassVar

__all__ = [
    "BadRequest",
    "Conflict",
    "ErrorCode",
    "Forbidden",
    "HeadersTooLarge",
    "HookApiError",
    "HookConnectionError",
    "HookError",
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
    "error_for",
]

MAX_MESSAGE_CHARS = 500  # error messages quote client input; keep replies small


class ErrorCode(StrEnum):
    BAD_REQUEST = "bad_request"
    UNAUTHORIZED = "unauthorized"
    FORBIDDEN = "forbidden"
    NOT_FOUND = "not_found"
    METHOD_NOT_ALLOWED = "method_not_allowed"
    TIMEOUT = "timeout"
    CONFLICT = "conflict"
    PAYLOAD_TOO_LARGE = "payload_too_large"
    UNSUPPORTED_MEDIA_TYPE = "unsupported_media_type"
    HEADERS_TOO_LARGE = "headers_too_large"
    INTERNAL = "internal"


class HookError(Exception):
    """Base of every error raised by ``manual_slop.hooks``."""


class HookStartError(HookError):
    """The hook server cannot start; the message says why and what to change."""


class HookApiError(HookError):
    """An error reply of the Hook API (raised by handlers on the server, by the client on receipt)."""

    status: ClassVar[int] = 500
    code: ClassVar[ErrorCode] = ErrorCode.INTERNAL
    max_chars: ClassVar[int] = MAX_MESSAGE_CHARS  # a subclass listing many problems allows more

    def __init__(self, message: str) -> None:
        if len(message) > self.max_chars:
            message = message[: self.max_chars - 3] + "..."
        super().__init__(message)
        self.message = message

    def to_body(self) -> dict[str, Any]:
        return {"error": {"code": str(self.code), "message": self.message}}


class BadRequest(HookApiError):
    """400: the request cannot be understood or names something that does not exist."""

    status = 400
    code = ErrorCode.BAD_REQUEST


class Unauthorized(HookApiError):
    """401: a token is configured and the request did not carry it."""

    status = 401
    code = ErrorCode.UNAUTHORIZED


class Forbidden(HookApiError):
    """403: the request names another host or comes from another site (checked before the token)."""

    status = 403
    code = ErrorCode.FORBIDDEN


class NotFound(HookApiError):
    """404: no such path, field, task, dialog or request."""

    status = 404
    code = ErrorCode.NOT_FOUND


class MethodNotAllowed(HookApiError):
    """405: the path exists but not with this method; ``allowed`` lists the methods it has."""

    status = 405
    code = ErrorCode.METHOD_NOT_ALLOWED

    def __init__(self, message: str, allowed: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.allowed = allowed


class RequestTimedOut(HookApiError):
    """408: the main thread (or the human asked) did not answer in time."""

    status = 408
    code = ErrorCode.TIMEOUT


class Conflict(HookApiError):
    """409: the request is valid but the app's state does not allow it now."""

    status = 409
    code = ErrorCode.CONFLICT


class PayloadTooLarge(HookApiError):
    """413: the body is larger than the server accepts."""

    status = 413
    code = ErrorCode.PAYLOAD_TOO_LARGE


class UnsupportedMediaType(HookApiError):
    """415: a POST whose Content-Type is not application/json (a browser form or text/plain post)."""

    status = 415
    code = ErrorCode.UNSUPPORTED_MEDIA_TYPE


class HeadersTooLarge(HookApiError):
    """431: the request's headers are larger than the server accepts."""

    status = 431
    code = ErrorCode.HEADERS_TOO_LARGE


class InternalError(HookApiError):
    """500: a bug in the server; the traceback is in app.log."""

    status = 500
    code = ErrorCode.INTERNAL


_BY_CODE: dict[str, type[HookApiError]] = {
    str(cls.code): cls
    for cls in (
        BadRequest,
        Unauthorized,
        Forbidden,
        NotFound,
        MethodNotAllowed,
        RequestTimedOut,
        Conflict,
        PayloadTooLarge,
        UnsupportedMediaType,
        HeadersTooLarge,
        InternalError,
    )
}
_BY_STATUS: dict[int, type[HookApiError]] = {cls.status: cls for cls in _BY_CODE.values()}


def error_for(status: int, code: str | None, message: str) -> HookApiError:
    """The exception for an error reply (by code, else by status, else a plain HookApiError)."""
    cls = _BY_CODE.get(code or "") or _BY_STATUS.get(status)
    if cls is not None:
        return cls(message)
    error = HookApiError(message)
    error.status = status  # type: ignore[misc]  # an unexpected status keeps its number
    return error


class HookConnectionError(HookError):
    """The client could not connect to the server, or the connection broke mid-reply."""


class HookTaskFailed(HookError):
    """A queued GUI task ended in state ``error``; the message is the task's error."""

    def __init__(self, task_id: str, error: str) -> None:
        super().__init__(f"task {task_id} failed: {error}")
        self.task_id = task_id
        self.error = error


class HookWaitTimeout(HookError, TimeoutError):
    """A client-side wait (for the server, a task, a value, an event, a request) ran out of time."""
