"""What every provider implements, and the settings it is built from.

A :class:`Provider` translates: a provider-neutral :class:`~manual_slop.ai.messages.ModelRequest`
into its SDK's or wire format, and the answer back into a
:class:`~manual_slop.ai.messages.ModelReply`. It raises only
:class:`~manual_slop.ai.errors.ProviderError` (translating SDK and HTTP failures in
:meth:`Provider.classify`). The tool loop, retries, logging and history keeping live in
the client; a provider holds only its connection (SDK client, CLI session, loaded
model) and any server-side cache.

Constructors do no I/O and import no SDK: heavy imports happen at the first call.
"""

from __future__ import annotations

import abc
import importlib
import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from manual_slop.ai.errors import ErrorKind, ProviderError, WireError
from manual_slop.ai.images import ImageSupport
from manual_slop.ai.messages import ModelReply, ModelRequest
from manual_slop.ai.transcript import estimate_tokens
from manual_slop.ai.windows import table_window
from manual_slop.ai.xml_protocol import protocol_prompt
from manual_slop.config import Secret

__all__ = [
    "DEFAULT_TIMEOUT_S",
    "Provider",
    "ProviderConfig",
    "ProviderHooks",
    "json_body",
    "status_kind",
    "token_count",
    "transport_errors",
]

DEFAULT_TIMEOUT_S = 300.0


@dataclass(frozen=True, slots=True)
class ProviderConfig:
    """Everything a provider needs to talk to its endpoint."""

    name: str
    model: str
    base_url: str = ""
    api_key: Secret | None = None
    temperature: float = 0.0
    top_p: float = 1.0
    max_tokens: int = 8192
    timeout_s: float = DEFAULT_TIMEOUT_S
    max_prompt_tokens: int = 0  # 0: the provider's own budget
    options: Mapping[str, Any] = field(default_factory=dict)  # model_path, binary, n_ctx ...

    def key(self) -> str:
        """The API key's value, for the SDK call only (never log it)."""
        return self.api_key.reveal() if self.api_key else ""

    def connection(self) -> tuple[str, str, str, float, tuple[tuple[str, Any], ...]]:
        """What, when it changes, needs a new client (endpoint, key, model file ...)."""
        return (self.base_url, self.key(), self.model, self.timeout_s, tuple(sorted(self.options.items())))


@dataclass(slots=True)
class ProviderHooks:
    """How a provider reports what the client should log, and what it may ask the client for."""

    comms: Callable[[str, str, dict[str, Any]], None] = lambda direction, kind, payload: None
    cli_call: Callable[[dict[str, Any]], None] = lambda entry: None
    # (url, token) of the running Hook API, or None (the Gemini CLI's approval bridge uses it)
    hook_api: Callable[[], tuple[str, str] | None] = lambda: None
    clock: Callable[[], float] = time.monotonic  # cache ages (tests pass a fake clock)


