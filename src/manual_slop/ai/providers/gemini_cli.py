"""The real Gemini CLI as a provider: one subprocess per call, ``--output-format stream-json``.

Each call runs, in the project's base dir and a private CLI home
(:mod:`~manual_slop.ai.providers.gemini_cli_home`)::

    gemini -m MODEL -o stream-json --approval-mode MODE -p PROMPT [--resume SESSION]

with the rest of the input on stdin. The base URL, the API key and the Hook API's address
go through the environment only (never argv, never ``clicalls.log``). The CLI prints one
JSON event per line, and every one is used::

    init         session id (the next call resumes it) and model
    message      assistant text; ``delta: true`` chunks go to the stream callback
    tool_use     a tool the CLI runs itself -> comms ``tool_call``
    tool_result  its outcome -> comms ``tool_result`` and a Tool Calls entry (executed_by gemini_cli)
    error        a warning or error the CLI reports -> comms ``notice``
    result       status and token stats; the last event

The CLI keeps the history of its session: while the conversation still matches it (same
base dir, nothing trimmed or edited), only the new turn is sent with ``--resume``;
otherwise a new session starts with the whole conversation on stdin. Our own tools go
through the XML protocol in the text; the CLI's own tools (files, shell, search) run in
the CLI, and every call to one first waits in the Execution Clutch: the private home
installs ``scripts/cli_tool_bridge.py`` as a BeforeTool hook that asks the Hook API's
``/api/ask``. The approval mode (``providers.gemini_cli.approval_mode``, default ``yolo``)
only decides which tools the CLI offers; none runs without the bridge's ``allow``.

Failures become ``ProviderError``: the exit code carries the HTTP status modulo 256
(400 -> 144, 429 -> 173, 500 -> 244) or one of the CLI's own codes (41 auth, 42 input,
52 config, 53 turn limit, 130 cancelled); ``result.status = "error"``, a line that is not
a JSON event, a CLI that ends without a ``result``, is killed, or passes the timeout
(time spent waiting for a human in the clutch does not count). A call that is abandoned
kills the CLI's whole process tree and reaps it.
"""

from __future__ import annotations

import json
import os
import queue
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from manual_slop.ai.comms import clip, get_current_tier
from manual_slop.ai.errors import ConfigurationError, ErrorKind, ProviderError, WireError
from manual_slop.ai.messages import Message, ModelReply, ModelRequest, Role, Usage, invalid_call
from manual_slop.ai.providers.base import Provider, status_kind
from manual_slop.ai.providers.gemini_cli_home import APPROVAL_MODES, CliHome, bundled_cli, check_workspace
from manual_slop.ai.xml_protocol import (
    EventKind,
    ParsedTurn,
    ProtocolEvent,
    StreamParser,
    render_results,
    render_text_messages,
)
from manual_slop.cancel import CancelToken
from manual_slop.hooks.token import runtime_token_path
from manual_slop.process_tree import kill_tree, pump_lines
from manual_slop.tools.shell import scrubbed_environment

__all__ = ["CLI_EXIT_CODES", "GeminiCliProvider"]

MAX_ARG_PROMPT = 32_000  # longer prompts go on stdin (argv length limits)
POLL_S = 0.1
_EXIT_STATUSES = {s % 256: s for s in (400, 401, 403, 404, 408, 429, 500, 502, 503, 504, 529)}
# the CLI's own exit codes (FatalError subclasses)
CLI_EXIT_CODES = {
    41: (ErrorKind.AUTH, "authentication failed"),
    42: (ErrorKind.UNKNOWN, "the input was refused"),
    44: (ErrorKind.UNKNOWN, "sandbox error"),
    52: (ErrorKind.UNKNOWN, "configuration error"),
    53: (ErrorKind.UNKNOWN, "the session's turn limit was reached"),
    54: (ErrorKind.UNKNOWN, "a tool failed fatally"),
    55: (ErrorKind.UNKNOWN, "the workspace is not trusted"),
    130: (ErrorKind.UNKNOWN, "the operation was cancelled"),
}
# inherited values the CLI must not see: the provider's settings are the only source
_REPLACED_ENV = frozenset(
    {
        "GEMINI_API_KEY",
        "GOOGLE_API_KEY",
        "GOOGLE_GEMINI_BASE_URL",
        "SLOP_HOOK_TOKEN",
        "SLOP_HOOK_TOKEN_FILE",
        "SLOP_HOOK_URL",
    }
)


