"""``sloppy search QUERY``: the project index's passages closest in meaning to QUERY.

Each hit prints as ``path:start-end  score`` and the passage's first lines; ``--json``
prints one object with a ``results`` list instead. ``--memory`` adds what the project's
memory holds: earlier conversations (recall, as the ``recall`` tool finds them) and the notes
scoring at least ``memory.relevance_threshold``, each labelled by kind, after the file hits.
Scores of different kinds are not comparable.

An index that was never built (or is empty) is reported with what to do (``sloppy index``),
exit 1; nothing is created by a search. Every text printed passes the app's redactor.
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import dataclass
from typing import Any

from manual_slop.commands.args import PROG, ArgParser, UsageError, int_in_range, log_to_stderr, say
from manual_slop.commands.project import ProjectContext, add_project_options, open_project
from manual_slop.memory.service import index_dir_for
from manual_slop.memory.store import memory_file_for
from manual_slop.schema import get_path

__all__ = ["Hit", "build_parser", "run"]

MAX_TOP_K = 100  # as ProjectIndex.query allows
SNIPPET_LINES = 3
SNIPPET_CHARS = 120
MAX_QUERY_CHARS = 2_000


@dataclass(frozen=True, slots=True)
class Hit:
    """One result of any kind: ``file`` (an index passage), ``conversation`` or ``note``."""

    kind: str
    where: str  # path:start-end, conversation id, note #id
    score: float
    text: str
    detail: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, **self.detail, "score": round(self.score, 4), "text": self.text}

    def heading(self) -> str:
        if self.kind == "file":
            return f"{self.where}  {self.score:.2f}"
        return f"{self.kind} {self.where}  {self.score:.2f}"


_top_k = int_in_range(1, MAX_TOP_K, f"a whole number from 1 to {MAX_TOP_K}")


def build_parser() -> argparse.ArgumentParser:
    parser = ArgParser(
        prog=f"{PROG} search",
        description="Search the project index by meaning (no window); build it with `sloppy index`.",
        allow_abbrev=False,
    )
    parser.add_argument("query", nargs="+", metavar="QUERY", help="what to look for (words are joined)")
    parser.add_argument(
        "--top-k", type=_top_k, default=5, metavar="N", help="hits per kind (1-100, default 5)"
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    parser.add_argument("--memory", action="store_true", help="also search earlier conversations and notes")
    add_project_options(parser)
    return parser


def run(args: argparse.Namespace) -> int:
    query = " ".join(args.query).strip()
    if not query:
        raise UsageError("QUERY: the query is empty")
    try:
        query.encode("utf-8")
    except UnicodeEncodeError:  # bytes the terminal's encoding could not decode
        raise UsageError("QUERY: not valid UTF-8 text") from None
    if len(query) > MAX_QUERY_CHARS:
        raise UsageError(f"QUERY: at most {MAX_QUERY_CHARS:,} characters (got {len(query):,})")
    project = open_project(args.config, args.project)
    redact = project.redactor.redact
    for warning in project.warnings:
        say(redact(f"warning: {warning}"))
    log_to_stderr(redact)
    try:
        files, empty = _search_index(project, query, args.top_k)
        memory = _search_memory(project, query, args.top_k) if args.memory else []
    except Exception as exc:  # chromadb, the model, the store: one line, not a traceback
        say(redact(f"error: the search failed: {type(exc).__name__}: {exc}"))
        return 1
    if empty:
        say(f"the project index of {project.project_file.name} is empty; run `{PROG} index` first")
        if not args.memory:
            return 1
    if args.memory and not memory:
        say("no earlier conversations or notes match")
    hits = files + memory
    if args.json:
        document = {
            "query": query,
            "project": str(project.project_file),
            "results": [h.to_dict() for h in hits],
        }
        print(redact(json.dumps(document, ensure_ascii=False, indent=2)))
    else:
        print(redact(_as_text(files, memory)), end="")
    return 0


def _search_index(project: ProjectContext, query: str, top_k: int) -> tuple[list[Hit], bool]:
    """File hits, and whether the index is empty (one never built is not created here)."""
    folder = index_dir_for(project.project_file)
    if not (folder / "index").is_dir():
        return [], True
    from manual_slop.memory.index import ProjectIndex  # chromadb: only now

    with ProjectIndex(folder, redact=project.redactor.redact) as index:
        if not index.status()["chunks"]:
            return [], True
        passages = index.query(query, top_k=top_k)
    hits = [
        Hit(
            "file",
            f"{p.source}:{p.start_line}-{p.end_line}",
            p.score,
            p.text,
            {"source": p.source, "start_line": p.start_line, "end_line": p.end_line},
        )
        for p in passages
    ]
    return hits, False


def _search_memory(project: ProjectContext, query: str, top_k: int) -> list[Hit]:
    """Recalled events of earlier conversations, then notes, each best first (a project without
    a memory store has none, and gets none created)."""
    if not memory_file_for(project.project_file).exists():
        return []
    from manual_slop.memory.service import MemoryService

    # notes as a request selects them: relevant when they score at least the project's threshold
    threshold = float(get_path(project.settings, "memory.relevance_threshold"))
    service = MemoryService(project.project_file, redact=project.redactor.redact)
    try:
        if service.store.recovered_from is not None:
            say(f"warning: the memory store could not be read; moved aside to {service.store.recovered_from}")
            return []
        found = service.search_memory(query, top_k=top_k, relevance_threshold=threshold)
        return [_memory_hit(r) for r in found]
    finally:
        service.close()


def _memory_hit(result: dict[str, Any]) -> Hit:
    when = _when(float(result["ts"]))
    if result["kind"] == "conversation":
        detail = {"conversation": result["source"], "role": result["role"], "ts": result["ts"]}
        where = f"{result['source']} ({result['role']}, {when})"
    else:
        detail = {"id": result["id"], "category": result["source"], "ts": result["ts"]}
        where = f"#{result['id']} [{result['source']}] ({when})"
    return Hit(str(result["kind"]), where, float(result["score"]), str(result["text"]), detail)


def _as_text(files: list[Hit], memory: list[Hit]) -> str:
    lines: list[str] = []
    for hit in files:
        lines += [hit.heading(), *_snippet(hit.text)]
    if memory:
        if files:
            lines.append("")
        lines.append("-- earlier conversations and notes --")
        for hit in memory:
            lines += [hit.heading(), *_snippet(hit.text)]
    return "".join(line + "\n" for line in lines)


def _snippet(text: str) -> list[str]:
    """The passage's first non-blank lines, indented and cut to a terminal's width."""
    picked = [line.rstrip() for line in text.splitlines() if line.strip()][:SNIPPET_LINES]
    return [
        "    " + (line if len(line) <= SNIPPET_CHARS else line[: SNIPPET_CHARS - 1] + "…") for line in picked
    ]


def _when(ts: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(ts))
