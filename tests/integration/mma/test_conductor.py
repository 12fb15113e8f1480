"""ConductorEngine with a real controller (clutch, events, persistence) and a fake AI client."""

from __future__ import annotations

import random
import threading
import time
import tomllib

from manual_slop.mma.conductor import ConductorStatus
from manual_slop.mma.models import Ticket, TicketStatus
from tests.helpers import pump_until
from tests.unit.mma.fake_client import Call, FakeTierClient, default_responder


def diamond(width: int = 10) -> list[Ticket]:
    middle = [Ticket(f"b{i}", f"middle {i}", depends_on=["a"]) for i in range(width)]
    return [Ticket("a", "root"), *middle, Ticket("z", "join", depends_on=[t.id for t in middle])]


def wait_for(predicate, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.01)
    raise AssertionError(f"condition not met within {timeout} s")


def max_overlap(intervals: list[tuple[float, float]]) -> int:
    edges = sorted(
        [(s, 1) for s, _ in intervals] + [(e, -1) for _, e in intervals], key=lambda x: (x[0], x[1])
    )
    best = current = 0
    for _, step in edges:
        current += step
        best = max(best, current)
    return best


def worker_threads() -> list[str]:
    return [
        t.name for t in threading.enumerate() if t.name.startswith(("slop-mma-worker", "slop-mma-conductor"))
    ]


def test_diamond_runs_with_at_most_four_workers_respecting_dependencies(run_track) -> None:
    client = FakeTierClient(delay=0.03)
    ctrl, conductor = run_track(diamond(), client, max_workers=4)
    assert conductor.join(30)
    assert conductor.status is ConductorStatus.DONE
    tickets = conductor.track.tickets
    assert all(t.status is TicketStatus.COMPLETED for t in tickets)
    spans = [(t.started_at, t.finished_at) for t in tickets]
    assert 2 <= max_overlap(spans) <= 4  # the pool really ran workers side by side, never more than 4
    by_id = {t.id: t for t in tickets}
    for ticket in tickets:
        assert all(by_id[d].finished_at <= ticket.started_at for d in ticket.depends_on)
    sends = client.tier_calls("Tier 3")
    assert len(sends) == 12 and client.resets == 0  # no session reset: one conversation per worker
    worker_conversations = {c for c, ticket in client.conversations if ticket}
    assert len(worker_conversations) == 12
    assert max_overlap([(c.started, c.ended) for c in sends]) == 1  # one conversation: sends serialized
    assert {c.thread.split("-")[1] for c in sends} == {"mma"}
    assert conductor.tier_usage.snapshot()["Tier 3"]["output"] > 0
    pump_until(ctrl, lambda: ctrl.state.mma_status == "done")
    assert [t["status"] for t in ctrl.state.mma_tickets] == ["completed"] * 12
    assert ctrl.state.active_track["status"] == "done"
    events, _, _ = ctrl.journal.read(0, limit=10_000)
    done = [
        e.payload["ticket_id"]
        for e in events
        if e.type == "ticket_status" and e.payload["status"] == "completed"
    ]
    assert done[0] == "a" and done[-1] == "z" and len(done) == 12
    assert any(e.type == "mma_state" for e in events)
    state = tomllib.loads((ctrl.base_dir() / "conductor/tracks/tr_1/state.toml").read_text())
    assert {t["status"] for t in state["tickets"]} == {"completed"}
    assert "- [x] **z** join" in (ctrl.base_dir() / "conductor/tracks/tr_1/plan.md").read_text()


def test_under_manual_policy_nothing_starts_before_its_spawn_dialog_is_approved(run_track) -> None:
    client = FakeTierClient()
    ctrl, conductor = run_track(
        [Ticket("a", "first"), Ticket("b", "second", depends_on=["a"])], client, policy="manual"
    )
    wait_for(lambda: len(ctrl.clutch.pending()) == 1)
    time.sleep(0.1)
    assert client.calls == []
    (dialog,) = ctrl.clutch.pending()
    assert (
        dialog.kind == "mma_spawn"
        and dialog.payload["ticket_id"] == "a"
        and dialog.payload["role"] == "Tier 3"
    )
    assert "Ticket a: first" in dialog.payload["prompt"]
    ctrl.clutch.resolve(
        dialog.uid, True, {"prompt": "Ticket a: edited prompt", "context_md": "CTX"}, decider="hook"
    )
    wait_for(lambda: ctrl.clutch.pending() and ctrl.clutch.pending()[0].payload["ticket_id"] == "b")
    first = client.tier_calls("Tier 3")[0]
    assert first.message == "Ticket a: edited prompt" and first.md == "CTX"  # the edited payload is what ran
    assert (
        len(client.calls) == 1
        and "Results of the tickets this one depends on" in ctrl.clutch.pending()[0].payload["prompt"]
    )
    ctrl.clutch.resolve(ctrl.clutch.pending()[0].uid, True)
    assert conductor.join(10) and conductor.status is ConductorStatus.DONE