class GeminiCliProvider(Provider):
    name = "gemini_cli"
    needs_api_key = True  # the private home authenticates with a Gemini API key
    native_tools = False
    prompt_budget = (360_000, 270_000)

    def __init__(self, config, hooks=None) -> None:
        super().__init__(config, hooks)
        self.session_id: str | None = None
        self._session_keys: tuple[int, ...] | None = None  # conversation keys the session holds
        self._session_dir: str | None = None
        self._last_reply: str | None = None
        self.home = CliHome()

    def reset(self) -> None:
        """Forget the CLI session (the next call starts a new one)."""
        self.session_id = self._session_keys = self._session_dir = self._last_reply = None

    def close(self) -> None:
        self.reset()
        self.home.remove()

    # -- settings ---------------------------------------------------------------------------
    def binary(self) -> str:
        configured = str(self.config.options.get("binary") or "").strip() or "gemini"
        found = shutil.which(configured) if os.sep not in configured else configured
        if not found and configured == "gemini" and bundled_cli() is not None:
            found = str(bundled_cli())  # the copy `make test` installs into .tools/gemini-cli
        if not found or not Path(found).exists():
            raise self.error(
                ErrorKind.UNKNOWN,
                None,
                retryable=False,
                message=f"the gemini CLI was not found ({configured!r}); install it (npm install -g "
                "@google/gemini-cli, or `make gemini-cli`) or set providers.gemini_cli.binary",
            )
        return found

    def approval_mode(self) -> str:
        mode = str(self.config.options.get("approval_mode") or "yolo").strip()
        if mode not in APPROVAL_MODES:
            expected = ", ".join(APPROVAL_MODES)
            raise ConfigurationError(
                f"providers.gemini_cli.approval_mode: expected one of {expected}, got {mode!r}"
            )
        return mode

    # -- building the invocation -----------------------------------------------------------------
    def _inputs(self, request: ModelRequest) -> tuple[str, str, bool]:
        """(stdin, prompt, resuming)."""
        prefix, last = request.messages[:-1], request.messages[-1]
        keys = tuple(m.key for m in prefix)
        resuming = (
            self.session_id is not None
            and self._session_keys is not None
            and self._session_dir == request.workdir
            and keys[:-1] == self._session_keys
            and bool(prefix)
            and prefix[-1].role is Role.ASSISTANT
            and prefix[-1].text == self._last_reply
        )
        new_turn = _render_turn(last)
        if resuming:
            stdin = ""
        else:
            sections = [request.system, request.context]
            if request.declarations is not None:
                declarations = request.declarations("openai")
                if declarations:
                    sections.append(self.tool_text(declarations))  # as its window counts them
            if prefix:
                history = "\n\n".join(f"[{m['role']}]\n{m['content']}" for m in render_text_messages(prefix))
                sections.append(f"## Conversation so far\n\n{history}")
            stdin = "\n\n".join(s for s in sections if s and s.strip())
        if len(new_turn) > MAX_ARG_PROMPT:
            stdin = f"{stdin}\n\n{new_turn}".strip()
            new_turn = "Answer the message above."
        return stdin, new_turn, resuming

    def command(self, prompt: str, resuming: bool) -> list[str]:
        argv = [self.binary(), "-m", self.config.model, "-o", "stream-json"]
        argv += ["--approval-mode", self.approval_mode(), "-p", prompt]
        if resuming and self.session_id:
            argv += ["--resume", self.session_id]
        return argv

    def environment(self, tools_enabled: bool = True) -> dict[str, str]:
        """The CLI's environment: ours without any credential variable (as for our own shell) and
        without inherited endpoints, plus the private home and the CLI's own key (which its
        settings keep from the commands it runs)."""
        env = {k: v for k, v in scrubbed_environment().items() if k not in _REPLACED_ENV}
        env.update(self.home.environment())
        env["GEMINI_CLI_TRUST_WORKSPACE"] = "true"  # headless: an untrusted folder exits with 55
        env["GEMINI_CLI_NO_RELAUNCH"] = "1"  # no second Node process (~2 s per call)
        env["GEMINI_API_KEY"] = self.config.key()
        if self.config.base_url:
            env["GOOGLE_GEMINI_BASE_URL"] = self.config.base_url.rstrip("/")
        # always set (empty when unused): a project's .env cannot fill in what is already set
        endpoint = self.hooks.hook_api() or ("", "")
        env["SLOP_HOOK_URL"] = endpoint[0] or ""
        # Never the token itself: every command the CLI runs would inherit it. The bridge reads it
        # from the app's per-user runtime token file (named here: the CLI gets its own TMPDIR).
        env["SLOP_HOOK_TOKEN"] = ""
        port = urlsplit(endpoint[0]).port if endpoint[0] else None
        env["SLOP_HOOK_TOKEN_FILE"] = str(runtime_token_path(port)) if port else ""
        env["SLOP_BRIDGE_DENY"] = "" if tools_enabled else "tools are off for this request; answer in text"
        return env

    # -- the call ------------------------------------------------------------------------------
    def generate(self, request: ModelRequest) -> ModelReply:
        if not self.config.key():
            raise self.missing_key()
        check_workspace(request.workdir)
        stdin, prompt, resuming = self._inputs(request)
        argv = self.command(prompt, resuming)
        env = self.environment(request.tools_enabled)
        call = _CliCall(self, request)
        started = time.monotonic()
        exit_code: int | None = None
        stderr = ""
        try:
            exit_code, stderr = self._run(argv, stdin, env, request.workdir, call, request.cancel)
        finally:
            self.hooks.cli_call(
                {
                    "command": argv,
                    "cwd": request.workdir,
                    "stdin": stdin,
                    "stdout": "\n".join(call.lines),
                    "stderr": stderr,
                    "exit_code": exit_code,
                    "latency_ms": round((time.monotonic() - started) * 1000.0, 1),
                }
            )
        request.cancel.check(call.turn.text)  # a cancel killed the CLI: not an error of the CLI's
        if exit_code != 0 or call.status == "error":
            raise self.classify(_cli_error(exit_code, call.error, stderr))
        if call.status is None:
            raise self.error(
                ErrorKind.UNKNOWN,
                None,
                retryable=False,
                message="the gemini CLI ended without a result event (its output is in clicalls.log)",
            )
        return call.reply(self)

    def _run(
        self,
        argv: list[str],
        stdin: str,
        env: dict[str, str],
        cwd: str,
        call: _CliCall,
        cancel: CancelToken | None = None,
    ) -> tuple[int, str]:
        """Run the CLI, feeding each stdout line to ``call``; (exit code, stderr). A cancel kills
        its whole process tree at once."""
        self.home.clear_asks()
        with tempfile.TemporaryFile() as err:
            try:
                proc = subprocess.Popen(
                    argv,
                    cwd=cwd,
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=err,
                    env=env,
                    text=True,
                    encoding="utf-8",
                    errors="replace",
                    start_new_session=True,  # its own process group: a kill takes its children too
                )
            except OSError as exc:
                raise self.error(ErrorKind.UNKNOWN, exc, retryable=False) from exc
            out: queue.Queue[str | None] = queue.Queue()
            threads = [
                threading.Thread(target=pump_lines, args=(proc.stdout, out), name="slop-gemini-cli-out"),
                threading.Thread(target=_feed, args=(proc.stdin, stdin), name="slop-gemini-cli-in"),
            ]
            for thread in threads:
                thread.daemon = True
                thread.start()
            unregister = cancel.on_cancel(lambda: kill_tree(proc)) if cancel is not None else None
            try:
                self._read(proc, out, call)
                try:
                    exit_code = proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    raise self.error(
                        ErrorKind.NETWORK, None, message="the gemini CLI closed its output but did not exit"
                    ) from None
            except BaseException:
                kill_tree(proc)
                raise
            finally:
                if unregister is not None:
                    unregister()
                for thread in threads:
                    thread.join(5)
            err.seek(0)
            return exit_code, err.read().decode("utf-8", "replace")

    def _read(self, proc: subprocess.Popen[str], out: queue.Queue[str | None], call: _CliCall) -> None:
        """Consume stdout until it closes; the timeout clock stops while an ask waits for a human."""
        limit = self.config.timeout_s
        spent = 0.0
        last = time.monotonic()
        while True:
            try:
                line = out.get(timeout=POLL_S)
            except queue.Empty:
                line = ""
            now = time.monotonic()
            if not self.home.waiting_asks():
                spent += now - last
            last = now
            if line is None:
                return
            if line:
                call.feed(line.rstrip("\n"))
            if spent > limit:
                raise self.error(
                    ErrorKind.NETWORK,
                    None,
                    message=f"the gemini CLI gave no complete answer within {limit:g} s; it was stopped",
                )

    # -- errors --------------------------------------------------------------------------------
    def classify(self, exc: BaseException) -> ProviderError:
        if isinstance(exc, ProviderError):
            return exc
        if isinstance(exc, subprocess.TimeoutExpired):
            return self.error(ErrorKind.NETWORK, exc)
        if isinstance(exc, WireError):
            if exc.status is not None:
                return self.error(status_kind(exc.status), exc, status=exc.status)
            if isinstance(exc.code, int) and exc.code in CLI_EXIT_CODES:
                return self.error(CLI_EXIT_CODES[exc.code][0], exc, retryable=False)
        return self.error(ErrorKind.UNKNOWN, exc, retryable=False)

    def list_models(self) -> list[str]:
        return sorted(
            {self.config.model, "gemini-2.5-flash", "gemini-2.5-pro", "gemini-2.5-flash-lite"} - {""}
        )


