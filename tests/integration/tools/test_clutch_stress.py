"""1,000 randomized mutating calls from worker threads under the ``manual`` policy.

Proves, through the real registry, bridge, controller and clutch: no call runs before its
dialog is resolved (its target is untouched when the dialog is decided, and its ``execute``
returns only afterwards), approved calls do exactly what was approved, and rejected calls
leave the file system as it was.
"""

from __future__ import annotations

import hashlib
import random
import threading
import time
from pathlib import Path
from typing import Any

from manual_slop.tools import ToolCall, ToolResult, ToolStatus, build_execution_context, default_registry

CALLS = 1_000
WORKERS = 8
SEED = 20261122


def snapshot(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in root.rglob("*")
        if p.is_file()
    }


def make_calls(work: Path, rng: random.Random) -> list[tuple[ToolCall, str]]:
    """Each call targets its own file; returns (call, target path relative to the base dir)."""
    calls: list[tuple[ToolCall, str]] = []
    for i in range(CALLS):
        kind = rng.choice(
            ["write_file", "write_file", "edit_file", "set_file_slice", "py_update_definition", "run_shell"]
        )
        target = f"t/{i:04d}.py"
        if kind == "write_file":
            args: dict[str, Any] = {"path": target, "content": f"value = {rng.randint(0, 10**6)}\n"}
        elif kind == "edit_file":
            (work / target).write_text(f"def f():\n    return {i}\n")
            args = {"path": target, "old_string": f"return {i}", "new_string": f"return {i} + 1"}
        elif kind == "set_file_slice":
            (work / target).write_text("a = 1\nb = 2\nc = 3\n")
            args = {"path": target, "start_line": 2, "end_line": 2, "new_content": f"b = {i}"}
        elif kind == "py_update_definition":
            (work / target).write_text(f"def g():\n    return {i}\n")
            args = {"path": target, "name": "g", "new_source": f"def g():\n    return -{i}\n"}
        else:
            args = {"script": f"echo {i} > {target}"}
        calls.append((ToolCall(f"call-{i}", kind, args), target))
    return calls


def test_no_mutating_call_runs_before_its_dialog_is_resolved(make_controller, app_dir: Path) -> None:
    work = app_dir / "work"
    (work / "t").mkdir(parents=True)
    (app_dir / "stress.toml").write_text('[files]\nbase_dir = "work"\n')
    ctrl = make_controller(project_file=app_dir / "stress.toml")
    assert ctrl.clutch.policy == "manual"
    rng = random.Random(SEED)
    calls = make_calls(work, rng)
    before = snapshot(work)
    ctx = build_execution_context(ctrl)
    registry = default_registry(with_powershell=False)

    returned_at: dict[str, float] = {}
    results: dict[str, ToolResult] = {}
    lock = threading.Lock()
    queue = list(calls)

    def worker() -> None:
        while True:
            with lock:
                if not queue:
                    return
                call, target = queue.pop()
            result = registry.execute(call, ctx)
            with lock:
                returned_at[target] = time.monotonic()
                results[target] = result

    threads = [threading.Thread(target=worker, name=f"stress-{n}") for n in range(WORKERS)]
    for thread in threads:
        thread.start()

    decided_at: dict[str, float] = {}
    approved: dict[str, bool] = {}
    early: list[str] = []
    deadline = time.monotonic() + 300
    while len(decided_at) < CALLS:
        assert time.monotonic() < deadline, f"only {len(decided_at)} dialogs decided"
        pending = ctrl.clutch.pending()
        if not pending:
            time.sleep(0.0005)
            continue
        dialog = rng.choice(pending)  # decide in random order, not oldest first
        payload = dialog.payload
        target = payload["args"]["path"] if "args" in payload else payload["script"].rsplit(" ", 1)[1]
        current = work / target
        original = before.get(target)
        now = hashlib.sha256(current.read_bytes()).hexdigest() if current.exists() else None
        if now != original or target in returned_at:
            early.append(target)
        approve = rng.random() < 0.5
        decided_at[target] = time.monotonic()
        approved[target] = approve
        ctrl.clutch.resolve(dialog.uid, approve, decider="hook")
        if len(decided_at) % 100 == 0:
            ctrl.run_frame()  # keep the GUI mirror drained, as the ticker would
    for thread in threads:
        thread.join(30)
    assert not any(t.is_alive() for t in threads)

    assert early == []
    assert len(results) == CALLS
    assert all(returned_at[t] > decided_at[t] for t in decided_at)
    after = snapshot(work)
    for target, was_approved in approved.items():
        result = results[target]
        if was_approved:
            assert result.status is ToolStatus.SUCCESS, (target, result.content)
            assert after[target] != before.get(target)
        else:
            assert result.status is ToolStatus.REJECTED, (target, result.content)
            assert after.get(target) == before.get(target)
    assert set(after) == set(before) | {t for t, ok in approved.items() if ok}
    rejected = sum(not ok for ok in approved.values())
    assert 400 < rejected < 600  # both branches well exercised
    logged = ctrl.session_log.read("toolcalls")
    assert len(logged) == CALLS and sorted(e["seq"] for e in logged) == list(range(1, CALLS + 1))
    assert len(ctrl.session_log.read("audit")) == CALLS
    assert len(list(ctrl.session_log.scripts_dir.iterdir())) == sum(
        1 for call, target in calls if call.name == "run_shell" and approved[target]
    )