def test_rejecting_a_spawn_leaves_the_ticket_todo_and_pauses_the_track(run_track) -> None:
    client = FakeTierClient()
    ctrl, conductor = run_track([Ticket("a", "first"), Ticket("b", "second")], client, policy="manual")
    wait_for(lambda: len(ctrl.clutch.pending()) == 2)
    spawn_a = next(d for d in ctrl.clutch.pending() if d.payload["ticket_id"] == "a")
    ctrl.clutch.resolve(spawn_a.uid, False, {"reason": "not now"})
    wait_for(lambda: conductor.status is ConductorStatus.PAUSED)
    assert conductor.track.ticket("a").status is TicketStatus.TODO
    ctrl.clutch.resolve(ctrl.clutch.pending()[0].uid, True)  # b was already asked: it runs
    wait_for(lambda: conductor.track.ticket("b").status is TicketStatus.COMPLETED)
    time.sleep(0.1)
    assert ctrl.clutch.pending() == [] and conductor.status is ConductorStatus.PAUSED  # nothing new starts
    conductor.resume()
    wait_for(lambda: len(ctrl.clutch.pending()) == 1)
    ctrl.clutch.resolve(ctrl.clutch.pending()[0].uid, True)
    assert conductor.join(10) and conductor.status is ConductorStatus.DONE
    pump_until(ctrl, lambda: any("rejected (not now)" in n.message for n in ctrl.state.notifications))


def test_abort_track_from_the_spawn_dialog(run_track) -> None:
    ctrl, conductor = run_track([Ticket("a", "x"), Ticket("b", "y")], FakeTierClient(), policy="manual")
    wait_for(lambda: len(ctrl.clutch.pending()) == 2)
    ctrl.clutch.resolve(ctrl.clutch.pending()[0].uid, False, abort=True, decider="hook")
    assert conductor.join(2.0)
    assert conductor.status is ConductorStatus.ABORTED and ctrl.clutch.pending() == []
    assert {t.status for t in conductor.track.tickets} == {TicketStatus.KILLED}


def test_abort_kills_in_flight_tickets_within_two_seconds_and_leaves_no_worker(run_track) -> None:
    client = FakeTierClient(hold=threading.Event(), hold_timeout=30)  # provider calls that hang
    _, conductor = run_track(
        [Ticket("a", "x"), Ticket("b", "y"), Ticket("c", "z"), Ticket("d", "after", depends_on=["a"])], client
    )
    wait_for(lambda: len(client.calls) == 1 and len(conductor.pool.active()) == 3)
    started = time.monotonic()
    assert conductor.abort(wait=2.0, source="hook")
    assert time.monotonic() - started < 2.0
    assert worker_threads() == []
    statuses = {t.id: t.status for t in conductor.track.tickets}
    assert statuses == {"a": "killed", "b": "killed", "c": "killed", "d": "blocked"}
    assert conductor.track.ticket("a").blocked_reason == "track aborted by hook"
    assert conductor.status is ConductorStatus.ABORTED
    client.hold.set()  # the orphaned provider call returns; its answer is dropped
    time.sleep(0.1)
    assert conductor.track.ticket("a").status is TicketStatus.KILLED


