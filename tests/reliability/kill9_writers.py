"""R4's writers: each one saves one of the app's files through the app's own code, in a loop.

A :class:`Writer` knows how to start like the app does (``setup``: load what is there, as at a
restart), how to make one save (``step``), and how to tell a whole file from a torn one
(``check``). :func:`zygote` is the process that forks the writers the suite kills: it imports
the app once, so a kill cycle costs a fork, not an interpreter start.

A file is *whole* when it parses, its shape (every key path of a TOML/JSON document, the line
count of a text file) is the shape a complete save has, and the app's own loader reads it
without moving anything aside. Append-only JSONL files (the session logs, run logs and the
approval journal, documented as such) may end in one torn line; every other line must parse.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import sys
import time
import tomllib
from pathlib import Path
from typing import Any

from manual_slop.agents.profiles import AgentProfile, load_profile, save_profile
from manual_slop.config import GLOBAL_SCHEMA, HISTORY_SCHEMA, PROJECT_SCHEMA, TomlFile
from manual_slop.dialogs import ConfirmDialog, Decision
from manual_slop.documents import Documents
from manual_slop.governance.journal import ApprovalJournal, read_journal
from manual_slop.governance.run_log import RecordType, RunLogs
from manual_slop.hooks.token import read_token_file, write_token_file
from manual_slop.memory.store import EventStore
from manual_slop.mma.models import Track
from manual_slop.mma.persistence import TrackStore
from manual_slop.plan.model import Plan, Subtask
from manual_slop.plan.store import PlanStore
from manual_slop.session_log import SessionLog
from manual_slop.sessions.registry import LogRegistry
from manual_slop.tools.textio import write_text

# The C-level calls a save makes on its files: a profile-mode kill lands just before one of them.
IO_CALLS = frozenset(
    {"open", "write", "fsync", "replace", "rename", "close", "flush", "fdopen", "truncate", "ftruncate",
     "execute", "executescript", "chmod", "unlink", "link", "mkdir"}
)  # fmt: skip
TORN = "torn"  # what a failed check says first, so the report reads "torn: <file>: <why>"


class Torn(AssertionError):
    """A file the kill left torn, half-written, unreadable or moved aside."""

    def __init__(self, path: Path, why: str) -> None:
        super().__init__(f"{TORN}: {path}: {why}")


def blob(i: int, size: int) -> str:
    """One line of ``size`` characters that differs with ``i`` (no newline: line counts stay fixed)."""
    seed = hashlib.sha256(str(i).encode()).hexdigest()
    return (seed * (size // len(seed) + 1))[:size]


def tagged(i: int, size: int) -> str:
    """``<i>:<sha of the body>:<body>``: :func:`check_tag` tells a whole value from a cut one."""
    body = blob(i, size)
    return f"{i}:{hashlib.sha256(body.encode()).hexdigest()}:{body}"


def check_tag(path: Path, value: object) -> None:
    if not isinstance(value, str) or value.count(":") < 2:
        raise Torn(path, f"tagged value missing or cut ({str(value)[:40]!r})")
    _, sha, body = value.split(":", 2)
    if hashlib.sha256(body.encode()).hexdigest() != sha:
        raise Torn(path, "tagged value does not match its checksum")


def shape(value: Any, prefix: str = "") -> list[str]:
    """Every key path of a parsed document (lists by length), sorted."""
    if isinstance(value, dict):
        return sorted(p for key, item in value.items() for p in shape(item, f"{prefix}.{key}"))
    if isinstance(value, list):
        return [f"{prefix}[{len(value)}]"] + [p for item in value for p in shape(item, f"{prefix}[]")]
    return [prefix]


def parse(path: Path) -> Any:
    """The document in ``path`` (TOML, JSON, or the lines of a text file); Torn if it cannot be read."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise Torn(path, f"cannot be read ({exc})") from None
    if not data:
        raise Torn(path, "zero-length file")
    try:
        text = data.decode("utf-8")
        if path.suffix == ".toml":
            return tomllib.loads(text)
        if path.suffix == ".json":
            return json.loads(text)
    except (UnicodeDecodeError, ValueError) as exc:
        raise Torn(path, f"does not parse ({exc})") from None
    if not text.endswith("\n"):
        raise Torn(path, "text file cut before its last newline")
    return text.splitlines()


