"""Discussions: named lists of entries, takes (branches) and their history-file format.

The history file (``<project>_history.toml``) holds ``active`` and a table per
discussion::

    [discussions.main]
    git_commit = "3f2c…"              # "Update Commit": HEAD of the project's git dir
    git_commit_ts = "2026-11-22T10:00:00"

    [[discussions.main.history]]
    role = "User"                     # one of the project's discussion roles
    content = "…"
    ts = "2026-11-22T09:58:12"
    collapsed = false

    [discussions.main_take_1]         # a take: a branch of "main" at entry 3
    take_of = "main"
    take_at = 3

Every function here works on the ``discussions`` mapping (name → table) and
validates its arguments before it changes anything, so a refused operation leaves
the data as it was. Entries are **copy-on-write**: an edit replaces the entry dict
instead of mutating it, which lets the undo history share unchanged entries.
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping
from typing import Any

from manual_slop.context.errors import DiscussionExists, EntryIndexError, UnknownDiscussion

__all__ = [
    "DEFAULT_DISCUSSION",
    "ENTRY_KEYS",
    "add_entry",
    "branch_take",
    "create",
    "delete",
    "delete_entry",
    "edit_entry",
    "entries",
    "format_history",
    "insert_entry",
    "make_entry",
    "move_entry",
    "next_take_name",
    "normalize",
    "promote_take",
    "rename",
    "rename_plan",
    "replace_prefix",
    "root_of",
    "set_all_collapsed",
    "set_collapsed",
    "set_role",
    "stamp_commit",
    "takes_of",
    "timestamp",
    "validate_name",
]

DEFAULT_DISCUSSION = "main"
ENTRY_KEYS = ("role", "content", "ts", "collapsed")
TAKE_INFIX = "_take_"
MAX_NAME_CHARS = 100
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_LEGACY_ROLE = re.compile(
    r"^(?:@(?P<ts>\S+)\s*\n)?(?P<role>[A-Za-z][\w ]{0,30}):\s?(?P<content>.*)$", re.DOTALL
)


def timestamp() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S")


def make_entry(role: str, content: str, ts: str | None = None, collapsed: bool = False) -> dict[str, Any]:
    return {"role": role, "content": content, "ts": timestamp() if ts is None else ts, "collapsed": collapsed}


def validate_name(name: object) -> str:
    """A discussion name: 1-100 characters, no control characters, no surrounding spaces."""
    if not isinstance(name, str) or not name.strip():
        raise UnknownDiscussion(f"a discussion name must be a non-empty string, got {name!r}")
    clean = name.strip()
    if len(clean) > MAX_NAME_CHARS or _CONTROL.search(clean):
        raise UnknownDiscussion(
            f"discussion name {clean[:40]!r}… must be 1-{MAX_NAME_CHARS} printable characters"
        )
    return clean


# ======================================================================================
# loading
# ======================================================================================
def normalize(discussions: dict[str, Any]) -> list[str]:
    """Bring older or hand-edited tables to the current shape, in place; returns what was repaired.

    Nothing is dropped: an entry that is a plain string (``"User: hi"`` or
    ``"@<ts>\\nUser: hi"``) becomes a table, a value of the wrong type is converted
    to text, and unknown keys are kept.
    """
    problems: list[str] = []
    for name, table in list(discussions.items()):
        if not isinstance(table, dict):
            discussions[name] = table = {"history": [_entry_from(table)]}
            problems.append(f"discussion {name!r} was not a table; its content became one entry")
        history = table.get("history")
        if history is None:
            table["history"] = []
        elif not isinstance(history, list):
            table["history"] = [_entry_from(history)]
            problems.append(f"discussion {name!r}: history was not a list; kept as one entry")
        else:
            fixed = [_entry_from(raw) for raw in history]
            if any(a is not b for a, b in zip(fixed, history, strict=True)):
                problems.append(
                    f"discussion {name!r}: {sum(a is not b for a, b in zip(fixed, history, strict=True))} "
                    "entries were converted to {role, content, ts, collapsed}"
                )
            table["history"] = fixed
        for key in ("git_commit", "git_commit_ts", "take_of"):
            if key in table and not isinstance(table[key], str):
                problems.append(f"discussion {name!r}: {key} was not a string; removed")
                del table[key]
        if "take_at" in table and (
            not isinstance(table["take_at"], int) or isinstance(table["take_at"], bool)
        ):
            problems.append(f"discussion {name!r}: take_at was not an integer; removed")
            del table["take_at"]
        if isinstance(table.get("take_of"), str) and table["take_of"] not in discussions:
            table.pop("take_of")
            table.pop("take_at", None)
    return problems


def _entry_from(raw: object) -> dict[str, Any]:
    if isinstance(raw, dict):
        ok = (
            isinstance(raw.get("role"), str)
            and isinstance(raw.get("content"), str)
            and isinstance(raw.get("ts"), str)
            and isinstance(raw.get("collapsed"), bool)
        )
        if ok:
            return raw
        fixed = dict(raw)
        fixed["role"] = str(raw.get("role") or "User")
        content = raw.get("content", "")
        fixed["content"] = content if isinstance(content, str) else str(content)
        fixed["ts"] = str(raw.get("ts") or "")
        fixed["collapsed"] = bool(raw.get("collapsed", False))
        return fixed
    text = raw if isinstance(raw, str) else str(raw)
    match = _LEGACY_ROLE.match(text)
    if match:
        return make_entry(match["role"].strip(), match["content"], match["ts"] or "")
    return make_entry("User", text, "")


# ======================================================================================
# entries
# ======================================================================================
def _table(discussions: Mapping[str, Any], name: str) -> dict[str, Any]:
    table = discussions.get(name)
    if not isinstance(table, dict):
        known = ", ".join(sorted(discussions)) or "none"
        raise UnknownDiscussion(f"no discussion named {name!r}; discussions: {known}")
    return table


def entries(discussions: Mapping[str, Any], name: str) -> list[dict[str, Any]]:
    """The entry list of ``name`` (raises UnknownDiscussion)."""
    table = _table(discussions, name)
    history = table.get("history")
    if not isinstance(history, list):
        history = table["history"] = []
    return history


def _check_index(history: list[Any], index: int, name: str, allow_end: bool = False) -> None:
    limit = len(history) + (1 if allow_end else 0)
    if not 0 <= index < limit:
        if not history and not allow_end:
            raise EntryIndexError(f"discussion {name!r} has no entries")
        top = len(history) if allow_end else len(history) - 1
        raise EntryIndexError(f"entry index {index} is outside discussion {name!r} (0-{top})")


def add_entry(discussions: dict[str, Any], name: str, entry: dict[str, Any]) -> int:
    history = entries(discussions, name)
    history.append(entry)
    return len(history) - 1


def insert_entry(discussions: dict[str, Any], name: str, index: int, entry: dict[str, Any]) -> None:
    """Insert before ``index`` (``index == len`` appends)."""
    history = entries(discussions, name)
    _check_index(history, index, name, allow_end=True)
    history.insert(index, entry)


def edit_entry(discussions: dict[str, Any], name: str, index: int, content: str) -> None:
    history = entries(discussions, name)
    _check_index(history, index, name)
    history[index] = {**history[index], "content": content}


def set_role(discussions: dict[str, Any], name: str, index: int, role: str) -> None:
    history = entries(discussions, name)
    _check_index(history, index, name)
    history[index] = {**history[index], "role": role}


def delete_entry(discussions: dict[str, Any], name: str, index: int) -> dict[str, Any]:
    history = entries(discussions, name)
    _check_index(history, index, name)
    return history.pop(index)


def move_entry(discussions: dict[str, Any], name: str, index: int, to: int) -> None:
    """Move the entry at ``index`` so that it ends up at position ``to``."""
    history = entries(discussions, name)
    _check_index(history, index, name)
    _check_index(history, to, name)
    history.insert(to, history.pop(index))


def set_collapsed(discussions: dict[str, Any], name: str, index: int, collapsed: bool | None = None) -> bool:
    """Collapse or expand one entry (``None`` toggles); returns the new state."""
    history = entries(discussions, name)
    _check_index(history, index, name)
    value = (not history[index].get("collapsed", False)) if collapsed is None else collapsed
    if history[index].get("collapsed") != value:
        history[index] = {**history[index], "collapsed": value}
    return value


def set_all_collapsed(discussions: dict[str, Any], name: str, collapsed: bool) -> None:
    history = entries(discussions, name)
    for index, entry in enumerate(history):
        if entry.get("collapsed") != collapsed:
            history[index] = {**entry, "collapsed": collapsed}


def replace_prefix(
    discussions: dict[str, Any], name: str, count: int, entry: dict[str, Any]
) -> list[dict[str, Any]]:
    """Replace the first ``count`` entries by ``entry`` (compression); returns the replaced ones."""
    history = entries(discussions, name)
    if not 0 < count <= len(history):
        raise EntryIndexError(
            f"cannot replace {count} entries of discussion {name!r} ({len(history)} entries)"
        )
    removed = history[:count]
    history[:count] = [entry]
    return removed


def stamp_commit(discussions: dict[str, Any], name: str, commit: str, ts: str | None = None) -> None:
    table = _table(discussions, name)
    table["git_commit"] = commit
    table["git_commit_ts"] = ts or timestamp()


def format_history(history: list[dict[str, Any]]) -> str:
    """Entries as text for a provider: ``Role: content`` separated by blank lines."""
    return "\n\n".join(f"{e.get('role', '?')}: {e.get('content', '')}" for e in history)


# ======================================================================================
# discussions and takes
# ======================================================================================
def create(discussions: dict[str, Any], name: str) -> str:
    clean = validate_name(name)
    if clean in discussions:
        raise DiscussionExists(f"a discussion named {clean!r} already exists")
    discussions[clean] = {"history": []}
    return clean


def root_of(discussions: Mapping[str, Any], name: str) -> str:
    """The main line a take belongs to (``name`` itself when it is not a take)."""
    parent = _table(discussions, name).get("take_of")
    return parent if isinstance(parent, str) and parent in discussions else name


def takes_of(discussions: Mapping[str, Any], name: str) -> list[str]:
    """Takes of ``name``'s main line, in creation order (by take number, then name)."""
    root = root_of(discussions, name)
    found = [n for n, t in discussions.items() if isinstance(t, dict) and t.get("take_of") == root]
    return sorted(found, key=lambda n: (_take_number(root, n), n))


