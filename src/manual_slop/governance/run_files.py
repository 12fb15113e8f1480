"""Reading run logs: the session's runs, one run's records a page at a time, and one request laid
out section by section with its token estimate (what the Prompt Inspector and ``/api/runs``
show, and what ``sloppy replay`` reads).

Run ids are checked against :data:`~manual_slop.governance.run_log.RUN_ID` before any path is
built from one, so an id can never name a file outside the session's ``runs/`` folder.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from manual_slop.ai.transcript import estimate_tokens
from manual_slop.governance.run_log import RUN_ID, RecordType

__all__ = [
    "PAGE_MAX_BYTES",
    "RunLogError",
    "Section",
    "list_runs",
    "read_page",
    "read_run",
    "request_view",
    "run_path",
    "run_summary",
]

PAGE_MAX_BYTES = 4 * 1024 * 1024  # one page of records stops growing here (at least one record)
_TAIL_BYTES = 64 * 1024  # where run_end is looked for
_TYPES = frozenset(str(t) for t in RecordType)


class RunLogError(ValueError):
    """A run log that cannot be read: the message names the file and the line."""

    def __init__(self, path: Path, line: int, problem: str) -> None:
        super().__init__(f"{path.name} line {line}: {problem}" if line else f"{path}: {problem}")
        self.path = path
        self.line = line


def run_path(folder: Path, run_id: str) -> Path:
    """The file of ``run_id`` in ``folder``; ValueError for anything that is not a run id."""
    if not RUN_ID.fullmatch(run_id):
        raise ValueError(f"{run_id[:80]!r} is not a run id (like 142501-chat-1a2b3c4d)")
    return folder / f"{run_id}.jsonl"


def _lines(path: Path) -> Iterator[tuple[int, bytes]]:
    with path.open("rb") as handle:
        yield from enumerate(handle, start=1)


def _parse(path: Path, number: int, raw: bytes) -> dict[str, Any]:
    try:
        record = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise RunLogError(path, number, f"not a JSON record ({exc})") from None
    if not isinstance(record, dict):
        raise RunLogError(path, number, f"expected a JSON object, got {type(record).__name__}")
    kind = record.get("type")
    if kind not in _TYPES:
        raise RunLogError(path, number, f"unknown record type {str(kind)[:40]!r}")
    return record


def read_run(path: Path, *, strict: bool = True) -> list[dict[str, Any]]:
    """Every record of a run log, in order. ``strict``: any bad line is a RunLogError naming it;
    otherwise a torn last line (a run still being written) is left out. The first record must be
    ``run_start`` either way."""
    try:
        numbered = list(_lines(path))
    except OSError as exc:
        raise RunLogError(path, 0, f"cannot be read ({exc.strerror or exc})") from None
    records: list[dict[str, Any]] = []
    for number, raw in numbered:
        if not raw.strip():
            continue
        try:
            records.append(_parse(path, number, raw))
        except RunLogError:
            if strict or number != len(numbered) or raw.endswith(b"\n"):
                raise
    if not records:
        raise RunLogError(path, 0, "the file is empty; a run log starts with a run_start record")
    if records[0]["type"] != RecordType.RUN_START:
        raise RunLogError(path, 1, f"expected a run_start record first, got {records[0]['type']!r}")
    return records


def run_summary(path: Path) -> dict[str, Any]:
    """What the run list shows of one run: its start, and its end when it ended (else the
    counts so far)."""
    with path.open("rb") as handle:
        first = handle.readline()
        handle.seek(0, 2)
        size = handle.tell()
        handle.seek(max(0, size - _TAIL_BYTES))
        tail = handle.read()
    start = _parse(path, 1, first)
    end: dict[str, Any] | None = None
    for raw in reversed(tail.splitlines()):
        if raw.startswith(b'{"type": "run_end"'):
            end = json.loads(raw)
            break
    if end is None:  # still running (or the app died): count what is there
        data = path.read_bytes()
        counts = {
            "requests": data.count(b'\n{"type": "request"'),
            "tool_calls": data.count(b'\n{"type": "tool_call"'),
            "decisions": data.count(b'\n{"type": "decision"'),
        }
    else:
        counts = {key: int(end.get(key, 0)) for key in ("requests", "tool_calls", "decisions")}
    return {
        "id": str(start.get("run_id", path.stem)),
        "kind": str(start.get("kind", "")),
        "started": float(start.get("started", 0.0)),
        "ended": None if end is None else float(end.get("ended", 0.0)),
        "outcome": None if end is None else str(end.get("outcome", "")),
        "error_kind": "" if end is None else str(end.get("error_kind", "")),
        "conversation": str(start.get("conversation", "")),
        "ticket": str(start.get("ticket", "")),
        "tier": str(start.get("tier", "")),
        "provider": str(start.get("provider", "")),
        "model": str(start.get("model", "")),
        **counts,
        "bytes": size,
        "truncated": b'\n{"type": "truncated"' in tail
        or (end is not None and int(end.get("dropped", 0)) > 0),
    }


def list_runs(
    folder: Path, known: dict[str, tuple[int, dict[str, Any]]] | None = None
) -> list[dict[str, Any]]:
    """Summaries of the runs in ``folder``, oldest first; a file that cannot be read is left out.
    ``known`` (run id -> (file size, summary)) keeps the summaries between calls: a file whose
    size did not change is not read again."""
    if not folder.is_dir():
        return []
    summaries = []
    for path in folder.glob("*.jsonl"):
        if not RUN_ID.fullmatch(path.stem):
            continue
        try:
            size = path.stat().st_size
            cached = known.get(path.stem) if known is not None else None
            summary = cached[1] if cached is not None and cached[0] == size else run_summary(path)
        except (OSError, ValueError):
            continue  # being created, or not a run log: the list shows the others
        if known is not None:
            known[path.stem] = (size, summary)
        summaries.append(summary)
    return sorted(summaries, key=lambda s: (s["started"], s["id"]))


def read_page(
    path: Path, offset: int, limit: int, max_bytes: int = PAGE_MAX_BYTES
) -> tuple[list[dict[str, Any]], int | None, int]:
    """Records ``offset`` … (at most ``limit``, and no more than ``max_bytes`` of them after the
    first); the offset of the next page (None at the end) and the number of records."""
    records: list[dict[str, Any]] = []
    size = 0
    total = 0
    following: int | None = None
    for number, raw in _lines(path):
        if not raw.endswith(b"\n"):
            break  # a record still being written
        index = total
        total += 1
        if index < offset or following is not None:
            continue
        if records and (len(records) >= limit or size + len(raw) > max_bytes):
            following = index
            continue
        records.append(_parse(path, number, raw))
        size += len(raw)
    return records, following, total


@dataclass(frozen=True, slots=True)
class Section:
    """One part of a request as the inspector shows it."""

    name: str
    text: str

    @property
    def tokens(self) -> int:
        return estimate_tokens(len(self.text))

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "text": self.text, "tokens": self.tokens}


def request_view(records: list[dict[str, Any]], n: int) -> dict[str, Any]:
    """Request ``n`` (1-based) of a run: its sections (system, context, each message, the tool
    declarations) with token estimates, and what answered it. KeyError when there is none."""
    request = next((r for r in records if r["type"] == RecordType.REQUEST and r.get("n") == n), None)
    if request is None:
        raise KeyError(n)
    sections = [
        Section("system", str(request.get("system", ""))),
        Section("context", str(request.get("context", ""))),
    ]
    for index, message in enumerate(request.get("messages") or [], start=1):
        sections.append(Section(f"message {index} · {message.get('role', '?')}", _message_text(message)))
    declarations = request.get("declarations")
    if declarations is not None:
        names = ", ".join(str(d.get("function", {}).get("name", "?")) for d in declarations)
        text = json.dumps(declarations, ensure_ascii=False, indent=1)
        sections.append(Section(f"tools ({len(declarations)}: {names})", text))
    answers = [r for r in records if r["type"] in ("response", "error", "retry") and r.get("n") == n]
    response = next((r for r in answers if r["type"] == "response"), None)
    return {
        "n": n,
        "round": request.get("round", 0),
        "tool_choice": request.get("tool_choice", ""),
        "answer_schema": request.get("answer_schema"),
        "sections": [s.to_dict() for s in sections],
        "tokens": sum(s.tokens for s in sections),
        "response": response,
        "failures": [r for r in answers if r["type"] != "response"],
    }


def _message_text(message: dict[str, Any]) -> str:
    """A message as readable text: its words, then each call (``->``) and each output (``<-``)
    (ASCII arrows: every font has them)."""
    parts = [str(message.get("text", ""))] if message.get("text") else []
    for call in message.get("tool_calls") or []:
        args = json.dumps(call.get("args", {}), ensure_ascii=False)
        parts.append(f"-> {call.get('name', '?')}({args})  [{call.get('id', '')}]")
    for output in message.get("tool_outputs") or []:
        parts.append(f"<- {output.get('name', '?')} [{output.get('status', '')}] {output.get('call_id', '')}")
        parts.append(str(output.get("content", "")))
    return "\n".join(parts)