def fingerprint(path: Path) -> list[str] | int:
    doc = parse(path)
    return len(doc) if isinstance(doc, list) and path.suffix not in (".json",) else shape(doc)


def check_jsonl(path: Path) -> int:
    """Every complete line of an append-only JSONL file parses; the last may be torn. Lines read."""
    data = path.read_bytes()
    lines = data.split(b"\n")
    lines.pop()  # b"" after a complete last line; a torn one is allowed (append-only, documented)
    for number, raw in enumerate(lines, 1):
        try:
            record = json.loads(raw)
        except ValueError as exc:
            raise Torn(path, f"line {number} of {len(lines)} does not parse ({exc})") from None
        if not isinstance(record, dict):
            raise Torn(path, f"line {number} is not an object")
    return len(lines)


class Writer:
    """One kind of file the app writes. ``whole`` names the files saved whole (relative to root)."""

    name = ""
    whole: tuple[str, ...] = ()
    append_only: tuple[str, ...] = ()  # globs of JSONL files that may end in a torn line
    corrupt_targets: tuple[str, ...] = ()  # files the corrupt-at-start test trashes, one at a time
    saves_on_start = True  # the app saves this file again on its own (else only on a user's action)

    def __init__(self, root: Path, cycle: int = 0) -> None:
        self.root = root
        self.cycle = cycle
        self._seen: set[str] = set()  # whole files seen complete: they may never vanish again
        # append-only files already checked: each run appends to its own, so these are final
        self.checked: set[Path] = set()

    def setup(self) -> None:
        """Start as the app does after a crash: load what is there."""

    def step(self, i: int) -> None:
        raise NotImplementedError

    def load(self) -> str:
        """The app's loader on the files as they are; what it reported ('' = nothing)."""
        return ""

    def close(self) -> None:
        """Release what ``setup`` opened (the reference run in the test process)."""

    def check(self, reference: dict[str, Any]) -> None:
        """Raise Torn unless every file is whole (``reference``: fingerprints of a complete save)."""
        for relative in self.whole:
            path = self.root / relative
            if not path.exists():
                if relative in self.seen():
                    raise Torn(path, "gone after it had been written")
                continue
            got = fingerprint(path)
            if got != reference[relative]:
                why = _diff(got, reference[relative])
                raise Torn(path, f"half a file: its shape differs from a complete save ({why})")
        for path in self.appended():
            check_jsonl(path)
        report = self.load()
        if report:
            raise Torn(self.root, f"the app's loader reported: {report}")
        for path in self.root.rglob("*"):  # (a killed atomic write's .tmp file is allowed: swept at load)
            if ".corrupt-" in path.name or ".invalid-" in path.name:
                raise Torn(path, "the app moved a file aside")
        self._seen.update(r for r in self.whole if (self.root / r).exists())
        self.checked.update(self.appended())

    def appended(self) -> list[Path]:
        """The append-only files not checked yet (the long run makes 500 sessions)."""
        found = {path for pattern in self.append_only for path in self.root.glob(pattern)}
        return sorted(found - self.checked)

    def seen(self) -> set[str]:
        return self._seen

    def __init_subclass__(cls) -> None:
        super().__init_subclass__()
        if cls.name:
            WRITERS[cls.name] = cls


WRITERS: dict[str, type[Writer]] = {}


def _diff(got: object, want: object) -> str:
    if isinstance(got, int) or isinstance(want, int):
        return f"{got} lines, a whole save has {want}"
    missing = sorted(set(want) - set(got))  # type: ignore[arg-type]
    return f"missing {missing[:3]}" if missing else "different keys"


class DocumentsWriter(Writer):
    """config.toml, the project file and its history: the dual flush (``Documents.flush``)."""

    name = "config+project+history"
    whole = ("config.toml", "proj.toml", "proj_history.toml")
    corrupt_targets = whole

    def setup(self) -> None:
        self.docs = Documents(self.root / "config.toml", self.root / "proj.toml", self.root / "logs")
        self.state = self.docs.state()

    def step(self, i: int) -> None:
        self.state.system_prompt = tagged(i, 8_000)
        self.state.current_model = f"model-{i}"
        self.state.discussions = {
            "main": {"history": [{"role": "User", "content": tagged(i + k, 6_000)} for k in range(3)]}
        }
        self.docs.flush(self.state)

    def load(self) -> str:
        problems = []
        for relative, schema in zip(self.whole, (GLOBAL_SCHEMA, PROJECT_SCHEMA, HISTORY_SCHEMA), strict=True):
            result = TomlFile(self.root / relative, schema).load()
            problems += [p.message for p in result.problems if p.severity == "error"]
        project = self.root / "proj.toml"
        if project.exists():
            check_tag(project, parse(project).get("project", {}).get("system_prompt"))
        history = self.root / "proj_history.toml"
        if history.exists():
            for entry in parse(history)["discussions"]["main"]["history"]:
                check_tag(history, entry.get("content"))
        return "; ".join(problems)