def test_aborting_one_ticket_blocks_its_dependents_and_the_rest_finishes(run_track) -> None:
    hold = threading.Event()

    def respond(call: Call) -> str:
        if call.ticket_id == "slow":
            hold.wait(10)
        return default_responder(call)

    client = FakeTierClient(respond=respond)
    _, conductor = run_track(
        [Ticket("slow", "x"), Ticket("after", "y", depends_on=["slow"]), Ticket("other", "z")], client
    )
    wait_for(lambda: conductor.track.ticket("slow").status is TicketStatus.IN_PROGRESS and client.calls)
    conductor.abort("slow", wait=2.0)
    hold.set()
    assert conductor.join(10)
    assert [t.status for t in conductor.track.tickets] == ["killed", "blocked", "completed"]
    assert conductor.status is ConductorStatus.BLOCKED


def test_failures_retry_with_escalation_and_tier4_qa_then_block(run_track) -> None:
    def respond(call: Call) -> str:
        if call.tier == "Tier 4":
            return "QA: missing import"
        if call.ticket_id == "flaky" and len([c for c in client.calls if c.ticket_id == "flaky"]) < 3:
            raise ConnectionError("provider hiccup")
        if call.ticket_id == "broken":
            raise RuntimeError("always")
        if call.ticket_id == "stuck":
            return "BLOCKED: needs an API key"
        return default_responder(call)

    client = FakeTierClient(respond=respond)
    tickets = [
        Ticket("flaky", "x"),
        Ticket("broken", "y"),
        Ticket("stuck", "z"),
        Ticket("pinned", "w", model_override="huge"),
    ]
    ctrl, conductor = run_track(tickets, client, tier3_models=("small", "medium", "large"), max_replans=0)
    assert conductor.join(10)
    flaky = [c for c in client.tier_calls("Tier 3") if c.ticket_id == "flaky"]
    assert [c.model for c in flaky] == ["small", "medium", "large"]
    # a network error is retried after a backoff, without Tier 4 (governance.severity)
    assert "Attempt 1 failed (provider_network):\nConnectionError: provider hiccup" in flaky[1].message
    broken = [c for c in client.tier_calls("Tier 3") if c.ticket_id == "broken"]
    assert "QA summary of the failure:\nQA: missing import" in broken[1].message
    track = conductor.track
    assert track.ticket("flaky").status is TicketStatus.COMPLETED and track.ticket("flaky").retry_count == 2
    assert track.ticket("broken").status is TicketStatus.BLOCKED
    assert (
        track.ticket("broken").blocked_reason == "RuntimeError: always (a policy cannot choose a recovery)"
        and track.ticket("broken").retry_count == 2
    )
    assert (
        track.ticket("stuck").blocked_reason == "needs an API key (a policy cannot choose a recovery)"
        and track.ticket("stuck").retry_count == 0
    )
    assert [c.model for c in client.tier_calls("Tier 3") if c.ticket_id == "pinned"] == ["huge"]
    assert len(client.tier_calls("Tier 4")) == 2  # two QA summaries for the ticket whose send fails
    # the spent ladders asked a human (here the auto policy answered: the tickets stay blocked)
    recoveries = [e for e in ctrl.session_log.read("audit") if e["kind"] == "recovery"]
    assert sorted(e["payload"]["ticket_id"] for e in recoveries) == ["broken", "stuck"]
    assert {e["payload"]["failure"] for e in recoveries} == {"send_failed", "worker_blocked"}
    assert conductor.status is ConductorStatus.BLOCKED


def test_tool_steps_pass_an_editable_mma_step_dialog(run_track) -> None:
    verdicts = []

    def respond(call: Call) -> str:
        if call.tier == "Tier 3":
            verdicts.append(call.step("write_file", {"path": "a.txt", "content": "x"}))
            verdicts.append(call.step("run_shell", {"script": "rm -rf /"}))
        return "ok"

    client = FakeTierClient(respond=respond)
    ctrl, conductor = run_track([Ticket("a", "x")], client, policy="manual")
    wait_for(lambda: ctrl.clutch.pending())
    ctrl.clutch.resolve(ctrl.clutch.pending()[0].uid, True)  # the spawn
    wait_for(lambda: ctrl.clutch.pending() and ctrl.clutch.pending()[0].kind == "mma_step")
    step = ctrl.clutch.pending()[0]
    assert step.source_tier == "Tier 3" and '"tool": "write_file"' in step.payload["payload"]
    edited = '{"tool": "write_file", "args": {"path": "b.txt", "content": "y"}}'
    ctrl.clutch.resolve(step.uid, True, {"payload": edited})
    wait_for(lambda: ctrl.clutch.pending() and ctrl.clutch.pending()[0].uid != step.uid)
    ctrl.clutch.resolve(ctrl.clutch.pending()[0].uid, False, {"reason": "never"})
    assert conductor.join(10)
    assert verdicts[0].approved and verdicts[0].args == {"path": "b.txt", "content": "y"}
    assert not verdicts[1].approved and verdicts[1].reason == "never"


