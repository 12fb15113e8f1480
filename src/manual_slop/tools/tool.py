"""What a tool is and what one call of it carries: the types every tool module shares.

A :class:`Tool` is declared once: name, a description a new colleague could follow,
JSON-Schema parameters, whether it mutates anything, its timeout and output cap, which
parameters are paths, and (for mutating tools) how to preview its effect. Its handler gets
the arguments and a :class:`ToolRun` (the :class:`ExecutionContext` of the send, resolved
paths, the deadline) and returns text or a :class:`ToolResult`.

The tool modules import this module, never :mod:`~manual_slop.tools.registry`: the
registry assembles them (``default_registry``), so they sit below it.
"""

from __future__ import annotations

import contextlib
import copy
import re
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any

from manual_slop.tools.errors import ToolDefinitionError
from manual_slop.tools.security import PathPolicy

if TYPE_CHECKING:
    import jsonschema

__all__ = [
    "DECLARATION_FORMATS",
    "DEFAULT_MAX_OUTPUT_BYTES",
    "DEFAULT_TIMEOUT_S",
    "ApprovalRequest",
    "ApprovalResult",
    "ExecutionContext",
    "Handler",
    "PostToolCallback",
    "PreToolCallback",
    "Preview",
    "ResultReview",
    "Tool",
    "ToolCall",
    "ToolResult",
    "ToolRun",
    "ToolStatus",
    "deferred_schema_checks",
    "unknown_format",
]

DEFAULT_TIMEOUT_S = 30.0
DEFAULT_MAX_OUTPUT_BYTES = 100_000
DECLARATION_FORMATS: tuple[str, ...] = ("anthropic", "gemini", "openai")
_NAME_RE = re.compile(r"[a-z][a-z0-9_]{0,63}")
# True while the built-in tools are declared: their schemas are ours, fixed in the source and
# checked by a unit test, so the meta-schema check (and jsonschema's ~40 ms import) waits for
# the first call. Every other tool (MCP, tests) is checked when it is declared.
_DEFER_SCHEMA_CHECK: ContextVar[bool] = ContextVar("defer_schema_check", default=False)
# JSON-Schema keywords Gemini's FunctionDeclaration accepts (an OpenAPI subset).
_GEMINI_KEYS = frozenset(
    {
        "type", "description", "enum", "items", "properties", "required", "minimum", "maximum",
        "minItems", "maxItems", "minLength", "maxLength", "pattern", "default", "format",
        "nullable", "anyOf", "title",
    }
)  # fmt: skip


class ToolStatus(StrEnum):
    SUCCESS = "success"
    ERROR = "error"
    TIMEOUT = "timeout"
    REJECTED = "rejected"
    DENIED = "denied"


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One call the model asked for."""

    id: str
    name: str
    args: dict[str, Any]

    @classmethod
    def new(cls, name: str, args: Mapping[str, Any] | None = None, call_id: str | None = None) -> ToolCall:
        """A call with a generated id (for providers that give none)."""
        return cls(call_id or f"call_{uuid.uuid4().hex[:12]}", name, dict(args or {}))


@dataclass(frozen=True, slots=True)
class ToolResult:
    """What came of a call. ``content`` is what the model sees: never empty, actionable."""

    status: ToolStatus
    content: str
    error_message: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.status is ToolStatus.SUCCESS

    @classmethod
    def success(cls, content: str, **metadata: Any) -> ToolResult:
        return cls(ToolStatus.SUCCESS, content or "(no output)", None, metadata)

    @classmethod
    def error(cls, content: str, error_message: str | None = None, **metadata: Any) -> ToolResult:
        return cls(ToolStatus.ERROR, content, error_message or content, metadata)

    @classmethod
    def timeout(cls, content: str, **metadata: Any) -> ToolResult:
        return cls(ToolStatus.TIMEOUT, content, content, metadata)

    @classmethod
    def rejected(cls, reason: str = "", **metadata: Any) -> ToolResult:
        content = f"REJECTED by user: {reason}" if reason else "REJECTED by user"
        return cls(ToolStatus.REJECTED, content, content, metadata)

    @classmethod
    def denied(cls, reason: str, **metadata: Any) -> ToolResult:
        content = f"ACCESS DENIED: {reason}"
        return cls(ToolStatus.DENIED, content, content, metadata)

    def with_metadata(self, **metadata: Any) -> ToolResult:
        return ToolResult(self.status, self.content, self.error_message, {**self.metadata, **metadata})


@dataclass(frozen=True, slots=True)
class ApprovalRequest:
    """What the Execution Clutch is asked about a mutating call.

    ``preview`` is a unified diff for file edits and the script for shell tools; path
    arguments in ``call.args`` are already canonical (relative to the base dir when inside it).
    """

    call: ToolCall
    preview: str


@dataclass(frozen=True, slots=True)
class ApprovalResult:
    """The decision: ``args`` (possibly edited by the user) is what runs. ``abort`` also sets
    the context's abort flag, so the rest of the round is rejected without asking."""

    approved: bool
    args: dict[str, Any]
    reason: str = ""
    abort: bool = False


