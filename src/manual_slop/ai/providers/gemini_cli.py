"""The ``gemini`` CLI as a provider: one subprocess per call, ``--output-format stream-json``.

Each call runs ``gemini -m MODEL -o stream-json -p PROMPT [-r SESSION]`` with the rest of
the input on stdin, and reads JSON-L events as they come::

    init         session id (kept: the next call resumes it with -r) and model
    message      assistant text; ``delta: true`` chunks are streamed
    tool_use     a tool the CLI runs itself (logged)
    tool_result  its outcome (logged)
    error        a problem the CLI reports
    result       status and token stats; the last event

The CLI keeps the history of its session; only the new turn is sent while the
conversation still matches the session, otherwise a new session starts with the whole
conversation on stdin. Our own tools go through the XML protocol in the text (the CLI's
tools stay the CLI's). Every call is logged through ``hooks.cli_call`` (``clicalls.log``:
command, stdin, stdout, stderr, latency, exit code).

A non-zero exit carries the HTTP status modulo 256 (400 -> 144); the ``result`` event's
``error.code``, when present, gives the status itself.
"""

from __future__ import annotations

import json
import os
import queue
import shutil
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from manual_slop.ai.errors import ErrorKind, ProviderError, WireError
from manual_slop.ai.messages import Message, ModelReply, ModelRequest, Role, Usage, invalid_call
from manual_slop.ai.providers.base import Provider, status_kind
from manual_slop.ai.xml_protocol import (
    EventKind,
    ParsedTurn,
    ProtocolEvent,
    StreamParser,
    protocol_prompt,
    render_results,
    render_text_messages,
)

__all__ = ["GeminiCliProvider"]

MAX_ARG_PROMPT = 32_000  # longer prompts go on stdin (argv length limits)
_EXIT_STATUSES = {status % 256: status for status in (400, 401, 403, 404, 429, 500, 502, 503, 504, 529)}


