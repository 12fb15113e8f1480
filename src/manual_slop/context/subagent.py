"""Text-only calls to the active provider: discussion compression and file summaries.

When the controller's backend is the AI client, these call its own helpers
(``run_discussion_compression`` / ``run_subagent_summarization``: text only, tools
disabled, the conversation untouched). Any other backend gets the same instructions
through one text-only ``send``. They block for as long as the provider takes: run them
off the main thread.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol

from manual_slop.context.errors import SummaryError

__all__ = [
    "COMPRESSION_INSTRUCTION",
    "SUMMARY_INSTRUCTION",
    "TextBackend",
    "ask_text",
    "compress_discussion",
    "summarize_file",
]

COMPRESSION_INSTRUCTION = (
    "Compress the discussion below into a summary that replaces it as the history of our work. "
    "Keep every decision and its reason, every file path, function and command that was named, "
    "the current state of the work, and every open question or unresolved problem. Drop greetings, "
    "repetition and intermediate reasoning. Answer with the summary only, in Markdown."
)

SUMMARY_INSTRUCTION = (
    "Summarize the file below for an engineer who will work on this project without reading it. "
    "Say what it is for, its main parts (for code: classes and functions, with what each does), "
    "the data it reads or writes, and anything surprising. Be concise; answer with the summary only."
)


class TextBackend(Protocol):
    """The part of the controller's backend these calls use."""

    def send(self, md_content: str, user_message: str, **kwargs: Any) -> str: ...

    def apply_settings(self, settings: Mapping[str, Any]) -> None: ...


def ask_text(
    backend: TextBackend, md_content: str, prompt: str, settings: Mapping[str, Any] | None = None
) -> str:
    """One text-only request to the active provider; raises SummaryError on failure or an empty answer."""
    return _answer(
        backend, settings, lambda: backend.send(md_content, prompt, enable_tools=False, discussion_history="")
    )


def _answer(backend: TextBackend, settings: Mapping[str, Any] | None, call: Callable[[], Any]) -> str:
    """Apply ``settings``, make ``call``, and turn any failure or empty answer into SummaryError."""
    try:
        if settings is not None:
            backend.apply_settings(settings)
        answer = call()
    except Exception as exc:
        message = exc.ui_message() if hasattr(exc, "ui_message") else f"{type(exc).__name__}: {exc}"
        raise SummaryError(f"the provider call failed: {message}") from exc
    if not isinstance(answer, str) or not answer.strip():
        raise SummaryError("the provider returned an empty answer")
    return answer.strip()


def _helper(backend: TextBackend, name: str, settings: Mapping[str, Any] | None, *args: Any) -> str:
    """Call the AI client's own text-only helper, with ask_text's error contract."""
    return _answer(backend, settings, lambda: getattr(backend, name)(*args))


def compress_discussion(backend: TextBackend, text: str, settings: Mapping[str, Any] | None = None) -> str:
    """A summary of a discussion that keeps decisions, file paths and open questions."""
    if hasattr(backend, "run_discussion_compression"):
        return _helper(backend, "run_discussion_compression", settings, text)
    return ask_text(backend, "", f"{COMPRESSION_INSTRUCTION}\n\n---\n\n{text}", settings)


def summarize_file(
    backend: TextBackend,
    path: str,
    content: str,
    is_code: bool,
    outline: str,
    settings: Mapping[str, Any] | None = None,
) -> str:
    """A model-written summary of one file (``run_subagent_summarization``'s contract)."""
    if hasattr(backend, "run_subagent_summarization"):
        return _helper(backend, "run_subagent_summarization", settings, path, content, is_code, outline)
    parts = [SUMMARY_INSTRUCTION, f"File: {path}"]
    if is_code and outline:
        parts.append(f"Outline:\n{outline}")
    parts.append(f"Content:\n{content}")
    return ask_text(backend, "", "\n\n".join(parts), settings)