PreToolCallback = Callable[[ApprovalRequest], ApprovalResult]


@dataclass(frozen=True, slots=True)
class ResultReview:
    """What the post-tool callback (the ``after_tool`` / ``on_error`` rules) made of a result:
    the result the model sees, and ``end``: the request stops (the context's abort flag is set)."""

    result: ToolResult
    end: bool = False


# (the call as it ran, its result) -> the review; runs before the model sees the result
PostToolCallback = Callable[[ToolCall, ToolResult], ResultReview]


@dataclass(slots=True)
class ExecutionContext:
    """Everything a call needs from the app; built on the main thread before each send."""

    base_dir: Path
    policy: PathPolicy
    pre_tool_callback: PreToolCallback | None = None  # None: mutating calls are denied
    post_tool_callback: PostToolCallback | None = None  # None: every result reaches the model as is
    tier: str | None = None  # source tier label for the logs
    on_tool_call: Callable[[dict[str, Any]], Any] | None = None  # -> AppController.add_tool_call
    abort: threading.Event | None = None  # set: every further call is rejected
    shell_program: str = "auto"  # "auto" (bash / PowerShell by platform), "bash", "pwsh", "powershell"
    timeouts: dict[str, float] = field(default_factory=dict)  # per-tool overrides, seconds
    save_script: Callable[[str, str], Any] | None = None  # (text, suffix) -> saved path
    redact: Callable[[str], str] | None = None  # removes known secrets from tool output
    memory: Any = None  # the project's memory.service.MemoryService (the memory tools), or None
    conversation: str = ""  # the conversation the calls run in (recall never searches it)
    skills: Any = None  # the enabled skills (a manual_slop.skills.SkillCatalog) for get_skill, or None
    ui_performance: Callable[[], dict[str, Any]] | None = None  # the app's frame metrics (get_ui_performance)

    @classmethod
    def for_directory(cls, base_dir: str | Path, **kwargs: Any) -> ExecutionContext:
        """A context confined to ``base_dir`` (library use and tests)."""
        base = Path(base_dir).resolve()
        return cls(base, PathPolicy.for_project(base), **kwargs)


@dataclass(slots=True)
class ToolRun:
    """What a handler gets besides its arguments: the context, resolved paths and its deadline."""

    call: ToolCall
    ctx: ExecutionContext
    paths: dict[str, Path]
    deadline: float
    cancelled: threading.Event = field(default_factory=threading.Event)

    @property
    def base_dir(self) -> Path:
        return self.ctx.base_dir

    def path(self, name: str = "path") -> Path:
        """The resolved, allowed path of parameter ``name`` (checked before the handler ran)."""
        return self.paths[name]

    def check(self, path: str | Path, *, write: bool = False) -> Path:
        """Check a further path the handler discovered; raises AccessDenied."""
        return self.ctx.policy.check(path, write=write)

    def display(self, path: str | Path) -> str:
        return self.ctx.policy.display(path)

    def remaining(self) -> float:
        return max(0.0, self.deadline - time.monotonic())

    def stopped(self) -> bool:
        """True once the registry gave up on this call (its timeout passed)."""
        return self.cancelled.is_set()


