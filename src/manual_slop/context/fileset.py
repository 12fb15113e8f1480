"""Which files a project tracks: explicit paths and globs under a base dir, minus excludes.

Patterns are posix-style and relative to the base dir (absolute ones are allowed):

- ``*`` and ``?`` match within one path segment, ``[abc]`` a character class;
- ``**`` as a whole segment matches any number of directories (``src/**/*.py``
  finds ``src/a.py`` and ``src/x/y/b.py``);
- a path without wildcards names one file, or every file below it when it is a
  directory; a named file that does not exist is kept as *missing* so the user sees it.

Excludes apply to glob matches (a file named explicitly is always kept). An exclude
without ``/`` matches any file or directory name (``__pycache__``, ``*.pyc``); one with
``/`` matches the relative path or any of its parent directories (``docs/old``).
``.git`` directories are never walked. The result is sorted by name and free of
duplicates, so the same project always yields the same list.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path, PurePosixPath

from manual_slop.context.errors import FileSetError

__all__ = ["ResolvedPath", "display_name", "glob_regex", "is_excluded", "resolve_files"]

_MAGIC = re.compile(r"[*?\[]")
_NEVER_WALK = frozenset({".git", ".hg", ".svn"})
MAX_FILES = 50_000  # a pattern matching more is almost certainly a mistake


@dataclass(frozen=True, slots=True, order=True)
class ResolvedPath:
    """One tracked file: its display name, absolute path and whether it exists."""

    name: str
    path: Path
    missing: bool = False


@lru_cache(maxsize=512)
def glob_regex(pattern: str) -> re.Pattern[str]:
    """Compile a posix glob (with ``**``) into a regex matched against whole relative paths."""
    parts = pattern.strip("/").split("/") if pattern not in ("", "/") else [""]
    out: list[str] = []
    for index, part in enumerate(parts):
        last = index == len(parts) - 1
        if part == "**":
            out.append(".*" if last else "(?:[^/]+/)*")
            continue
        out.append(_segment_regex(part))
        if not last:
            out.append("/")
    return re.compile("".join(out))


def _segment_regex(segment: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(segment):
        char = segment[i]
        if char == "*":
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        elif char == "[":
            end = segment.find("]", i + 2 if segment[i + 1 : i + 2] in ("!", "]") else i + 1)
            if end == -1:
                out.append(re.escape(char))
            else:
                body = segment[i + 1 : end]
                if body.startswith("!"):
                    body = "^" + body[1:]
                out.append("[" + body.replace("\\", "\\\\") + "]")
                i = end
        else:
            out.append(re.escape(char))
        i += 1
    return "".join(out)


def is_excluded(name: str, exclude: Sequence[str], is_dir: bool = False) -> bool:
    """Does any exclude pattern match ``name`` (a posix path relative to the base dir)?

    ``is_dir`` asks about a directory: it is excluded when everything below it would be.
    """
    if not exclude:
        return False
    parts = name.split("/")
    for pattern in exclude:
        clean = pattern.strip().rstrip("/")
        if not clean:
            continue
        regex = glob_regex(clean)
        if "/" not in clean:
            if any(regex.fullmatch(part) for part in parts):
                return True
            continue
        if is_dir and regex.fullmatch(name + "/"):
            return True
        for depth in range(len(parts), 0, -1):
            if regex.fullmatch("/".join(parts[:depth])):
                return True
    return False


def display_name(path: Path, base_dir: Path) -> str:
    """Posix path relative to ``base_dir``, or the absolute posix path outside it."""
    try:
        return path.relative_to(base_dir).as_posix()
    except ValueError:
        return path.as_posix()


def resolve_files(base_dir: Path, patterns: Iterable[str], exclude: Sequence[str] = ()) -> list[ResolvedPath]:
    """Expand ``patterns`` under ``base_dir`` into a sorted, duplicate-free list of files."""
    base_dir = Path(base_dir)
    if not base_dir.is_dir():
        raise FileSetError(f"base dir {base_dir} does not exist or is not a directory")
    base_dir = base_dir.resolve()
    found: dict[Path, ResolvedPath] = {}
    for raw in patterns:
        pattern = raw.strip()
        if not pattern:
            continue
        for resolved in _expand(base_dir, pattern, exclude):
            found.setdefault(resolved.path, resolved)
            if len(found) > MAX_FILES:
                raise FileSetError(
                    f"pattern {pattern!r} brings the file count over {MAX_FILES:,}; narrow it or add excludes"
                )
    return sorted(found.values())


def _expand(base_dir: Path, pattern: str, exclude: Sequence[str]) -> Iterable[ResolvedPath]:
    posix = PurePosixPath(pattern.replace("\\", "/"))
    absolute = posix.is_absolute()
    parts = [p for p in posix.parts if p != "/"]
    first_magic = next((i for i, p in enumerate(parts) if _MAGIC.search(p)), None)
    if first_magic is None:  # a plain path: one file, or everything below a directory
        target = Path(*posix.parts) if absolute else base_dir / Path(*parts)
        target = Path(os.path.normpath(target))
        kind = _kind(target)
        if kind == "dir":
            yield from _walk(base_dir, target, "**", exclude, relative_to=target)
        elif kind == "file":
            yield ResolvedPath(display_name(target, base_dir), target)
        else:
            yield ResolvedPath(display_name(target, base_dir), target, missing=True)
        return
    root = Path("/", *parts[:first_magic]) if absolute else base_dir.joinpath(*parts[:first_magic])
    root = Path(os.path.normpath(root))
    rest = "/".join(parts[first_magic:])
    if _kind(root) == "dir":
        yield from _walk(base_dir, root, rest, exclude, relative_to=root)


def _kind(path: Path) -> str:
    """``dir``, ``file`` or ``missing``; a path the OS will not even look up (too long, no
    permission) is missing, so one bad pattern never breaks the whole file set."""
    try:
        if path.is_dir():
            return "dir"
        return "file" if path.is_file() else "missing"
    except OSError:
        return "missing"


def _walk(
    base_dir: Path, root: Path, rest: str, exclude: Sequence[str], relative_to: Path
) -> Iterable[ResolvedPath]:
    regex = glob_regex(rest)
    recursive = "**" in rest.split("/")
    max_depth = rest.count("/")
    for folder, dirs, files in os.walk(root, followlinks=False):
        rel_folder = os.path.relpath(folder, relative_to)
        depth = 0 if rel_folder == "." else rel_folder.count(os.sep) + 1
        kept_dirs = []
        for d in sorted(dirs):
            if d in _NEVER_WALK:
                continue
            full = Path(folder, d)
            if is_excluded(display_name(full, base_dir), exclude, is_dir=True):
                continue
            if not recursive and depth >= max_depth:
                continue
            kept_dirs.append(d)
        dirs[:] = kept_dirs
        # names joined as text per file, one stat each: Path objects and relative_to per file
        # were most of a worker's context build (issue #22c); the names are the same
        rel_prefix = "" if rel_folder == "." else rel_folder.replace(os.sep, "/") + "/"
        shown = display_name(Path(folder), base_dir)
        name_prefix = "" if shown == "." else shown if shown.endswith("/") else shown + "/"
        for filename in files:
            if not regex.fullmatch(rel_prefix + filename):
                continue
            name = name_prefix + filename
            if is_excluded(name, exclude):
                continue
            full = Path(folder, filename)
            if os.path.isfile(full):  # what _kind() calls a file (a broken link is not)
                yield ResolvedPath(name, full)