def _take_number(root: str, name: str) -> int:
    prefix = root + TAKE_INFIX
    suffix = name[len(prefix) :] if name.startswith(prefix) else ""
    return int(suffix) if suffix.isdigit() else 1_000_000


def next_take_name(discussions: Mapping[str, Any], name: str) -> str:
    """The name the next take of ``name``'s main line gets: ``<root>_take_<n>``."""
    root = root_of(discussions, name)
    used = [_take_number(root, n) for n in discussions if n.startswith(root + TAKE_INFIX)]
    number = max([n for n in used if n < 1_000_000], default=0) + 1
    take = f"{root}{TAKE_INFIX}{number}"
    while take in discussions:
        number += 1
        take = f"{root}{TAKE_INFIX}{number}"
    return validate_name(take)


def branch_take(discussions: dict[str, Any], name: str, index: int) -> str:
    """Copy entries ``0..index`` of ``name`` into a new take ``<root>_take_<n>``; returns its name."""
    history = entries(discussions, name)
    _check_index(history, index, name)
    take = next_take_name(discussions, name)
    root = root_of(discussions, name)
    discussions[take] = {
        "history": [dict(e) for e in history[: index + 1]],
        "take_of": root,
        "take_at": index,
    }
    return take


_LINE_KEYS = ("history", "git_commit", "git_commit_ts")