class TrackWriter(Writer):
    """An MMA track's five files (``TrackStore.save``), tickets changing status."""

    name = "mma track"
    whole = tuple(
        f"conductor/tracks/kill9/{n}"
        for n in ("spec.md", "plan.md", "plan.mmd", "metadata.json", "state.toml")
    )
    corrupt_targets = whole[3:]

    def setup(self) -> None:
        self.store = TrackStore(self.root)

    def step(self, i: int) -> None:
        statuses = ("todo", "in_progress", "completed", "blocked")
        tickets = [
            {"id": f"t{k}", "description": f"ticket {k} {blob(i + k, 1500)}", "depends_on": [],
             "status": statuses[(i + k) % 4], "result": tagged(i + k, 3000)}
            for k in range(8)
        ]  # fmt: skip
        self.store.save(Track.from_dict({"id": "kill9", "title": f"Kill {i}", "tickets": tickets}))

    def load(self) -> str:
        _, problems = TrackStore(self.root).load_all()
        return "; ".join(problems)


class PlanWriter(Writer):
    """A DPPM plan file and a subtask's result (``PlanStore.save`` / ``write_result``)."""

    name = "plan"
    PLAN_ID = "20261127-061000_kill9"
    whole = (f"conductor/plans/{PLAN_ID}.json", f"conductor/plans/{PLAN_ID}/S1.md")
    corrupt_targets = whole[:1]

    def setup(self) -> None:
        self.store = PlanStore(self.root)

    def step(self, i: int) -> None:
        subtasks = [
            Subtask(
                f"S{k}", f"title {k}", blob(i + k, 2000), "architect", "llm", 1, [], notes=tagged(i, 2000)
            )
            for k in range(1, 6)
        ]
        self.store.save(Plan(self.PLAN_ID, f"goal {i}", subtasks, "combine", metadata={"round": i}))
        self.store.write_result(self.PLAN_ID, "S1", tagged(i, 12_000))

    def load(self) -> str:
        plans, problems = PlanStore(self.root).load_all()
        for plan in plans:
            for subtask in plan.subtasks:
                check_tag(self.root / self.whole[0], subtask.notes)
        result = self.root / self.whole[1]
        if result.exists():
            check_tag(result, parse(result)[0])
        return "; ".join(problems)


class EventStoreWriter(Writer):
    """The memory store (SQLite, WAL): one event a transaction (``EventStore.append``)."""

    name = "event store"
    corrupt_targets = (".slop_cache/proj_memory.sqlite3",)

    def setup(self) -> None:
        self.store = EventStore(self.root / self.corrupt_targets[0])
        self.store.ensure_conversation("kill9", "chat")

    def step(self, i: int) -> None:
        self.store.append("kill9", "user", tagged(i, 6_000), data={"i": i})

    def close(self) -> None:
        self.store.close()

    def load(self) -> str:
        path = self.root / self.corrupt_targets[0]
        if not path.exists():
            return ""
        store = EventStore(path)  # a file SQLite cannot open is moved aside here
        try:
            if store.recovered_from is not None:
                return f"moved aside to {store.recovered_from.name}"
            verdict = store.execute("PRAGMA integrity_check").fetchone()[0]
            if verdict != "ok":
                return f"integrity_check: {verdict}"
            for event in store.events("kill9"):
                check_tag(path, event.content)
        finally:
            store.close()
        return ""