class _CliCall:
    """The events of one CLI run, turned into stream chunks, log entries and a reply."""

    def __init__(self, provider: GeminiCliProvider, request: ModelRequest) -> None:
        self.provider = provider
        self.request = request
        self.tools = request.tools_enabled
        self.parser = StreamParser()
        self.turn = ParsedTurn()
        self.lines: list[str] = []
        self.session: str | None = None
        self.usage = Usage()
        self.status: str | None = None
        self.error: Any = None
        self.running: dict[str, tuple[str, Any, float]] = {}  # tool_id -> (name, args, started)

    def feed(self, line: str) -> None:
        self.lines.append(line)
        if not line.strip():
            return
        try:
            event = json.loads(line)
        except ValueError:
            event = None
        if not isinstance(event, dict) or not isinstance(event.get("type"), str):
            raise self.provider.error(
                ErrorKind.UNKNOWN,
                None,
                retryable=False,
                message=f"the gemini CLI printed a line that is not a stream-json event: {line[:200]!r}",
            )
        handler = getattr(self, f"_on_{event['type']}", None)
        if handler is not None:  # unknown event types are kept in clicalls.log only
            handler(event)

    def _on_init(self, event: dict[str, Any]) -> None:
        self.session = event.get("session_id") or None

    def _on_message(self, event: dict[str, Any]) -> None:
        if event.get("role") != "assistant":
            return  # the CLI echoes the prompt as a user message
        piece = str(event.get("content") or "")
        if not event.get("delta") and self.turn.text:
            piece = ""  # a whole message after its deltas repeats them
        events = self.parser.feed(piece) if self.tools else [ProtocolEvent(EventKind.TEXT, piece)]
        for shown in self.turn.apply(events):
            self.request.stream.emit(shown)

    def _on_tool_use(self, event: dict[str, Any]) -> None:
        tool_id = str(event.get("tool_id") or "")
        name = str(event.get("tool_name") or "")
        args = event.get("parameters")
        self.running[tool_id] = (name, args, time.monotonic())
        self.provider.hooks.comms(
            "IN", "tool_call", {"name": name, "id": tool_id, "args": args, "executed_by": "gemini_cli"}
        )

    def _on_tool_result(self, event: dict[str, Any]) -> None:
        tool_id = str(event.get("tool_id") or "")
        error = event.get("error") if isinstance(event.get("error"), dict) else None
        output = str(event.get("output") or (error or {}).get("message") or "")
        status = _tool_status(event.get("status"), error)
        self.provider.hooks.comms(
            "IN",
            "tool_result",
            {"id": tool_id, "status": status, "output": output[:4000], "executed_by": "gemini_cli"},
        )
        name, args, started = self.running.pop(tool_id, ("", None, time.monotonic()))
        entry: dict[str, Any] = {
            "tool": name,
            "call_id": tool_id,
            "source_tier": get_current_tier(),
            "args": clip(args if isinstance(args, dict) else {}, 2_000),
            "status": status,
            "duration_ms": round((time.monotonic() - started) * 1000.0, 3),
            "output_bytes": len(output.encode("utf-8", "replace")),
            "mutating": name in _MUTATING_TOOLS,
            "executed_by": "gemini_cli",
        }
        if error is not None:
            entry["message"] = str(error.get("message") or "")[:500]
            entry["error_type"] = str(error.get("type") or "")
        if self.request.on_tool_call is not None:
            self.request.on_tool_call(entry)

    def _on_error(self, event: dict[str, Any]) -> None:
        self.provider.hooks.comms(
            "IN",
            "notice",
            {
                "level": str(event.get("severity") or "error"),
                "message": str(event.get("message") or ""),
                "executed_by": "gemini_cli",
            },
        )

    def _on_result(self, event: dict[str, Any]) -> None:
        self.status = str(event.get("status") or "")
        if isinstance(event.get("error"), dict):
            self.error = event["error"]
        stats = event.get("stats") if isinstance(event.get("stats"), dict) else {}
        self.usage = Usage(
            input_tokens=_int(stats.get("input_tokens", stats.get("input"))),
            output_tokens=_int(stats.get("output_tokens")),
            cache_read_tokens=_int(stats.get("cached")),
        )

    def reply(self, provider: GeminiCliProvider) -> ModelReply:
        request = self.request
        if self.tools:
            for shown in self.turn.apply(self.parser.finish()):
                request.stream.emit(shown)
        calls = list(self.turn.calls)
        for n, problem in enumerate(self.turn.errors):
            calls.append(invalid_call(f"xml_error_{n}", "execute", f"{problem}; write the block again"))
        text = self.turn.text.strip()
        if self.session:
            provider.session_id = self.session
            provider._session_keys = tuple(m.key for m in request.messages)
            provider._session_dir = request.workdir
            provider._last_reply = text
        return ModelReply(text, tuple(calls), self.usage, "tool_calls" if calls else "stop")


