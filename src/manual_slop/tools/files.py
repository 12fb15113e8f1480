"""Read-only file tools: read_file, list_directory, search_files, get_tree, get_file_slice, grep.

Every path the model names was checked by the path policy before a handler runs; paths
a handler discovers itself (directory entries, glob matches, files under a grep root) are
checked again, so a symlink or a protected file inside the project is skipped, never read.
Walks do not follow symlinked folders and skip the usual noise (``.git``, ``node_modules``,
virtualenvs, caches).
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from manual_slop.tools.errors import AccessDenied, ToolInputError
from manual_slop.tools.textio import is_binary, iter_lines, read_bytes, read_text
from manual_slop.tools.tool import Tool, ToolRun

__all__ = ["SKIPPED_DIRS", "file_tools", "walk_files"]

READ_LIMIT = 96_000  # bytes read_file returns; leaves room for its note under the 100 KB cap
TREE_ENTRY_LIMIT = 2_000
SEARCH_LIMIT = 1_000
GREP_FILE_LIMIT = 20_000_000  # files larger than this are skipped by grep
GREP_LINE_CHARS = 300
GREP_REGEX_CHARS = 2_000  # a longer pattern costs seconds of CPU to compile and scan; no search needs it
SKIPPED_DIRS = frozenset(
    {".git", ".hg", ".svn", "node_modules", "__pycache__", ".venv", "venv", ".mypy_cache", ".pytest_cache",
     ".ruff_cache", ".tox"}
)  # fmt: skip


def _path_param(description: str) -> dict[str, Any]:
    return {"type": "string", "minLength": 1, "description": description}


def _schema(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}


def _allowed(run: ToolRun, path: Path) -> Path | None:
    try:
        return run.check(path)
    except AccessDenied:
        return None


def _require_dir(run: ToolRun, path: Path) -> None:
    if not path.exists():
        raise ToolInputError(f"no such directory: {run.display(path)}")
    if not path.is_dir():
        raise ToolInputError(f"{run.display(path)} is a file, not a directory (use read_file)")


# -- read_file ----------------------------------------------------------------------------
def read_file(args: dict[str, Any], run: ToolRun) -> str:
    path = run.path()
    shown = run.display(path)
    text_file = read_text(path, shown, READ_LIMIT)
    if text_file.size == 0:
        return f"({shown} is empty)"
    text = text_file.lossy_note + text_file.text
    if text_file.size > READ_LIMIT:
        text += (
            f"\n\n[{shown} is {text_file.size:,} bytes; this is the first {READ_LIMIT:,}. "
            "Read further with get_file_slice(path, start_line, end_line) or search it with grep]"
        )
    return text


# -- list_directory ---------------------------------------------------------------------------
def _entry_kind(entry: os.DirEntry[str]) -> tuple[str, int | None]:
    try:
        st = entry.stat(follow_symlinks=True)
    except OSError:
        return "broken-link", None
    if stat.S_ISDIR(st.st_mode):
        return "dir", None
    if stat.S_ISREG(st.st_mode):
        return "file", st.st_size
    return "other", None


def list_directory(args: dict[str, Any], run: ToolRun) -> str:
    path = run.path()
    _require_dir(run, path)
    rows: list[tuple[int, str, str, str]] = []
    hidden = 0
    try:
        entries = list(os.scandir(path))
    except OSError as exc:
        raise ToolInputError(f"cannot list {run.display(path)}: {exc.strerror or exc}") from None
    for entry in entries:
        if _allowed(run, Path(entry.path)) is None:
            hidden += 1
            continue
        kind, size = _entry_kind(entry)
        if entry.is_symlink():
            kind = f"{kind} (symlink)"
        name = entry.name + ("/" if kind.startswith("dir") else "")
        rows.append((0 if kind.startswith("dir") else 1, name, kind, "-" if size is None else f"{size:,}"))
    rows.sort(key=lambda r: (r[0], r[1].casefold()))
    shown = run.display(path)
    lines = [f"{shown}: {len(rows)} entries", "type            size  name"]
    lines += [f"{kind:<14}{size:>6}  {name}" for _, name, kind, size in rows]
    if hidden:
        lines.append(f"({hidden} protected or outside entries not shown)")
    return (
        "\n".join(lines)
        if rows
        else f"{shown} is empty" + (f" ({hidden} protected entries)" if hidden else "")
    )


# -- search_files -------------------------------------------------------------------------------
def search_files(args: dict[str, Any], run: ToolRun) -> str:
    root = run.path()
    _require_dir(run, root)
    pattern = args["pattern"]
    if os.path.isabs(pattern) or ".." in Path(pattern).parts or "\x00" in pattern:
        raise ToolInputError("pattern must be relative to path and may not contain '..'")
    matches: list[str] = []
    more = False
    try:
        candidates = root.glob(pattern)
        for match in candidates:
            if run.stopped():
                break
            if any(part in SKIPPED_DIRS for part in match.relative_to(root).parts[:-1]):
                continue
            allowed = _allowed(run, match)
            if allowed is None:
                continue
            if len(matches) >= SEARCH_LIMIT:
                more = True
                break
            matches.append(run.display(match) + ("/" if match.is_dir() else ""))
    except (ValueError, NotImplementedError) as exc:
        raise ToolInputError(f"invalid glob pattern {pattern!r}: {exc}") from None
    if not matches:
        return f"no files match {pattern!r} under {run.display(root)}"
    matches.sort()
    tail = f"\n(stopped at {SEARCH_LIMIT} matches; narrow the pattern)" if more else ""
    return f"{len(matches)} matches for {pattern!r} under {run.display(root)}:\n" + "\n".join(matches) + tail


# -- get_tree -------------------------------------------------------------------------------------
def get_tree(args: dict[str, Any], run: ToolRun) -> str:
    root = run.path()
    _require_dir(run, root)
    max_depth = int(args.get("max_depth", 3))
    lines = [run.display(root) + "/"]
    count = 0

    def walk(folder: Path, depth: int, indent: str) -> None:
        nonlocal count
        try:
            entries = sorted(os.scandir(folder), key=lambda e: (not e.is_dir(), e.name.casefold()))
        except OSError as exc:
            lines.append(f"{indent}(cannot list: {exc.strerror or exc})")
            return
        for entry in entries:
            if count >= TREE_ENTRY_LIMIT or run.stopped():
                return
            if _allowed(run, Path(entry.path)) is None:
                continue
            count += 1
            is_dir = entry.is_dir(follow_symlinks=False)
            if is_dir and entry.name in SKIPPED_DIRS:
                lines.append(f"{indent}{entry.name}/ (not expanded)")
            elif is_dir:
                lines.append(f"{indent}{entry.name}/")
                if depth < max_depth:
                    walk(Path(entry.path), depth + 1, indent + "  ")
            else:
                suffix = " -> (symlink)" if entry.is_symlink() else ""
                lines.append(f"{indent}{entry.name}{suffix}")

    walk(root, 1, "  ")
    if count >= TREE_ENTRY_LIMIT:
        lines.append(f"(stopped at {TREE_ENTRY_LIMIT} entries; ask for a subfolder or a smaller max_depth)")
    return "\n".join(lines)


# -- get_file_slice ---------------------------------------------------------------------------------
def get_file_slice(args: dict[str, Any], run: ToolRun) -> str:
    path = run.path()
    shown = run.display(path)
    start, end = int(args["start_line"]), int(args["end_line"])
    if end < start:
        raise ToolInputError(f"end_line ({end}) is before start_line ({start})")
    picked: list[str] = []
    total = 0
    for total, line in enumerate(iter_lines(path, shown), start=1):
        if start <= total <= end:
            picked.append(line)
        if total > end and total > 1_000_000:
            total = -1  # too long to count to the end
            break
    if total != -1 and start > total:
        raise ToolInputError(f"start_line {start} is past the end of {shown} ({total} lines)")
    of = "?" if total == -1 else str(total)
    last = start + len(picked) - 1
    return f"[{shown}: lines {start}-{last} of {of}]\n" + "".join(picked)


# -- grep -------------------------------------------------------------------------------------------
def walk_files(run: ToolRun, root: Path, suffixes: tuple[str, ...] = ()) -> Iterator[Path]:
    """Allowed regular files under ``root`` (or ``root`` itself), noise folders skipped."""
    if root.is_file():
        yield root
        return
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS)
        for name in sorted(files):
            if suffixes and not name.endswith(suffixes):
                continue
            candidate = Path(folder) / name
            if _allowed(run, candidate) is not None and candidate.is_file():
                yield candidate
        if run.stopped():
            return


def grep(args: dict[str, Any], run: ToolRun) -> str:
    root = run.path()
    if not root.exists():
        raise ToolInputError(f"no such file or directory: {run.display(root)}")
    try:
        regex = re.compile(args["regex"])  # its length is bounded by the schema (GREP_REGEX_CHARS)
    except re.error as exc:
        raise ToolInputError(f"invalid regex {args['regex']!r}: {exc}") from None
    limit = int(args.get("max_results", 100))
    results: list[str] = []
    files_searched = 0
    for path in walk_files(run, root):
        if len(results) >= limit or run.stopped():
            break
        try:
            head, size = read_bytes(path, run.display(path), 8192)
        except ToolInputError:
            continue
        if size > GREP_FILE_LIMIT or is_binary(head):
            continue
        files_searched += 1
        shown = run.display(path)
        try:
            for number, line in enumerate(iter_lines(path, shown), start=1):
                text = line.rstrip("\r\n")
                if regex.search(text):
                    if len(text) > GREP_LINE_CHARS:
                        text = text[:GREP_LINE_CHARS] + "..."
                    results.append(f"{shown}:{number}: {text}")
                    if len(results) >= limit:
                        break
        except ToolInputError:
            continue
    if not results:
        return f"no matches for {args['regex']!r} in {files_searched} files under {run.display(root)}"
    more = f"\n(stopped at max_results={limit})" if len(results) >= limit else ""
    return "\n".join(results) + more


# -- declarations -------------------------------------------------------------------------------------
def file_tools() -> list[Tool]:
    return [
        Tool(
            "read_file",
            "Read a text file of the project and return its content. Use it to look at a file before "
            f"changing it. Files over {READ_LIMIT:,} bytes are cut (the result says so); read the rest "
            "with get_file_slice or grep. Binary files are refused.",
            _schema({"path": _path_param("File path, relative to the project's base dir")}, ["path"]),
            read_file,
            path_params=("path",),
        ),
        Tool(
            "list_directory",
            "List one folder: each entry's name, type (file, dir, symlink) and size in bytes. "
            "Use '.' for the project's base dir. Protected files are not shown.",
            _schema(
                {"path": _path_param("Folder path, relative to the base dir ('.' for the base dir)")},
                ["path"],
            ),
            list_directory,
            path_params=("path",),
        ),
        Tool(
            "search_files",
            "Find files by name with a glob pattern under a folder, e.g. pattern '**/*.py' for every "
            f"Python file at any depth or 'src/*.md'. Returns matching paths (at most {SEARCH_LIMIT}).",
            _schema(
                {
                    "path": _path_param("Folder to search under ('.' for the base dir)"),
                    "pattern": {
                        "type": "string",
                        "minLength": 1,
                        "description": "Glob pattern; ** matches any depth",
                    },
                },
                ["path", "pattern"],
            ),
            search_files,
            path_params=("path",),
        ),
        Tool(
            "get_tree",
            "Show the folder structure under a folder as an indented tree, down to max_depth levels "
            "(default 3). Good for a first look at an unfamiliar project.",
            _schema(
                {
                    "path": _path_param("Folder to start from ('.' for the base dir)"),
                    "max_depth": {
                        "type": "integer",
                        "minimum": 1,
                        "maximum": 20,
                        "description": "Levels to show (default 3)",
                    },
                },
                ["path"],
            ),
            get_tree,
            path_params=("path",),
        ),
        Tool(
            "get_file_slice",
            "Return lines start_line..end_line (1-based, inclusive) of a text file exactly as they are, "
            "after a one-line header with the file's line count. Use it for big files and before "
            "set_file_slice.",
            _schema(
                {
                    "path": _path_param("File path"),
                    "start_line": {"type": "integer", "minimum": 1, "description": "First line (1-based)"},
                    "end_line": {"type": "integer", "minimum": 1, "description": "Last line (inclusive)"},
                },
                ["path", "start_line", "end_line"],
            ),
            get_file_slice,
            path_params=("path",),
        ),
        Tool(
            "grep",
            "Search text files for a Python regular expression, in one file or recursively under a "
            "folder. Returns 'path:line: text' for each matching line, at most max_results "
            "(default 100).",
            _schema(
                {
                    "path": _path_param("File or folder to search ('.' for the whole project)"),
                    "regex": {
                        "type": "string",
                        "minLength": 1,
                        "maxLength": GREP_REGEX_CHARS,
                        "description": "Python regular expression",
                    },
                    "max_results": {
                        "type": "integer",
                        "minimum": 1,
                        "maximum": 1000,
                        "description": "Most matches to return (default 100)",
                    },
                },
                ["path", "regex"],
            ),
            grep,
            path_params=("path",),
        ),
    ]
