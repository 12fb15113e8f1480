"""R1 clutch under fuzz (issue #22): random tool calls through the real tool loop, ``manual`` policy.

A scripted provider answers each request with a round of generated calls -- valid, invalid
arguments, mutating, read-only, unknown tools, 1 MB strings, deeply nested junk -- and the real
:class:`~manual_slop.ai.tool_loop.ToolLoop` runs them through the real registry, bridge and
Execution Clutch of a headless controller. The main thread plays the human: it approves,
rejects or edits each dialog at random.

The checker (:func:`violations`) trusts none of the components' own bookkeeping for the verdict:
it knows which tools mutate from its own list (:data:`MUTATING`), sees which handlers actually
ran (each handler is wrapped to record its arguments, then runs unchanged), and compares the
project folder before and after. Every mutating handler run must match an approving decision in
``audit.log`` (same tool, same final arguments; each decision used once), every changed file must
be the target of such a run, and every tool call id must get exactly one result. The seed is in
the summary line; ``SLOP_R1_SEED`` replays a run.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import json
import os
import random
import re
import threading
import time
from collections import Counter, deque
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest

from manual_slop.ai.errors import ErrorKind, ProviderError
from manual_slop.ai.messages import ModelReply, ModelRequest, Role, StreamSink, ToolChoice
from manual_slop.ai.providers.base import Provider, ProviderConfig
from manual_slop.ai.refresh import FileRefresher
from manual_slop.ai.retry import RetryPolicy
from manual_slop.ai.tool_loop import LoopSetup, ToolLoop
from manual_slop.ai.transcript import Conversation
from manual_slop.dialogs import ConfirmDialog, PendingDialog
from manual_slop.events import EventEmitter
from manual_slop.tools import ToolCall, build_execution_context, default_registry
from manual_slop.tools.registry import ToolRegistry
from manual_slop.tools.tool import Tool, ToolRun
from tests.reliability.conftest import LONG, scale

SEED = int(os.environ.get("SLOP_R1_SEED", "20261127"))
CALLS = scale(100, 1000)
PER_ROUND = 10
ROUNDS_PER_SEND = 8  # below the loop's 10-round limit: every generated call is offered to the registry
HUGE = 1_000_000
DEEP = 200
# The checker's own list of the tools that change files or run commands: not the registry's flag,
# so a tool wrongly declared read-only is caught (the last assertion pins the two together).
MUTATING = frozenset(
    {
        "write_file",
        "edit_file",
        "set_file_slice",
        "py_update_definition",
        "py_set_signature",
        "py_set_var_declaration",
        "run_shell",
    }
)
READ_ONLY = (
    "read_file",
    "get_file_slice",
    "grep",
    "list_directory",
    "get_tree",
    "search_files",
    "py_get_skeleton",
    "py_get_definition",
    "get_code_outline",
)
SHELL_TARGET = re.compile(r"> (sh/\d+\.txt)$")


# -- the generated calls ---------------------------------------------------------------------
def nested(depth: int) -> Any:
    value: Any = "leaf"
    for level in range(depth):
        value = [value, {"k": level}] if level % 2 else {"deeper": value}
    return value


def make_call(i: int, rng: random.Random, work: Path) -> ToolCall:
    """Call number ``i``; seeds the file it edits in ``work`` (each call has its own file)."""
    kind = rng.choices(
        ["mutating", "read_only", "invalid", "unknown", "huge", "nested"], [40, 20, 15, 5, 10, 10]
    )[0]
    own = f"f/{i:04d}.py"
    (work / own).write_text(f"def g(a):\n    return {i}\n\nx = {i}\n")
    if kind == "mutating":
        name = rng.choice(sorted(MUTATING))
        args: dict[str, Any] = {
            "write_file": {"path": f"w/{i:04d}.txt", "content": f"written {i}\n"},
            "edit_file": {"path": own, "old_string": f"return {i}", "new_string": f"return -{i}"},
            "set_file_slice": {"path": own, "start_line": 4, "end_line": 4, "new_content": f"x = {-i}"},
            "py_update_definition": {"path": own, "name": "g", "new_source": f"def g(a):\n    return -{i}\n"},
            "py_set_signature": {"path": own, "name": "g", "new_signature": "def g(a, b=1):"},
            "py_set_var_declaration": {"path": own, "name": "x", "new_declaration": f"x = {i} + 1"},
            "run_shell": {"script": f"printf 'ran {i}' > sh/{i:04d}.txt"},
        }[name]
    elif kind == "read_only":
        name = rng.choice(READ_ONLY)
        args = {
            "read_file": {"path": own},
            "get_file_slice": {"path": own, "start_line": 1, "end_line": 2},
            "grep": {"path": "f", "regex": f"return {i}$"},
            "list_directory": {"path": "."},
            "get_tree": {"path": "."},
            "search_files": {"path": ".", "pattern": f"{i:04d}*"},
            "py_get_skeleton": {"path": own},
            "py_get_definition": {"path": own, "name": "g"},
            "get_code_outline": {"path": own},
        }[name]
    elif kind == "invalid":
        name = rng.choice([*sorted(MUTATING), *READ_ONLY])
        args = rng.choice(
            [
                {},  # required arguments missing
                {"path": 7, "content": ["not", "text"], "script": {"x": 1}},  # wrong types
                {"path": f"../../outside-{i}.txt", "content": "escape", "script": "true"},  # outside
                {"path": own, "old_string": "not in the file", "new_string": "x", "name": "nope",
                 "start_line": 99, "end_line": 1, "new_content": "x", "new_source": "def (",
                 "new_signature": "garbage", "new_declaration": "= =", "regex": "(", "pattern": "["},
            ]
        )  # fmt: skip
    elif kind == "unknown":
        name = rng.choice(["delete_everything", "rm", "", "write_file ", "WRITE_FILE", "run_shell\x00"])
        args = {"path": own}
    elif kind == "huge":
        name = rng.choice(["write_file", "read_file", "grep", "run_shell"])
        blob = rng.choice("ab\u00e9\u4e2d") * HUGE
        args = {
            "write_file": {"path": f"w/{i:04d}.txt", "content": blob},
            "read_file": {"path": blob},
            # a 1 MB path, not a 1 MB regex: compiling and running that one costs seconds of CPU
            "grep": {"path": blob, "regex": "x"},
            "run_shell": {"script": f": '{blob[: HUGE // 4]}'"},
        }[name]
    else:
        name = rng.choice(["write_file", "edit_file", "read_file", "run_shell"])
        args = {"path": own, "content": nested(DEEP), "script": nested(DEEP), "junk": nested(DEEP)}
    return ToolCall(f"call-{i}", name, args)


# -- the provider, the observed handlers, the human --------------------------------------------
class ScriptedProvider(Provider):
    """Answers with the next round of calls while tools are allowed and the send has rounds
    left, then with text; remembers every call it offered."""

    name = "scripted"
    needs_api_key = False

    def __init__(self, rounds: Iterable[list[ToolCall]]) -> None:
        super().__init__(ProviderConfig("scripted", "fuzz"))
        self.rounds = deque(rounds)
        self.offered: list[ToolCall] = []
        self.left_in_send = 0

    def generate(self, request: ModelRequest) -> ModelReply:
        if request.tool_choice is ToolChoice.AUTO and self.rounds and self.left_in_send > 0:
            self.left_in_send -= 1
            batch = self.rounds.popleft()
            self.offered += batch
            return ModelReply("", tuple(batch))
        return ModelReply("done")

    def classify(self, exc: BaseException) -> ProviderError:
        return ProviderError(ErrorKind.UNKNOWN, self.name, exc)


@dataclasses.dataclass(slots=True)
class Observed:
    """What really happened: the handlers that ran, and what the loop logged."""

    ran: list[tuple[str, str, dict[str, Any]]] = dataclasses.field(default_factory=list)
    logged_calls: list[str] = dataclasses.field(default_factory=list)
    logged_results: list[str] = dataclasses.field(default_factory=list)
    lock: threading.Lock = dataclasses.field(default_factory=threading.Lock)

    def watch(self, tool: Tool) -> Tool:
        handler = tool.handler

        def recorded(args: dict[str, Any], run: ToolRun) -> Any:
            with self.lock:
                self.ran.append((tool.name, run.call.id, copy.deepcopy(args)))
            return handler(args, run)

        return dataclasses.replace(tool, handler=recorded)

    def log(self, direction: str, kind: str, payload: dict[str, Any]) -> None:
        if kind == "tool_call":
            self.logged_calls.append(str(payload["id"]))
        elif kind == "tool_result":
            self.logged_results.append(str(payload["id"]))


def decide(dialog: PendingDialog, seed: int) -> tuple[bool, dict[str, Any] | None]:
    """approve (40 %), reject (40 %) or edit and approve (20 %); drawn from the seed and the
    dialog's payload, so a replay decides alike whatever order the dialogs arrive in."""
    asked = {k: v for k, v in dialog.payload.items() if k in ("tool", "args", "script")}  # no tmp paths
    digest = hashlib.sha256(json.dumps(asked, sort_keys=True, default=str).encode()).hexdigest()
    rng = random.Random(f"{seed}:{digest}")
    roll = rng.random()
    if roll < 0.4:
        return True, None
    if roll < 0.8:
        return False, None
    payload = dialog.payload
    if isinstance(dialog, ConfirmDialog):
        return True, {"script": payload["script"].replace("'ran ", "'edited ")}
    args = dict(payload["args"])
    for key in ("content", "new_content", "new_string", "new_declaration"):
        if isinstance(args.get(key), str):
            args[key] = args[key][:1000] + " # edited"
    if "content" in args and rng.random() < 0.5:
        args["path"] = f"{args['path']}.edited"  # the edit sends the write elsewhere
    return True, {"args": args}


