"""Every ticket attempt in its own scratch tree; its patch approved and merged three-way (real git,
real files, a real controller and clutch, the scripted client)."""

from __future__ import annotations

import dataclasses
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from manual_slop.governance.rules import AllowRule
from manual_slop.mma.attempt import TREE_FILE_TOOLS
from manual_slop.mma.conductor import ConductorStatus
from manual_slop.mma.models import Ticket, TicketStatus
from manual_slop.mma.tier4 import policy_check
from manual_slop.tools.approval import build_execution_context
from manual_slop.tools.registry import default_registry
from manual_slop.tools.security import AccessDenied
from manual_slop.tools.tool import ApprovalResult, ToolCall
from tests.integration.mma.test_conductor import wait_for
from tests.unit.mma.fake_client import Call, FakeTierClient
from tests.unit.mma.test_worktree import git

LINES = "".join(f"line {i}\n" for i in range(1, 21))


def edited(text: str, number: int, new: str) -> str:
    return text.replace(f"line {number}\n", f"{new}\n")


@pytest.fixture
def trees(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Scratch trees are made here, so a test can see which are left."""
    folder = tmp_path / "trees"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    yield folder


def scratch_roots(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.name.startswith("slop-scratch-"))


def commit_project(base: Path) -> None:
    git(base, "init", "--quiet")
    git(base, "add", "-A")
    git(base, "commit", "--quiet", "-m", "base")


def worktrees(base: Path) -> list[str]:
    return [
        line
        for line in git(base, "worktree", "list", "--porcelain").splitlines()
        if line.startswith("worktree ")
    ]


def patches(ctrl) -> list:
    return [
        d for d in ctrl.clutch.pending() if d.kind == "tool_approval" and d.payload["tool"] == "apply_patch"
    ]


def only_patches_ask(ctrl) -> None:
    ctrl.clutch.set_policy("allow_list")
    ctrl.clutch.set_rules([AllowRule("mma_spawn"), AllowRule("mma_step")])


def test_two_tickets_editing_one_file_in_different_places_both_land(run_track, trees: Path) -> None:
    def respond(call: Call) -> str:
        line = 2 if call.ticket_id == "a" else 18
        path = call.tree() / "mod.txt"
        call.write("mod.txt", edited(path.read_text(), line, f"edited by {call.ticket_id}"))
        return "done"

    client = FakeTierClient(respond=respond)
    ctrl, conductor = run_track(
        [Ticket("a", "top", target_files=["mod.txt"]), Ticket("b", "bottom", target_files=["mod.txt"])],
        client,
        start=False,
        worktree_approvals="patch_only",
    )
    base = ctrl.base_dir()
    (base / "mod.txt").write_text(LINES)
    commit_project(base)
    only_patches_ask(ctrl)
    conductor.start()
    wait_for(lambda: len(patches(ctrl)) == 2)  # both trees were made from the same base
    assert (base / "mod.txt").read_text() == LINES  # nothing lands before it is approved
    assert len(worktrees(base)) == 3  # the project and the two attempts' worktrees
    first, second = patches(ctrl)
    assert "+edited by" in first.payload["diff"] and first.payload["args"]["patch"] == first.payload["diff"]
    ctrl.clutch.resolve(first.uid, True, decider="hook")
    ctrl.clutch.resolve(second.uid, True, decider="hook")
    assert conductor.join(10) and conductor.status is ConductorStatus.DONE
    assert (base / "mod.txt").read_text() == edited(edited(LINES, 2, "edited by a"), 18, "edited by b")
    assert len(worktrees(base)) == 1 and scratch_roots(trees) == []  # every tree removed after success
    assert all(not t.worktree for t in conductor.track.tickets)


def test_the_same_lines_conflict_then_retry_and_skip_behave(run_track, trees: Path) -> None:
    """A plain folder (copy mode): a conflict writes nothing and asks a human, with the hunks."""

    def respond(call: Call) -> str:
        assert call.tier == "Tier 3", "only Tier 3 runs here: no attempt fails"
        attempts = [c for c in client.tier_calls("Tier 3") if c.ticket_id == call.ticket_id]
        line = 10 if len(attempts) == 1 else 12  # a retry starts from the current project
        text = (call.tree() / "mod.txt").read_text()
        call.write("mod.txt", edited(text, line, f"{call.ticket_id} was here"))
        return "done"

    client = FakeTierClient(respond=respond)
    tickets = [Ticket(t, f"edit line 10 ({t})", target_files=["mod.txt"]) for t in ("a", "b", "c")]
    ctrl, conductor = run_track(tickets, client, start=False, max_replans=0)
    base = ctrl.base_dir()
    (base / "mod.txt").write_text(LINES)
    only_patches_ask(ctrl)
    conductor.start()
    wait_for(lambda: len(patches(ctrl)) == 3)
    by_ticket = {d.payload["diff"].split("+")[-1].split(" was here")[0]: d for d in patches(ctrl)}
    ctrl.clutch.resolve(by_ticket["a"].uid, True, decider="hook")
    wait_for(lambda: conductor.track.ticket("a").status is TicketStatus.COMPLETED)
    landed = (base / "mod.txt").read_bytes()
    assert landed == edited(LINES, 10, "a was here").encode()
    ctrl.clutch.resolve(by_ticket["b"].uid, True, decider="hook")
    wait_for(lambda: any(d.kind == "recovery" for d in ctrl.clutch.pending()))
    (recovery,) = [d for d in ctrl.clutch.pending() if d.kind == "recovery"]
    assert recovery.payload["ticket_id"] == "b" and recovery.payload["failure"] == "merge_conflict"
    assert "mod.txt: both changed the same lines" in recovery.payload["error"]
    assert "<<<<<<< project\na was here\n=======\nb was here\n>>>>>>> ticket" in recovery.payload["error"]
    assert (base / "mod.txt").read_bytes() == landed  # untouched until resolved
    ctrl.clutch.resolve(by_ticket["c"].uid, True, decider="hook")  # c conflicts too
    wait_for(lambda: len([d for d in ctrl.clutch.pending() if d.kind == "recovery"]) == 2)
    assert (base / "mod.txt").read_bytes() == landed
    recovery_c = next(d for d in ctrl.clutch.pending() if d.kind == "recovery" and d.uid != recovery.uid)
    ctrl.clutch.resolve(recovery_c.uid, True, {"choice": "skip", "reason": "b covers it"}, decider="hook")
    ctrl.clutch.resolve(recovery.uid, True, {"choice": "retry"}, decider="hook")
    wait_for(lambda: len(patches(ctrl)) == 1)  # b's new attempt, from the project with a's change
    (retry,) = patches(ctrl)
    assert "-line 12\n+b was here" in retry.payload["diff"] and "a was here" in retry.payload["diff"]
    ctrl.clutch.resolve(retry.uid, True, decider="hook")
    assert conductor.join(10) and conductor.status is ConductorStatus.DONE
    assert (base / "mod.txt").read_text() == edited(edited(LINES, 10, "a was here"), 12, "b was here")
    c = conductor.track.ticket("c")
    assert c.result.startswith("SKIPPED by the user: b covers it") and c.status is TicketStatus.COMPLETED
    assert conductor.track.ticket("b").retry_count == 1 and scratch_roots(trees) == []


@pytest.mark.parametrize("approvals", ["ask", "patch_only"])
def test_patch_only_lets_file_tools_run_but_the_shell_always_asks(
    run_track, trees: Path, approvals: str
) -> None:
    verdicts = []

    def respond(call: Call) -> str:
        call.write("one.txt", "1\n")
        call.write("two.txt", "2\n")
        verdicts.append(call.step("run_shell", {"script": "make test"}))
        return "done"

    client = FakeTierClient(respond=respond)
    ctrl, conductor = run_track([Ticket("a", "write two files")], client, worktree_approvals=approvals)
    assert conductor.join(10) and conductor.status is ConductorStatus.DONE
    kinds = [e["kind"] for e in ctrl.session_log.read("audit")]
    steps = [e["payload"]["payload"] for e in ctrl.session_log.read("audit") if e["kind"] == "mma_step"]
    assert len(steps) == (3 if approvals == "ask" else 1)
    assert '"tool": "run_shell"' in steps[-1] and verdicts[0].approved  # the shell asked (auto said yes)
    assert kinds.count("tool_approval") == 1  # the patch, in both modes
    assert (ctrl.base_dir() / "one.txt").read_text() == "1\n" and (ctrl.base_dir() / "two.txt").exists()


def test_a_failed_ticket_keeps_its_tree_until_it_runs_again(run_track, trees: Path) -> None:
    def respond(call: Call) -> str:
        if call.ticket_id == "bad":
            call.write("half.txt", "half done\n")
            return "BLOCKED: the API it needs does not exist"
        call.write("good.txt", "good\n")
        return "done"

    client = FakeTierClient(respond=respond)
    ctrl, conductor = run_track([Ticket("good", "x"), Ticket("bad", "y")], client, start=False, max_replans=0)
    base = ctrl.base_dir()
    (base / "README").write_text("project\n")
    commit_project(base)
    conductor.start()
    assert conductor.join(10) and conductor.status is ConductorStatus.BLOCKED
    bad = conductor.track.ticket("bad")
    assert bad.status is TicketStatus.BLOCKED and bad.worktree
    kept = Path(bad.worktree)
    assert scratch_roots(trees) == [kept] and (kept / "tree" / "half.txt").read_text() == "half done\n"
    assert len(worktrees(base)) == 2 and not (base / "half.txt").exists()
    assert conductor.snapshot()["tickets"][1]["worktree"] == str(kept)  # the dashboard and the API see it
    conductor.unblock_ticket("bad")
    assert not kept.exists() and conductor.track.ticket("bad").worktree == ""
    assert len(worktrees(base)) == 1 and scratch_roots(trees) == []


def test_a_tree_context_confines_the_tools_to_the_tree(make_controller, tmp_path: Path, trees: Path) -> None:
    ctrl = make_controller()
    (ctrl.base_dir() / "secret.txt").write_text("project file\n")
    tree = tmp_path / "trees" / "slop-scratch-x" / "tree"
    tree.mkdir(parents=True)
    approved = []

    def approve(request) -> ApprovalResult:
        approved.append(request.call.name)
        return ApprovalResult(True, dict(request.call.args))

    ctx = build_execution_context(ctrl, tier="Tier 3", base_dir=tree)
    ctx.pre_tool_callback = approve
    assert ctx.base_dir == tree
    with pytest.raises(AccessDenied):
        ctx.policy.check(ctrl.base_dir() / "secret.txt")
    result = default_registry().execute(ToolCall("1", "write_file", {"path": "new.txt", "content": "x"}), ctx)
    assert result.ok and (tree / "new.txt").read_text() == "x" and not (ctrl.base_dir() / "new.txt").exists()
    shell = default_registry().execute(ToolCall("2", "run_shell", {"script": "pwd"}), ctx)
    assert str(tree) in shell.content and approved == ["write_file", "run_shell"]
    mutating = {t.name for t in default_registry().list() if t.mutating and t.path_params and not t.source}
    assert mutating == TREE_FILE_TOOLS  # patch_only frees exactly our path-checked file tools


def test_credentials_beside_the_project_never_reach_a_tree(run_track, trees: Path) -> None:
    seen = []

    def respond(call: Call) -> str:
        seen.append(sorted(p.name for p in call.tree().iterdir()))
        return "done"

    ctrl, conductor = run_track([Ticket("a", "look")], FakeTierClient(respond=respond), start=False)
    base = ctrl.base_dir()
    (base / "notes.txt").write_text("hi\n")
    credentials = ctrl.paths.credentials_file
    credentials.write_text('[anthropic]\napi_key = "sk-test"\n')
    assert credentials.parent == base  # beside the project, as a user keeps it
    policy = ctrl.path_policy(base)  # what start_track hands the conductor
    conductor.config = dataclasses.replace(conductor.config, read_check=policy_check(policy, write=False))
    conductor.start()
    assert conductor.join(10) and conductor.status is ConductorStatus.DONE
    assert "notes.txt" in seen[0] and credentials.name not in seen[0]
    assert scratch_roots(trees) == []