def test_a_failed_attempt_gets_a_tier4_patch_behind_an_approval(run_track) -> None:
    def respond(call: Call) -> str:
        if call.tier == "Tier 4" and "Write a patch" in call.message:
            return "```diff\n--- a/mod.py\n+++ b/mod.py\n@@ -1 +1 @@\n-X = 1\n+X = 2\n```"
        if call.tier == "Tier 4":
            return "QA: X must be 2"
        if len(client.tier_calls("Tier 3")) == 1:
            return "FAILED: assert X == 2"
        return "fixed"

    client = FakeTierClient(respond=respond)
    ctrl, conductor = run_track(
        [Ticket("a", "x", target_files=["mod.py"])], client, policy="manual", start=False
    )
    (ctrl.base_dir() / "mod.py").write_text("X = 1\n")
    conductor.start()
    wait_for(lambda: ctrl.clutch.pending())
    spawn = ctrl.clutch.pending()[0]
    assert "X = 1" in spawn.payload["context_md"]  # the focus file in full
    ctrl.clutch.resolve(spawn.uid, True)
    wait_for(lambda: ctrl.clutch.pending())
    patch = ctrl.clutch.pending()[0]
    assert patch.kind == "tool_approval" and patch.payload["tool"] == "apply_patch"
    assert "+X = 2" in patch.payload["diff"]
    ctrl.clutch.resolve(patch.uid, True)
    assert conductor.join(10) and conductor.status is ConductorStatus.DONE
    assert (ctrl.base_dir() / "mod.py").read_text() == "X = 2\n"
    assert "A Tier 4 patch was applied to: mod.py" in client.tier_calls("Tier 3")[1].message


def test_a_ticket_failing_three_times_is_replanned_after_approval(run_track) -> None:
    def respond(call: Call) -> str:
        if call.tier == "Tier 2":
            return '{"tickets": [{"id": "b2", "description": "another way", "depends_on": ["a"]}]}'
        if call.ticket_id == "b":
            raise RuntimeError("cannot")
        return default_responder(call)

    client = FakeTierClient(respond=respond)
    ctrl, conductor = run_track(
        [Ticket("a", "x"), Ticket("b", "y", depends_on=["a"]), Ticket("c", "z", depends_on=["b"])],
        client,
        policy="allow_list",
    )
    ctrl.clutch.set_rules([__import__("manual_slop.clutch").clutch.AllowRule("mma_spawn")])
    wait_for(lambda: ctrl.clutch.pending())
    replan = ctrl.clutch.pending()[0]
    assert replan.kind == "mma_step" and '"replaces": [\n    "b",\n    "c"\n  ]' in replan.payload["payload"]
    ctrl.clutch.resolve(replan.uid, True)
    assert conductor.join(10) and conductor.status is ConductorStatus.DONE
    assert [(t.id, t.status) for t in conductor.track.tickets] == [("a", "completed"), ("b2", "completed")]
    assert conductor.track.replan_count == 1


def test_a_critical_ticket_is_replanned_after_one_failure(run_track) -> None:
    def respond(call: Call) -> str:
        if call.tier == "Tier 2":
            return '{"tickets": [{"id": "k2", "description": "simpler", "depends_on": []}]}'
        if call.ticket_id == "k":
            raise RuntimeError("nope")
        return default_responder(call)

    client = FakeTierClient(respond=respond)
    ctrl, conductor = run_track([Ticket("k", "key step", critical=True)], client)
    assert conductor.join(10) and conductor.status is ConductorStatus.DONE
    assert len([c for c in client.tier_calls("Tier 3") if c.ticket_id == "k"]) == 1
    assert [t.id for t in conductor.track.tickets] == ["k2"] and conductor.track.replan_count == 1
    audit = (ctrl.session_log.root / "audit.log").read_text()
    assert '"kind": "mma_step"' in audit and '"rule": "policy=auto"' in audit  # auto-approved, and audited