class GeminiCliProvider(Provider):
    name = "gemini_cli"
    needs_api_key = False  # the CLI can use its own login
    native_tools = False
    prompt_budget = (360_000, 270_000)

    def __init__(self, config, hooks=None) -> None:
        super().__init__(config, hooks)
        self.session_id: str | None = None
        self._session_keys: tuple[int, ...] | None = None  # conversation keys the session holds
        self._last_reply: str | None = None

    def reset(self) -> None:
        self.session_id = self._session_keys = self._last_reply = None

    def close(self) -> None:
        self.reset()

    def binary(self) -> str:
        configured = str(self.config.options.get("binary") or "").strip() or "gemini"
        found = shutil.which(configured) if os.sep not in configured else configured
        if not found or not Path(found).exists():
            raise self.error(
                ErrorKind.UNKNOWN,
                None,
                retryable=False,
                message=f"the gemini CLI was not found ({configured!r}); install it "
                "(npm install -g @google/gemini-cli) or set providers.gemini_cli.binary",
            )
        return found

    # -- building the invocation -----------------------------------------------------------------
    def _inputs(self, request: ModelRequest) -> tuple[str, str, bool]:
        """(stdin, prompt, resuming)."""
        prefix, last = request.messages[:-1], request.messages[-1]
        keys = tuple(m.key for m in prefix)
        resuming = (
            self.session_id is not None
            and self._session_keys is not None
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
                    sections.append(protocol_prompt(declarations))
            if prefix:
                history = "\n\n".join(f"[{m['role']}]\n{m['content']}" for m in render_text_messages(prefix))
                sections.append(f"## Conversation so far\n\n{history}")
            stdin = "\n\n".join(s for s in sections if s and s.strip())
        if len(new_turn) > MAX_ARG_PROMPT:
            stdin = f"{stdin}\n\n{new_turn}".strip()
            new_turn = "Answer the message above."
        return stdin, new_turn, resuming

    def command(self, prompt: str, resuming: bool) -> list[str]:
        argv = [self.binary(), "-m", self.config.model, "-o", "stream-json", "-p", prompt]
        if resuming and self.session_id:
            argv += ["-r", self.session_id]
        return argv

    def environment(self) -> dict[str, str]:
        env = dict(os.environ)
        env.setdefault("GEMINI_CLI_NO_RELAUNCH", "1")
        if self.config.key():
            env["GEMINI_API_KEY"] = self.config.key()
        if self.config.base_url:
            env["GOOGLE_GEMINI_BASE_URL"] = self.config.base_url.rstrip("/")
        return env

    # -- the call ------------------------------------------------------------------------------
    def generate(self, request: ModelRequest) -> ModelReply:
        stdin, prompt, resuming = self._inputs(request)
        argv = self.command(prompt, resuming)
        tools = request.declarations is not None
        parser = StreamParser()
        turn = ParsedTurn()
        state: dict[str, Any] = {"session": None, "usage": Usage(), "status": None, "error": None}
        lines: list[str] = []

        def on_event(event: dict[str, Any]) -> None:
            kind = event.get("type")
            if kind == "init":
                state["session"] = event.get("session_id")
            elif kind == "message" and event.get("role") == "assistant":
                piece = str(event.get("content") or "")
                if not event.get("delta"):
                    piece = piece if not turn.text else ""
                events = parser.feed(piece) if tools else [ProtocolEvent(EventKind.TEXT, piece)]
                for shown in turn.apply(events):
                    request.stream.emit(shown)
            elif kind == "tool_use":
                self.hooks.comms(
                    "IN",
                    "tool_call",
                    {
                        "name": event.get("tool_name"),
                        "id": event.get("tool_id"),
                        "args": event.get("parameters"),
                        "executed_by": "gemini_cli",
                    },
                )
            elif kind == "tool_result":
                self.hooks.comms(
                    "IN",
                    "tool_result",
                    {
                        "id": event.get("tool_id"),
                        "status": event.get("status"),
                        "output": str(event.get("output") or event.get("error") or "")[:4000],
                        "executed_by": "gemini_cli",
                    },
                )
            elif kind == "error":
                state["error"] = event
            elif kind == "result":
                state["status"] = event.get("status")
                if isinstance(event.get("error"), dict):
                    state["error"] = event["error"]
                stats = event.get("stats") or {}
                state["usage"] = Usage(
                    input_tokens=int(stats.get("input_tokens") or stats.get("input") or 0),
                    output_tokens=int(stats.get("output_tokens") or 0),
                    cache_read_tokens=int(stats.get("cached") or 0),
                )

        started = time.monotonic()
        exit_code, stderr = self._run(argv, stdin, lines, on_event)
        self.hooks.cli_call(
            {
                "command": argv,
                "stdin": stdin,
                "stdout": "\n".join(lines),
                "stderr": stderr,
                "exit_code": exit_code,
                "latency_ms": round((time.monotonic() - started) * 1000.0, 1),
            }
        )
        if exit_code != 0 or state["status"] == "error":
            raise self.classify(_cli_error(exit_code, state["error"], stderr))
        if tools:
            for shown in turn.apply(parser.finish()):
                request.stream.emit(shown)
        calls = list(turn.calls)
        for n, problem in enumerate(turn.errors):
            calls.append(invalid_call(f"xml_error_{n}", "execute", f"{problem}; write the block again"))
        text = turn.text.strip()
        if state["session"]:
            self.session_id = state["session"]
            self._session_keys = tuple(m.key for m in request.messages)
            self._last_reply = text
        return ModelReply(text, tuple(calls), state["usage"], "tool_calls" if calls else "stop")

    def _run(self, argv: list[str], stdin: str, lines: list[str], on_event: Any) -> tuple[int, str]:
        """Run the CLI, feeding each stdout JSON line to ``on_event``; (exit code, stderr)."""
        with tempfile.TemporaryFile() as err:
            try:
                proc = subprocess.Popen(
                    argv,
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=err,
                    env=self.environment(),
                    text=True,
                    encoding="utf-8",
                    errors="replace",
                )
            except OSError as exc:
                raise self.error(ErrorKind.UNKNOWN, exc, retryable=False) from exc
            out: queue.Queue[str | None] = queue.Queue()
            reader = threading.Thread(
                target=_pump, args=(proc.stdout, out), name="slop-gemini-cli-out", daemon=True
            )
            reader.start()
            try:
                try:
                    if stdin:
                        proc.stdin.write(stdin)
                    proc.stdin.close()
                except (BrokenPipeError, OSError):
                    pass  # the CLI exited early; its exit code tells why
                deadline = time.monotonic() + self.config.timeout_s
                while True:
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        raise self.error(
                            ErrorKind.NETWORK,
                            None,
                            message=f"the gemini CLI gave no answer within {self.config.timeout_s:g} s",
                        )
                    try:
                        line = out.get(timeout=min(remaining, 0.5))
                    except queue.Empty:
                        continue
                    if line is None:
                        break
                    lines.append(line.rstrip("\n"))
                    try:
                        event = json.loads(line)
                    except ValueError:
                        continue  # the CLI prints the odd non-JSON line (warnings)
                    if isinstance(event, dict):
                        on_event(event)
                exit_code = proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except BaseException:
                proc.kill()
                proc.wait(5)
                raise
            finally:
                reader.join(5)
            err.seek(0)
            return exit_code, err.read().decode("utf-8", "replace")

    # -- errors --------------------------------------------------------------------------------
    def classify(self, exc: BaseException) -> ProviderError:
        if isinstance(exc, ProviderError):
            return exc
        if isinstance(exc, subprocess.TimeoutExpired):
            return self.error(ErrorKind.NETWORK, exc)
        if isinstance(exc, WireError):
            kind = status_kind(exc.status)
            return self.error(kind, exc, status=exc.status)
        return self.error(ErrorKind.UNKNOWN, exc, retryable=False)

    def list_models(self) -> list[str]:
        return sorted(
            {self.config.model, "gemini-2.5-flash", "gemini-2.5-pro", "gemini-2.5-flash-lite"} - {""}
        )


def _pump(stream: Any, out: queue.Queue[str | None]) -> None:
    try:
        for line in stream:
            out.put(line)
    finally:
        out.put(None)


def _render_turn(message: Message) -> str:
    if message.role is Role.TOOL:
        return render_results(message.tool_outputs)
    return message.text


def _cli_error(exit_code: int, error: Any, stderr: str) -> WireError:
    status = None
    message = ""
    if isinstance(error, dict):
        code = error.get("code") or error.get("status")
        if isinstance(code, int) or (isinstance(code, str) and code.isdigit()):
            status = int(code)
        message = str(error.get("message") or "")
    if status is None and exit_code:
        status = _EXIT_STATUSES.get(exit_code)
    detail = message or stderr.strip()[-500:] or "no details"
    return WireError(
        f"the gemini CLI failed (exit code {exit_code}): {detail}", status=status, code=exit_code
    )