class JournalWriter(Writer):
    """The approval journal: pending and decided lines, appended and fsync'd (a new file per
    session, as the app starts one per run)."""

    name = "approvals journal"
    append_only = ("sessions/*/approvals.jsonl",)
    corrupt_targets = ("sessions/s0/approvals.jsonl",)

    def setup(self) -> None:
        self.journal = ApprovalJournal(self.root / "sessions" / f"s{self.cycle}" / "approvals.jsonl")
        self.journal.path.parent.mkdir(parents=True, exist_ok=True)

    def step(self, i: int) -> None:
        dialog = ConfirmDialog(f"echo {tagged(i, 1500)}", "/tmp")
        self.journal.record_pending(dialog)
        self.journal.record_decided(dialog, Decision(True, dialog.payload, "user", time.time()))

    def load(self) -> str:
        problems = []
        for path in self.appended():
            read = read_journal(path)
            problems += [w for w in read.warnings if "incomplete last line" not in w]
            if read.moved_to is not None:
                problems.append(f"moved aside to {read.moved_to.name}")
        return "; ".join(problems)


class RegistryWriter(Writer):
    """``logs/log_registry.toml``: labels changing, the whole registry saved (``LogRegistry.save``)."""

    name = "log registry"
    whole = ("logs/log_registry.toml",)
    corrupt_targets = whole
    SESSIONS = tuple(f"20261127_06{k:02d}00" for k in range(20))

    def setup(self) -> None:
        for sid in self.SESSIONS:
            folder = self.root / "logs" / "sessions" / sid
            if not folder.is_dir():
                folder.mkdir(parents=True)
                (folder / "session.json").write_text(json.dumps({"started": 1.0, "ended": 2.0}))
        self.registry = LogRegistry(self.root / "logs")
        self.registry.load()
        self.registry.sync()

    def step(self, i: int) -> None:
        for k, sid in enumerate(self.SESSIONS):
            self.registry.update(sid, label=blob(i + k, 150), starred=bool((i + k) % 2))
        self.registry.save()

    def load(self) -> str:
        registry = LogRegistry(self.root / "logs")
        registry.load()
        if (
            not registry.problem
            and self.registry_file().exists()
            and len(registry.records()) != len(self.SESSIONS)
        ):
            return f"{len(registry.records())} records of {len(self.SESSIONS)}"
        return registry.problem

    def registry_file(self) -> Path:
        return self.root / self.whole[0]


class SessionLogWriter(Writer):
    """A session folder: the JSONL logs, ``session.json`` (markers) and a run log."""

    name = "session logs"
    append_only = ("logs/sessions/*/*.log", "logs/sessions/*/runs/*.jsonl")

    def setup(self) -> None:
        self.session = SessionLog(self.root / "logs")
        self.run = RunLogs.for_session(self.session).open("chat", "kill9")  # type: ignore[arg-type]

    def step(self, i: int) -> None:
        self.session.append_comms({"kind": "request", "text": tagged(i, 3000)})
        self.session.append_audit({"event": "decision", "id": str(i), "payload": blob(i, 2000)})
        self.run.write(RecordType.NOTE, text=tagged(i, 3000))
        self.session.mark("kill9")

    def load(self) -> str:
        for meta in sorted({p.parent / "session.json" for p in self.appended() if p.suffix == ".log"}):
            if not meta.exists():
                continue  # killed between claiming the folder and its first session.json
            record = parse(meta)
            if not isinstance(record, dict) or "session_id" not in record or "markers" not in record:
                raise Torn(meta, "session.json lacks its keys")
        return ""


class TokenWriter(Writer):
    """The Hook API token file (``write_token_file``, mode 0600)."""

    name = "hook token"
    whole = ("hook-token",)

    def step(self, i: int) -> None:
        write_token_file(self.root / "hook-token", hashlib.sha256(str(i).encode()).hexdigest() * 2)

    def load(self) -> str:
        path = self.root / self.whole[0]
        token = read_token_file(path) if path.exists() else "0" * 128
        return "" if token is not None and len(token) == 128 else f"token {token!r}"


class ProfileWriter(Writer):
    """An agent profile's files (``save_profile``)."""

    name = "agent profile"
    whole = tuple(f"agents/kill9/{n}" for n in ("system_prompt.md", "description.txt", "agent.toml"))
    corrupt_targets = whole[2:]
    saves_on_start = False  # written when the user saves the profile, never on its own

    def step(self, i: int) -> None:
        profile = AgentProfile("kill9", tagged(i, 8_000) + "\n", description=blob(i, 500), model=f"m{i}")
        save_profile(self.root, profile)

    def load(self) -> str:
        folder = self.root / "agents" / "kill9"
        if not (folder / "system_prompt.md").exists():
            return ""
        try:
            profile = load_profile(folder)
        except ValueError as exc:
            return str(exc)
        check_tag(folder / "system_prompt.md", profile.system_prompt.strip())
        return ""