# -- the run and its checker -----------------------------------------------------------------
def snapshot(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in root.rglob("*")
        if p.is_file()
    }


@dataclasses.dataclass(slots=True)
class Outcome:
    calls: list[ToolCall]
    observed: Observed
    before: dict[str, str]
    after: dict[str, str]
    audit: list[dict[str, Any]]
    decided: Counter[str]
    conversations: list[Conversation]
    left_pending: int


def fuzz(ctrl: Any, work: Path, registry: ToolRegistry, count: int, seed: int) -> Outcome:
    """Generate ``count`` calls, run them through tool loops on a worker thread and decide every
    dialog on this (the main) thread."""
    rng = random.Random(seed)
    for folder in ("f", "w", "sh"):
        (work / folder).mkdir(parents=True, exist_ok=True)
    calls = [make_call(i, rng, work) for i in range(count)]
    before = snapshot(work)
    observed = Observed()
    watched = ToolRegistry([observed.watch(t) for t in registry.list()], breaker_threshold=10**9)
    ctx = build_execution_context(ctrl)
    rounds = [calls[i : i + PER_ROUND] for i in range(0, count, PER_ROUND)]
    conversations: list[Conversation] = []
    failure: list[BaseException] = []

    provider = ScriptedProvider(rounds)

    def sends() -> None:
        try:
            while provider.rounds:  # a send the loop cut short (its 500 KB budget) leaves rounds over
                provider.left_in_send = ROUNDS_PER_SEND
                conversation = Conversation()
                conversations.append(conversation)
                setup = LoopSetup(
                    system="", context="", user_message="fuzz", registry=watched, exec_context=ctx,
                    trunc_limit=10**9, refresher=FileRefresher(None, work), stream=StreamSink(None),
                    retry=RetryPolicy(max_retries=0), log=observed.log, events=EventEmitter(),
                    wait=lambda seconds: False,
                )  # fmt: skip
                ToolLoop(provider, conversation, setup).run()
        except BaseException as exc:  # reported by the main thread
            failure.append(exc)

    loop = threading.Thread(target=sends, name="r1-tool-loop", daemon=True)
    loop.start()
    decided: Counter[str] = Counter()
    deadline = time.monotonic() + (100 if count <= 200 else 850)
    while loop.is_alive():
        assert time.monotonic() < deadline, f"the tool loop did not finish; {sum(decided.values())} decided"
        pending = ctrl.clutch.pending()
        if not pending:
            loop.join(0.002)
            continue
        for dialog in pending:
            approved, payload = decide(dialog, seed)
            ctrl.clutch.resolve(dialog.uid, approved, payload, decider="hook")
            decided["edited" if payload else "approved" if approved else "rejected"] += 1
        ctrl.run_frame()  # drain the GUI mirror, as the ticker would
    loop.join(5)
    assert not failure, f"the tool loop raised {failure[0]!r}"
    left = len(ctrl.clutch.pending())
    audit = [e for e in ctrl.session_log.read("audit") if e.get("event") == "decision"]
    assert len(provider.offered) == count, f"only {len(provider.offered)} of {count} calls were offered"
    return Outcome(provider.offered, observed, before, snapshot(work), audit, decided, conversations, left)