Handler = Callable[[dict[str, Any], ToolRun], "str | ToolResult"]
Preview = Callable[[dict[str, Any], ToolRun], str]


@dataclass(frozen=True, slots=True)
class Tool:
    """A declared tool. ``path_params`` are checked by the path policy before the handler
    runs (as writes when the tool mutates); ``preview`` renders a mutating call for approval."""

    name: str
    description: str
    parameters: dict[str, Any]
    handler: Handler
    mutating: bool = False
    timeout_s: float = DEFAULT_TIMEOUT_S
    max_output_bytes: int = DEFAULT_MAX_OUTPUT_BYTES
    path_params: tuple[str, ...] = ()
    preview: Preview | None = None
    untrusted: bool = False  # results come from outside the project: wrapped as data (tools.untrusted)
    source: str = ""  # '' = one of ours; an external MCP server's name (never served on by our MCP server)
    _validator: Any = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not _NAME_RE.fullmatch(self.name):
            raise ToolDefinitionError(f"tool name {self.name!r}: use 1-64 of a-z, 0-9, _ (starting a-z)")
        if not self.description.strip():
            raise ToolDefinitionError(f"tool {self.name}: the description is empty")
        if self.timeout_s <= 0 or self.max_output_bytes < 1_000:
            raise ToolDefinitionError(f"tool {self.name}: timeout_s must be > 0, max_output_bytes >= 1000")
        schema = self.parameters
        if not isinstance(schema, dict) or schema.get("type") != "object":
            raise ToolDefinitionError(f"tool {self.name}: parameters must be a JSON Schema of type object")
        properties = schema.get("properties", {})
        for name in self.path_params:
            if name not in properties:
                raise ToolDefinitionError(f"tool {self.name}: path parameter {name!r} is not declared")
        if not _DEFER_SCHEMA_CHECK.get():
            _ = self.validator

    @property
    def validator(self) -> jsonschema.Draft202012Validator:
        """The compiled parameter schema (checked against the meta-schema first); built once."""
        validator = self._validator
        if validator is None:  # two threads may both build it: the results are equal
            import jsonschema

            try:
                jsonschema.Draft202012Validator.check_schema(self.parameters)
            except jsonschema.SchemaError as exc:
                message = f"tool {self.name}: invalid parameter schema: {exc.message}"
                raise ToolDefinitionError(message) from exc
            validator = jsonschema.Draft202012Validator(self.parameters)
            object.__setattr__(self, "_validator", validator)
        return validator

    def declaration(self, fmt: str) -> dict[str, Any]:
        """This tool in a provider's format: ``anthropic``, ``gemini`` or ``openai``."""
        if fmt == "anthropic":
            return {"name": self.name, "description": self.description, "input_schema": self.parameters}
        if fmt == "gemini":
            return {
                "name": self.name,
                "description": self.description,
                "parameters": _gemini_schema(self.parameters),
            }
        if fmt == "openai":
            return {
                "type": "function",
                "function": {
                    "name": self.name,
                    "description": self.description,
                    "parameters": self.parameters,
                },
            }
        raise unknown_format(fmt)


@contextlib.contextmanager
def deferred_schema_checks() -> Iterator[None]:
    """Tools declared inside check their parameter schema on first use, not at declaration
    (for the built-in tools, whose schemas are constants covered by a unit test)."""
    token = _DEFER_SCHEMA_CHECK.set(True)
    try:
        yield
    finally:
        _DEFER_SCHEMA_CHECK.reset(token)


def unknown_format(fmt: str) -> ValueError:
    """The error for a declaration format that is not one of :data:`DECLARATION_FORMATS`."""
    return ValueError(f"unknown declaration format {fmt!r}; use one of {', '.join(DECLARATION_FORMATS)}")


def _gemini_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key not in _GEMINI_KEYS:
            continue
        if key == "properties":
            out[key] = {name: _gemini_schema(sub) for name, sub in value.items()}
        elif key == "items":
            out[key] = _gemini_schema(value)
        elif key == "anyOf":
            out[key] = [_gemini_schema(sub) for sub in value]
        else:
            out[key] = copy.deepcopy(value)
    return out