class ToolWriteWriter(Writer):
    """A project file written by the model's ``write_file``/edit tools (``textio.write_text``)."""

    name = "tool file write"
    whole = ("src/module.txt",)

    def step(self, i: int) -> None:
        write_text(self.root / "src" / "module.txt", (tagged(i, 16_000) + "\n").encode())

    def load(self) -> str:
        path = self.root / self.whole[0]
        if path.exists():
            check_tag(path, parse(path)[0])
        return ""


class NonAtomicPlanStandIn(PlanWriter):
    """The planted defect, built in: the plan file written like the plan store writes it, but
    with ``open(..., "w")`` + ``write`` in place of ``atomic_write_text``. R4 must call it torn."""

    name = ""  # not one of the app's writers

    def step(self, i: int) -> None:
        subtasks = [
            Subtask(
                f"S{k}", f"title {k}", blob(i + k, 2000), "architect", "llm", 1, [], notes=tagged(i, 2000)
            )
            for k in range(1, 6)
        ]
        plan = Plan(self.PLAN_ID, f"goal {i}", subtasks, "combine", metadata={"round": i})
        path = self.root / self.whole[0]
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "w", encoding="utf-8") as handle:  # the defect: truncates, then writes
            handle.write(json.dumps(plan.to_dict(), indent=2) + "\n")
        self.store.write_result(self.PLAN_ID, "S1", tagged(i, 12_000))


STAND_INS: dict[str, type[Writer]] = {"non-atomic plan (planted)": NonAtomicPlanStandIn}


# -- the zygote --------------------------------------------------------------------------------
def _arm(kill_at: int) -> list[str]:
    """From now on, name every C-level file call in the returned list, and SIGKILL this process
    just before the ``kill_at``-th (0: never)."""
    calls: list[str] = []

    def profile(frame: Any, event: str, arg: Any) -> None:
        if event == "c_call" and (name := getattr(arg, "__name__", "")) in IO_CALLS:
            calls.append(name)
            if len(calls) == kill_at:
                os.kill(os.getpid(), signal.SIGKILL)

    sys.setprofile(profile)
    return calls


def _child(request: dict[str, Any]) -> None:
    kind = request["kind"]
    writer = (WRITERS.get(kind) or STAND_INS[kind])(Path(request["root"]), request["cycle"])
    writer.setup()
    base = request["cycle"] * 10_000
    if request["mode"] == "timer":  # save until killed
        i = base
        while True:
            writer.step(i)
            i += 1
    for i in range(base, base + request["warm"]):
        writer.step(i)
    calls = _arm(request.get("kill_at", 0))
    writer.step(base + request["warm"])
    sys.setprofile(None)
    _say({"calls": calls, "cpu": time.process_time()})
    os._exit(3 if request["mode"] == "point" else 0)  # a point past the last call: the save ended


def _say(message: dict[str, Any]) -> None:
    """One JSON line in one write: the zygote and its writer share the pipe, and a line written
    in pieces (print's text, then its newline) could interleave with the other's."""
    os.write(1, (json.dumps(message) + "\n").encode())


def zygote() -> None:
    """Read one JSON request a line; fork a writer for it; report its pid, then how it ended."""
    for line in sys.stdin:
        request = json.loads(line)
        sys.stdout.flush()
        pid = os.fork()
        if pid == 0:
            try:
                _child(request)
            finally:
                os._exit(4)
        _say({"pid": pid})
        _, status = os.waitpid(pid, 0)
        killed = os.WTERMSIG(status) if os.WIFSIGNALED(status) else 0
        code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else None
        _say({"signal": killed, "code": code})


def reference(kind: str, scratch: Path) -> dict[str, Any]:
    """Fingerprints of every whole file after complete saves, made in this process."""
    writer = (WRITERS.get(kind) or STAND_INS[kind])(scratch)
    writer.setup()
    try:
        writer.step(0)
        writer.step(1)
    finally:
        writer.close()
    return {relative: fingerprint(scratch / relative) for relative in writer.whole}


if __name__ == "__main__":
    zygote()