def violations(out: Outcome) -> list[str]:
    """Every broken promise, in words (an empty list: the clutch held)."""
    problems: list[str] = []
    # 1. each mutating handler run matches an approving decision of the same final call
    approvals: list[dict[str, Any]] = [
        e["payload"] for e in out.audit if e.get("approved") and isinstance(e.get("payload"), dict)
    ]
    targets: set[str] = set()
    for name, call_id, args in out.observed.ran:
        if name not in MUTATING:
            continue
        match = next(
            (
                p
                for p in approvals
                if (name == "run_shell" and p.get("script") == args.get("script"))
                or (p.get("tool") == name and p.get("args") == args)
            ),
            None,
        )
        if match is None:
            problems.append(f"{name} ({call_id}) ran with no approving decision in audit.log")
            continue
        approvals.remove(match)  # one decision, one run
        script_target = SHELL_TARGET.search(str(args.get("script", "")))
        targets.add(script_target.group(1) if script_target else str(args.get("path")))
    # 2. every file that changed on disk is explained by such a run
    changed = {p for p in out.before.keys() | out.after.keys() if out.before.get(p) != out.after.get(p)}
    for path in sorted(changed - targets):
        problems.append(f"{path} changed on disk without an approved call that targets it")
    # 3. every call id offered by the model gets exactly one result, in the log and the history
    ids = [c.id for c in out.calls]
    logged = (("logged tool_call", out.observed.logged_calls), ("tool_result", out.observed.logged_results))
    for label, seen in logged:
        counts = Counter(seen)
        wrong = [i for i in ids if counts[i] != 1]
        if wrong:
            problems.append(f"{len(wrong)} call(s) without exactly one {label}: {wrong[:5]}")
    answered = Counter(
        output.call_id
        for conversation in out.conversations
        for message in conversation.messages
        if message.role is Role.TOOL
        for output in message.tool_outputs
    )
    missing = [i for i in ids if answered[i] != 1]
    if missing:
        problems.append(f"{len(missing)} call(s) without exactly one result in the history: {missing[:5]}")
    # 4. nothing is left waiting, and every human decision is audited once
    if out.left_pending:
        problems.append(f"{out.left_pending} dialog(s) still pending after the run")
    humans = [e for e in out.audit if e.get("decider") == "hook"]
    if len(humans) != sum(out.decided.values()):
        problems.append(f"{sum(out.decided.values())} dialogs decided but {len(humans)} audited")
    return problems


