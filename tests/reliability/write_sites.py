"""Every place in ``src/`` that writes a file, found by reading the code (no import), and the
table R4 keeps of them: which kill -9 writer covers each site, or why it needs none.

A *site* is ``(module, enclosing function, call)``: a call that creates or changes a file's
bytes — ``atomic_write_*``, ``write_text``/``write_bytes``, ``open``/``fdopen`` with a write
mode, ``os.open`` with a write flag, ``sqlite3.connect``, a logging ``FileHandler``, a
``shutil`` copy or move, ``touch``. A new site, or one more call at a known site, fails the suite
until the table says how it is covered.
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from pathlib import Path

__all__ = ["KNOWN_SITES", "scan_write_sites"]

_WRITE_FLAGS = frozenset({"O_WRONLY", "O_RDWR", "O_CREAT", "O_APPEND", "O_TRUNC"})
_MODULES_WITH_OPEN = frozenset({"os", "io", "codecs", "gzip", "bz2", "lzma", "tarfile", "zipfile"})
_NAMED = frozenset({"atomic_write_text", "atomic_write_bytes", "write_text", "write_bytes", "touch"})

# every call _write_call recognises contains one of these
_CANDIDATE = re.compile(r"atomic_write_|write_text|write_bytes|touch\(|open\(|connect\(|FileHandler|shutil\.")

Site = tuple[str, str, str]  # (module path under src/manual_slop, enclosing function, call)


def _mode(call: ast.Call, position: int) -> object:
    for keyword in call.keywords:
        if keyword.arg == "mode" and isinstance(keyword.value, ast.Constant):
            return keyword.value.value
    if len(call.args) > position and isinstance(call.args[position], ast.Constant):
        return call.args[position].value
    return None


def _write_call(call: ast.Call) -> str | None:
    """What kind of file write ``call`` is (None: not one)."""
    func = call.func
    name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
    owner = func.value.id if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) else ""
    if name in _NAMED:
        # a bare ``write_text(...)`` is the tools' own atomic wrapper (its body is the site)
        return None if name == "write_text" and isinstance(func, ast.Name) else name
    if name == "open" and owner == "os":
        flags = (
            {n.attr for n in ast.walk(call.args[1]) if isinstance(n, ast.Attribute)}
            if len(call.args) > 1
            else set()
        )
        return "os.open" if flags & _WRITE_FLAGS else None
    if name in ("open", "fdopen"):
        # open(path, mode), os.fdopen(fd, mode), io/gzip/tarfile.open(path, mode): the mode is
        # 2nd; path.open(mode): 1st
        method = isinstance(func, ast.Attribute) and owner not in _MODULES_WITH_OPEN
        mode = _mode(call, 0 if method else 1)
        return f"{name}({mode})" if isinstance(mode, str) and set(mode) & set("wax+") else None
    if name == "connect" and owner == "sqlite3":
        return "sqlite3.connect"
    if name.endswith("FileHandler"):
        return name
    if owner == "shutil" and name.startswith(("copy", "move")):
        return f"shutil.{name}"
    return None


def scan_write_sites(package: Path) -> Counter[Site]:
    """Every write site under ``package`` and how many calls each has."""
    sites: Counter[Site] = Counter()

    def visit(node: ast.AST, scope: list[str], module: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                visit(child, [*scope, child.name], module)
                continue
            if isinstance(child, ast.Call) and (kind := _write_call(child)):
                sites[(module, ".".join(scope) or "<module>", kind)] += 1
            visit(child, scope, module)

    for path in sorted(package.rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        if _CANDIDATE.search(source):  # parsing only these keeps the scan cheap
            visit(ast.parse(source), [], path.relative_to(package).as_posix())
    return sites


_SCRATCH = "exempt: a scratch file in a temporary folder the run deletes"
_SAME = "exempt: the primitive itself (atomic_io: temp file, fsync, os.replace)"
_NEW_FILE = "exempt: a new numbered file, never one that exists (O_EXCL or a hard link)"
_NOT_A_FILE = "exempt: Ticket.touch(), not a file"
_PLAIN_LOG = "exempt: a plain-text log appended line by line (app.log, an MCP server's stderr)"
_MARKER = "exempt: a marker a crash only makes the app redo (index manifest, .tools/ install)"
_TREE = "exempt: copies into a scratch worktree"

# site -> (calls, the R4 writer that kill-tests it, or "exempt: why")
KNOWN_SITES: dict[Site, tuple[int, str]] = {
    ("agents/profiles.py", "save_profile", "atomic_write_text"): (5, "agent profile"),
    ("agents/profiles.py", "delete_profile", "shutil.move"): (1, "exempt: a folder moved to the trash"),
    ("ai/providers/gemini_cli_home.py", "_write_json", "write_text"): (1, _SCRATCH),
    ("atomic_io.py", "atomic_write_bytes", "fdopen(wb)"): (1, _SAME),
    ("atomic_io.py", "atomic_write_text", "atomic_write_bytes"): (1, _SAME),
    ("cli.py", "_run", "touch"): (1, _PLAIN_LOG),
    ("cli.py", "_run", "FileHandler"): (1, _PLAIN_LOG),
    ("cli.py", "_announce", "atomic_write_text"): (1, "hook token"),  # the port file: same call
    ("config.py", "TomlFile.load", "shutil.copy2"): (1, "exempt: the .invalid-<ts> copy; the original stays"),
    ("config.py", "TomlFile.save", "atomic_write_bytes"): (1, "config+project+history"),
    ("context/aggregate.py", "write_md_only", "fdopen(wb)"): (1, _NEW_FILE),
    ("context/aggregate.py", "_write_exclusive", "os.open"): (1, _NEW_FILE),
    ("context/aggregate.py", "_write_exclusive", "fdopen(wb)"): (1, _NEW_FILE),
    ("governance/journal.py", "ApprovalJournal._append", "os.open"): (1, "approvals journal"),
    ("governance/run_log.py", "RunLogs.open", "os.open"): (1, "session logs"),
    ("governance/run_log.py", "RunLog._append", "os.open"): (1, "session logs"),
    ("hooks/cli.py", "_events", "os.open"): (1, "exempt: opens os.devnull"),
    ("hooks/token.py", "write_token_file", "atomic_write_text"): (1, "hook token"),
    ("mcp/client.py", "ServerConnection._errlog", "open(a)"): (1, _PLAIN_LOG),
    ("memory/index.py", "_one_process", "open(a+b)"): (1, "exempt: a lock file, never written"),
    ("memory/index.py", "ProjectIndex._write_manifest", "atomic_write_text"): (1, _MARKER),
    ("memory/store.py", "EventStore._open", "sqlite3.connect"): (1, "event store"),
    ("mma/conductor.py", "ConductorEngine._changed", "touch"): (1, _NOT_A_FILE),
    ("mma/conductor.py", "ConductorEngine._set_status", "touch"): (1, _NOT_A_FILE),
    ("mma/runtime.py", "MMARuntime._edit_ticket", "touch"): (1, _NOT_A_FILE),
    ("mma/merge.py", "merge_into", "atomic_write_bytes"): (1, "tool file write"),  # project files: same call
    ("mma/merge.py", "_merge_file", "write_bytes"): (1, _SCRATCH),
    ("mma/persistence.py", "TrackStore.save", "atomic_write_text"): (1, "mma track"),
    ("mma/snapshot.py", "Snapshot.unpack", "write_bytes"): (1, _SCRATCH),
    ("mma/tier4.py", "apply_patch", "atomic_write_text"): (1, "tool file write"),  # project files: same call
    ("mma/worktree.py", "ScratchTree._copy", "shutil.copy2"): (1, _TREE),
    ("mma/worktree.py", "ScratchTree._diff_now", "shutil.copy2"): (1, _TREE),
    ("plan/aider.py", "AiderEngine._aider", "write_text"): (1, _SCRATCH),
    ("plan/aider.py", "AiderEngine._aider", "open(wb)"): (1, _SCRATCH),
    ("plan/aider.py", "AiderEngine._arguments", "write_text"): (2, _SCRATCH),
    ("plan/aider_install.py", "install_aider", "atomic_write_text"): (1, _MARKER),
    ("plan/store.py", "PlanStore.save", "atomic_write_text"): (1, "plan"),
    ("plan/store.py", "PlanStore.write_result", "atomic_write_text"): (1, "plan"),
    ("session_log.py", "SessionLog.__init__", "touch"): (1, "session logs"),
    ("session_log.py", "SessionLog.append", "os.open"): (1, "session logs"),
    ("session_log.py", "SessionLog.save_script", "atomic_write_text"): (1, _NEW_FILE),
    ("session_log.py", "SessionLog._write_meta", "atomic_write_text"): (1, "session logs"),
    ("sessions/registry.py", "LogRegistry.save", "atomic_write_bytes"): (1, "log registry"),
    ("tools/textio.py", "write_text", "atomic_write_bytes"): (1, "tool file write"),
}