def test_step_mode_starts_one_ticket_per_step(run_track) -> None:
    client = FakeTierClient()
    _, conductor = run_track([Ticket("a", "x"), Ticket("b", "y")], client, auto_queue=False)
    time.sleep(0.15)
    assert client.calls == []
    conductor.step()
    wait_for(lambda: conductor.track.ticket("a").status is TicketStatus.COMPLETED)
    time.sleep(0.1)
    assert conductor.track.ticket("b").status is TicketStatus.TODO
    conductor.step()
    assert conductor.join(10) and conductor.status is ConductorStatus.DONE


def test_fault_injection_200_tickets_20_percent_failures(run_track) -> None:
    rng = random.Random(7)
    lock = threading.Lock()

    def respond(call: Call) -> str:
        with lock:
            fail = rng.random() < 0.2
        if fail:
            raise ConnectionError("injected fault")
        return default_responder(call)

    tickets = []
    for i in range(200):
        deps = sorted({f"t{rng.randrange(i)}" for _ in range(rng.randint(0, 2))}) if i else []
        tickets.append(Ticket(f"t{i}", f"ticket {i}", depends_on=deps))
    client = FakeTierClient(respond=respond)
    _, conductor = run_track(tickets, client, max_replans=0, tier4_patches=False)
    assert conductor.join(120), "the track did not finish (deadlock?)"
    statuses = [t.status for t in conductor.track.tickets]
    assert set(statuses) <= {TicketStatus.COMPLETED, TicketStatus.BLOCKED, TicketStatus.KILLED}
    assert statuses.count(TicketStatus.COMPLETED) > 100
    assert sum(t.retry_count for t in conductor.track.tickets) > 20  # the faults really happened
    for ticket in conductor.track.tickets:
        if ticket.status is TicketStatus.BLOCKED:
            assert ticket.blocked_by or ticket.retry_count == 2, ticket
    assert conductor.status in (ConductorStatus.DONE, ConductorStatus.BLOCKED)
    assert worker_threads() == []


def test_a_worker_cannot_complete_a_ticket_by_its_word_alone(run_track) -> None:
    """Every edit failed, or nothing changed while the ticket names files: not completed."""

    def respond(call: Call) -> str:
        if call.tier == "Tier 4":
            return "QA: the edit did not apply"
        if call.ticket_id == "edits_failed":
            call.ran("edit_file", "error", message="old_string was not found in mod.py")
            return "Done, I updated mod.py."
        if call.ticket_id == "did_nothing":
            call.ran("read_file", "success", mutating=False)
            return "Done."
        if call.ticket_id == "did_it":
            call.ran("edit_file", "error", message="old_string was not found")
            call.write("app.py", "fixed\n")  # a real change in the attempt's tree: its patch lands
            return "Done."
        return default_responder(call)

    client = FakeTierClient(respond=respond)
    tickets = [
        Ticket("edits_failed", "fix mod.py", target_files=["mod.py"]),
        Ticket("did_nothing", "fix util.py", target_files=["util.py"]),
        Ticket("did_it", "fix app.py", target_files=["app.py"]),
        Ticket("just_answer", "explain the design"),  # no files to change: its word is enough
    ]
    _, conductor = run_track(tickets, client, max_replans=0, tier4_patches=False)
    assert conductor.join(10)
    track = conductor.track
    failed = track.ticket("edits_failed")
    assert failed.status is TicketStatus.BLOCKED and failed.retry_count == 2  # retried with Tier 4 first
    assert "every change it tried failed" in failed.blocked_reason
    assert "edit_file (error): old_string was not found in mod.py" in failed.blocked_reason
    nothing = track.ticket("did_nothing")
    assert nothing.status is TicketStatus.BLOCKED
    assert "without changing anything; the ticket asks for changes to util.py" in nothing.blocked_reason
    assert track.ticket("did_it").status is TicketStatus.COMPLETED
    assert (conductor.base_dir / "app.py").read_text() == "fixed\n"
    assert track.ticket("just_answer").status is TicketStatus.COMPLETED
    assert len([c for c in client.tier_calls("Tier 4") if "old_string" in c.message]) >= 1  # QA saw why
    assert conductor.status is ConductorStatus.BLOCKED