class Provider(abc.ABC):
    """One backend. Subclasses set the class attributes and implement :meth:`generate`."""

    name: ClassVar[str] = ""
    needs_api_key: ClassVar[bool] = True
    native_tools: ClassVar[bool] = True  # False: tools go through the XML protocol
    default_base_url: ClassVar[str] = ""
    # (trigger, target) estimated prompt tokens for history trimming
    prompt_budget: ClassVar[tuple[int, int]] = (180_000, 180_000)
    # True: a message that names tools makes the first call of its exchange call them (a grammar
    # holds the model to it), and the calls after that answer in text (ai.grammar)
    forces_named_tools: ClassVar[bool] = False
    # the images it takes (formats, sizes, token estimate); None: it takes none (ai.images)
    image_support: ClassVar[ImageSupport | None] = None
    exact_count: bool = False  # True: count_tokens is the model's own tokenizer (set once it answered)

    def __init__(self, config: ProviderConfig, hooks: ProviderHooks | None = None) -> None:
        self.config = config
        self.hooks = hooks or ProviderHooks()

    # -- configuration ---------------------------------------------------------------------
    def reconfigure(self, config: ProviderConfig) -> None:
        """Take new settings; drops the connection when the endpoint, key or model file changed."""
        if config == self.config:
            return
        if config.connection() != self.config.connection():
            self.close()
        self.config = config

    @property
    def base_url(self) -> str:
        return (self.config.base_url or self.default_base_url).rstrip("/")

    def budget(self) -> tuple[int, int]:
        """(trigger, target) for history trimming, honouring ``max_prompt_tokens``."""
        if self.config.max_prompt_tokens > 0:
            return self.config.max_prompt_tokens, self.config.max_prompt_tokens
        return self.prompt_budget

    # -- the call -----------------------------------------------------------------------------
    @abc.abstractmethod
    def generate(self, request: ModelRequest) -> ModelReply:
        """One model call. Raises ProviderError (already classified)."""

    @abc.abstractmethod
    def classify(self, exc: BaseException) -> ProviderError:
        """Translate any exception from this provider's SDK or transport."""

    def list_models(self) -> list[str]:
        """Model ids this endpoint offers."""
        return []

    def answering_model(self) -> str:
        """The model that actually answers the calls (the local provider names its loaded file)."""
        return self.config.model

    # -- the window -----------------------------------------------------------------------------
    def context_window(self) -> int:
        """Tokens the model holds: ``providers.<name>.context_window``, else what the provider
        knows (:meth:`known_window`), else the app's table (:mod:`manual_slop.ai.windows`)."""
        configured = int(self.config.options.get("context_window") or 0)
        return configured or self.known_window() or table_window(self.name, self.config.model)

    def known_window(self) -> int:
        """The window as the provider itself knows it (0: it does not)."""
        return 0

    def count_tokens(self, text: str) -> int:
        """Tokens of ``text`` on this model: an estimate (one per four characters) unless the
        provider has the model's tokenizer (:attr:`exact_count`)."""
        return estimate_tokens(len(text))

    def tool_text(self, declarations: list[dict[str, Any]]) -> str:
        """The tool declarations (``openai`` format) as this provider's model reads them."""
        if self.native_tools:
            return json.dumps(declarations, separators=(",", ":"))
        return protocol_prompt(declarations)

    def answer_tokens(self) -> int:
        """Room the request leaves for the answer: ``max_tokens``, at most a quarter of the window
        (an 8,192-token model is not left without room for the question)."""
        return max(16, min(self.config.max_tokens, self.context_window() // 4))

    # -- lifetime ------------------------------------------------------------------------------
    def reset(self) -> None:
        """Forget session state held by the provider (chat objects, CLI session ids)."""
        return None  # nothing to do unless the provider keeps state

    def cleanup(self) -> None:
        """Delete server-side state (caches)."""
        return None  # nothing to do unless the provider keeps state

    def close(self) -> None:
        """Drop the connection; the next call opens a new one."""
        return None  # nothing to do unless the provider keeps state

    def cache_info(self) -> dict[str, Any]:
        """What is cached server-side, for the GUI's cache view."""
        return {}

    # -- helpers for subclasses -----------------------------------------------------------------
    def error(
        self,
        kind: ErrorKind,
        original: BaseException | None,
        *,
        status: int | None = None,
        retry_after: float | None = None,
        retryable: bool | None = None,
        message: str | None = None,
    ) -> ProviderError:
        return ProviderError(
            kind,
            self.name,
            original,
            status=status,
            retry_after=retry_after,
            retryable=retryable,
            message=message,
        )

    def missing_key(self) -> ProviderError:
        from manual_slop.config import CREDENTIAL_ENV_VARS

        variable = CREDENTIAL_ENV_VARS.get(self.name, "")
        where = f"{variable} or " if variable else ""
        return self.error(
            ErrorKind.AUTH,
            None,
            retryable=False,
            message=f"no API key for {self.name}: set {where}[{self.name}] api_key in credentials.toml",
        )


def json_body(raw: str | bytes, status: int | None = None) -> Any:
    """The JSON value of a reply's body; a body that is not JSON is a :class:`WireError`
    (``unknown``, not retried) quoting its start."""
    try:
        return json.loads(raw)
    except ValueError as exc:  # (UnicodeDecodeError is one too)
        text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
        snippet = text[:200].strip()
        raise WireError(
            f"the server answered with a body that is not JSON: {snippet!r}", status=status, body=snippet
        ) from exc


def token_count(usage: dict[str, Any], key: str) -> int:
    """A token count of a reply's usage object read from its raw JSON (absent, null or not a
    number: 0)."""
    value = usage.get(key)
    return value if type(value) is int else 0


def status_kind(status: int | None) -> ErrorKind:
    """The usual meaning of an HTTP status."""
    if status in (401, 403):
        return ErrorKind.AUTH
    if status == 402:
        return ErrorKind.BALANCE
    if status == 429:
        return ErrorKind.RATE_LIMIT
    if status == 408:
        return ErrorKind.NETWORK
    return ErrorKind.UNKNOWN  # 5xx and 529 are retried as transient all the same


def transport_errors() -> tuple[type[BaseException], ...]:
    """The HTTP client libraries' transport failures (timeouts, refused or broken connections).

    The SDKs run on ``httpx`` or its successor ``httpx2``; whichever is installed counts.
    """
    found: list[type[BaseException]] = []
    for module in ("httpx", "httpx2"):
        try:
            found.append(importlib.import_module(module).TransportError)
        except (ImportError, AttributeError):
            continue
    return tuple(found)
