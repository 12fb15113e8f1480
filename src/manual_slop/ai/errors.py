"""What the AI client raises.

Hierarchy::

    AIError                   base of every error the client raises; ui_message() for the user
    ├── ProviderError         a provider call failed; ``kind`` says why (ErrorKind), ``retryable``
    │                         says whether waiting and trying again can help. Raised by a provider
    │                         after translating its SDK's exception or HTTP answer
    │                         (``raise classify(exc) from exc``); ``original`` keeps the cause.
    ├── WireError             a failure with no SDK exception behind it: an HTTP status and body
    │                         from a raw-HTTP provider, a CLI exit code, an in-band error field.
    │                         Providers classify it into a ProviderError (it becomes ``original``).
    └── ConfigurationError    settings the client cannot use: an unknown provider, a model file
                              that is not there, a CLI binary that cannot be found.

Classification looks at exception types, HTTP status codes and structured error fields
(``error.type``, ``status``, ``base_resp.status_code``), never at message text.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

__all__ = ["AIError", "ConfigurationError", "ErrorKind", "ProviderError", "WireError"]

TRANSIENT_STATUSES = frozenset({408, 500, 502, 503, 504, 529})


class ErrorKind(StrEnum):
    QUOTA = "quota"
    RATE_LIMIT = "rate_limit"
    AUTH = "auth"
    BALANCE = "balance"
    NETWORK = "network"
    UNKNOWN = "unknown"


_LABELS = {
    ErrorKind.QUOTA: "QUOTA EXHAUSTED",
    ErrorKind.RATE_LIMIT: "RATE LIMITED",
    ErrorKind.AUTH: "AUTH / API KEY ERROR",
    ErrorKind.BALANCE: "BALANCE / BILLING ERROR",
    ErrorKind.NETWORK: "NETWORK / CONNECTION ERROR",
    ErrorKind.UNKNOWN: "API ERROR",
}

_ADVICE = {
    ErrorKind.QUOTA: "The provider's quota is used up; wait for it to reset or switch provider.",
    ErrorKind.RATE_LIMIT: "Too many requests; the client waited and retried.",
    ErrorKind.AUTH: "Check the API key (credentials.toml or the provider's environment variable).",
    ErrorKind.BALANCE: "The account has no credit left; top it up or switch provider.",
    ErrorKind.NETWORK: "The provider could not be reached or the connection broke.",
    ErrorKind.UNKNOWN: "",
}


class AIError(Exception):
    """Base of the AI client's errors."""

    def ui_message(self) -> str:
        """Text for the response view and the status line."""
        return str(self)

    def brief(self) -> str:
        """A few words for a fallback line or a conversation's error mark."""
        return type(self).__name__


class ConfigurationError(AIError):
    """A setting the client cannot use; the message names the setting and what it expects."""

    def ui_message(self) -> str:
        return f"[AI CLIENT CONFIGURATION ERROR]\n\n{self}"


class WireError(AIError):
    """An error answer without an SDK exception: an HTTP status with its body, or a CLI exit."""

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        body: Any = None,
        headers: dict[str, str] | None = None,
        code: str | int | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.body = body
        self.headers = {k.lower(): v for k, v in (headers or {}).items()}
        self.code = code  # a structured error code from the body (error.type, base_resp.status_code ...)


class ProviderError(AIError):
    """A failed provider call, classified.

    ``retryable`` defaults to True for ``rate_limit`` and ``network`` and for the transient
    HTTP statuses (5xx, 529 overloaded); ``retry_after`` is the server's ``Retry-After`` in
    seconds when it sent one.
    """

    def __init__(
        self,
        kind: ErrorKind | str,
        provider: str,
        original: BaseException | None = None,
        *,
        status: int | None = None,
        retry_after: float | None = None,
        retryable: bool | None = None,
        message: str | None = None,
    ) -> None:
        self.kind = ErrorKind(kind)
        self.provider = provider
        self.original = original
        self.status = status
        self.retry_after = retry_after
        if retryable is None:
            retryable = self.kind in (ErrorKind.RATE_LIMIT, ErrorKind.NETWORK) or status in TRANSIENT_STATUSES
        self.retryable = retryable
        self.detail = message if message is not None else _describe(original)
        super().__init__(f"{provider} {self.kind}: {self.detail}")

    def brief(self) -> str:
        return f"{self.kind}{f', HTTP {self.status}' if self.status else ''}"

    def ui_message(self) -> str:
        status = f" (HTTP {self.status})" if self.status else ""
        advice = _ADVICE[self.kind]
        text = f"[{self.provider.upper()} {_LABELS[self.kind]}{status}]\n\n{self.detail}"
        return f"{text}\n\n{advice}" if advice else text


def _describe(original: BaseException | None) -> str:
    if original is None:
        return "no details"
    text = str(original).strip()
    return f"{type(original).__name__}: {text}" if text else type(original).__name__