def promote_take(discussions: dict[str, Any], take: str) -> str:
    """Make ``take`` the main line: its entries (and commit stamp) trade places with the main
    line's, so the take keeps the former main line and nothing is lost. Returns the main line."""
    table = _table(discussions, take)
    root = table.get("take_of")
    if not isinstance(root, str) or root not in discussions:
        raise UnknownDiscussion(f"{take!r} is not a take of another discussion")
    main = _table(discussions, root)
    for key in _LINE_KEYS:
        a, b = main.pop(key, None), table.pop(key, None)
        if b is not None:
            main[key] = b
        if a is not None:
            table[key] = a
    main.setdefault("history", [])
    table.setdefault("history", [])
    return root


def rename_plan(discussions: Mapping[str, Any], old: str, new: str) -> dict[str, str]:
    """Every rename that renaming ``old`` to ``new`` does (its takes follow); validates, changes nothing."""
    table = _table(discussions, old)
    clean = validate_name(new)
    if clean == old:
        return {}
    if clean in discussions:
        raise DiscussionExists(f"a discussion named {clean!r} already exists")
    renames = {old: clean}
    if not isinstance(table.get("take_of"), str):
        for take in takes_of(discussions, old):
            if take.startswith(old + TAKE_INFIX):
                renames[take] = clean + take[len(old) :]
    clash = [n for n in renames.values() if n in discussions and n not in renames]
    if clash:
        raise DiscussionExists(f"renaming {old!r} would overwrite {', '.join(sorted(clash))}")
    for name in renames.values():
        validate_name(name)
    return renames


def rename(discussions: dict[str, Any], old: str, new: str) -> dict[str, str]:
    """Rename a discussion; a main line's takes follow (``<old>_take_n`` → ``<new>_take_n``).

    Returns every rename done (old name → new name).
    """
    renames = rename_plan(discussions, old, new)
    moved = {renames[n]: discussions.pop(n) for n in list(renames)}
    discussions.update(moved)
    for t in discussions.values():
        if isinstance(t, dict) and t.get("take_of") in renames:
            t["take_of"] = renames[t["take_of"]]
    return renames


def delete(discussions: dict[str, Any], name: str) -> list[str]:
    """Delete a discussion; a main line's takes stay as independent discussions (returned)."""
    _table(discussions, name)
    detached = [] if isinstance(discussions[name].get("take_of"), str) else takes_of(discussions, name)
    del discussions[name]
    for take in detached:
        discussions[take].pop("take_of", None)
        discussions[take].pop("take_at", None)
    return detached