def make_project(make_controller: Callable[..., Any], app_dir: Path) -> tuple[Any, Path]:
    work = app_dir / "work"
    work.mkdir()
    (app_dir / "fuzz.toml").write_text('[files]\nbase_dir = "work"\n')
    ctrl = make_controller(project_file=app_dir / "fuzz.toml")
    assert ctrl.clutch.policy == "manual"
    return ctrl, work


@pytest.mark.timeout(900 if LONG else 120)  # 1,000 calls take minutes on a loaded machine
def test_r1_no_mutating_call_runs_undecided_and_every_call_is_answered(
    make_controller: Callable[..., Any], app_dir: Path, summary: Callable[[str], None]
) -> None:
    ctrl, work = make_project(make_controller, app_dir)
    registry = default_registry(with_powershell=False)
    out = fuzz(ctrl, work, registry, CALLS, SEED)
    problems = violations(out)
    ran = Counter("mutating" if n in MUTATING else "read-only" for n, _, _ in out.observed.ran)
    kinds = Counter(
        "unknown" if c.name not in registry else "mutating" if c.name in MUTATING else "read-only"
        for c in out.calls
    )
    summary(
        f"R1 clutch fuzz: seed {SEED}, {len(out.calls)} calls ({kinds['mutating']} mutating, "
        f"{kinds['read-only']} read-only, {kinds['unknown']} unknown tools), "
        f"{sum(out.decided.values())} dialogs ({out.decided['approved']} approved, "
        f"{out.decided['rejected']} rejected, {out.decided['edited']} edited), "
        f"{ran['mutating']} mutating handler runs, {len(out.after.keys() - out.before.keys())} files "
        f"created, {len(problems)} violations"
    )
    assert problems == [], "\n".join(problems)
    assert out.decided["approved"] and out.decided["rejected"] and out.decided["edited"]
    assert ran["mutating"] and ran["read-only"]  # both kinds of handler really ran
    declared = {t.name for t in registry.list() if t.mutating}
    assert declared == MUTATING, f"the registry's mutating tools changed: {sorted(declared ^ MUTATING)}"


def test_r1_the_checker_catches_a_mutating_tool_declared_read_only(
    make_controller: Callable[..., Any], app_dir: Path
) -> None:
    """The planted defect, on a stand-in: ``write_file`` declared ``mutating=False`` writes
    without a dialog, and the checker names those runs and the files they changed."""
    ctrl, work = make_project(make_controller, app_dir)
    tools = default_registry().list()
    broken = ToolRegistry(
        [dataclasses.replace(t, mutating=t.mutating and t.name != "write_file") for t in tools]
    )
    out = fuzz(ctrl, work, broken, 20, SEED)
    problems = violations(out)
    assert any("write_file" in p and "no approving decision" in p for p in problems), problems
    assert any("changed on disk without an approved call" in p for p in problems), problems