# the CLI's tools that change files or run commands (the rest read)
_MUTATING_TOOLS = frozenset({"write_file", "replace", "run_shell_command", "save_memory", "write_todos"})


def _tool_status(status: Any, error: dict[str, Any] | None) -> str:
    if status == "success":
        return "success"
    if error is not None and str(error.get("type") or "").lower() == "policy_violation":
        return "rejected"  # our bridge (or a CLI policy) refused it
    return "error"


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _feed(stream: Any, text: str) -> None:
    try:
        if text:
            stream.write(text)
        stream.close()
    except (OSError, ValueError):
        pass  # the CLI exited early; its exit code tells why


def _render_turn(message: Message) -> str:
    if message.role is Role.TOOL:
        return render_results(message.tool_outputs)
    return message.text


def _cli_error(exit_code: int | None, error: Any, stderr: str) -> WireError:
    """What a failed run says: the HTTP status (from the error or the exit code) or the CLI's code."""
    status = None
    message = ""
    if isinstance(error, dict):
        code = error.get("code") or error.get("status")
        if isinstance(code, int) or (isinstance(code, str) and code.isdigit()):
            status = int(code)
        message = str(error.get("message") or "")
    if exit_code is not None and exit_code < 0:
        name = _signal_name(-exit_code)
        detail = f"the gemini CLI was killed by {name} before it finished"
        return WireError(f"{detail}: {message}" if message else detail, code=exit_code)
    if status is None and exit_code:
        status = _EXIT_STATUSES.get(exit_code)
    if status is None and exit_code in CLI_EXIT_CODES:
        message = message or CLI_EXIT_CODES[exit_code][1]
    detail = message or stderr.strip()[-500:] or "no details"
    text = f"the gemini CLI failed (exit code {exit_code}): {detail}"
    return WireError(text, status=status, code=exit_code)


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"
