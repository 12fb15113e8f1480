"""Tier 3 attempts as tasks on a real local two-node Ray cluster (started and stopped here): the
project travels as a git bundle, the credential only in the task's environment, the worker's
step dialog comes back to the app and waits for its answer, a node that dies mid-attempt
costs one retry on the other node, and an abort cancels the task within 2 s."""

from __future__ import annotations

import json
import pickle
import re
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from manual_slop.mma.backends.ray_attempts import RayAttempts
from manual_slop.mma.backends.ray_backend import (
    AttemptRequest,
    RayCluster,
    RaySettings,
    RayTicketRunner,
    split_credentials,
)
from manual_slop.mma.conductor import ConductorStatus
from manual_slop.mma.models import Ticket, TicketStatus
from manual_slop.mma.snapshot import Snapshot
from manual_slop.mma.worktree import ScratchTree
from tests.fakes import Call, OpenAIFake, Reply
from tests.integration.mma_ray.rig import KEY, provider_settings, track_rig

ray = pytest.importorskip("ray", reason="Ray is an optional extra: pip install 'manual-slop[ray]'")


@pytest.fixture(scope="module")
def cluster() -> Iterator[Any]:
    from ray.cluster_utils import Cluster

    # a dead node is noticed within about a second (the default waits much longer)
    system = {
        "health_check_initial_delay_ms": 0,
        "health_check_period_ms": 200,
        "health_check_failure_threshold": 3,
    }
    made = Cluster(
        initialize_head=True,
        head_node_args={"num_cpus": 1, "include_dashboard": False, "_system_config": system},
    )
    made.add_node(num_cpus=1, resources={"spare": 1})
    made.wait_for_nodes()
    yield made
    made.shutdown()


class Runner:
    """A runner on the cluster whose dialogs are decided by ``decide`` and recorded."""

    def __init__(self, cluster: Any, decide: Any = lambda req: {"approved": True}) -> None:
        self.asked: list[dict[str, Any]] = []
        self.connection = RayCluster(RaySettings(address=cluster.address, max_retries=2))

        def ask(req: dict[str, Any]) -> dict[str, Any]:
            self.asked.append(req)
            return decide(req)

        self.runner = RayTicketRunner(self.connection, ask)

    def __enter__(self) -> Runner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.runner.stop()
        self.connection.stop()


def make_project(folder: Path) -> Path:
    project = folder / "project"
    project.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=project, check=True)
    (project / "a.txt").write_text("alpha\n")
    return project


def wait_for_model_calls(fake: OpenAIFake, count: int, timeout: float = 60.0) -> None:
    """Until ``count`` model calls arrived (a client may also list the models first)."""
    deadline = time.monotonic() + timeout
    while len(fake.model_calls()) < count:
        assert time.monotonic() < deadline, f"{len(fake.model_calls())} of {count} model calls arrived"
        time.sleep(0.05)


def wait_until(predicate: Any, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.05)


def attempt(fake: OpenAIFake, ticket: str = "T1") -> AttemptRequest:
    settings = {"provider": "openai_compatible", "model": "m", "base_url": fake.base_url, "api_key": KEY}
    return AttemptRequest(ticket, "Write b.txt saying 'from ray'.", "# context", settings)


@pytest.mark.heavy(60)  # one test, one cluster: xdist cannot spread the scenarios over two clusters
def test_attempts_and_tracks_on_a_two_node_cluster(cluster: Any, tmp_path: Path, make_controller) -> None:
    """Every scenario on the one cluster (those that kill the spare node last)."""
    for scenario in (runs_remotely, rejected_step, abort_cancels):
        folder = tmp_path / scenario.__name__
        folder.mkdir()
        scenario(cluster, make_project(folder))
    for track_scenario in (diamond_is_identical_on_threads_and_ray, track_abort_cancels_every_task):
        track_scenario(cluster, tmp_path, make_controller)
    track_survives_a_dead_node(cluster, tmp_path, make_controller)  # last: the spare node dies


def runs_remotely(cluster: Any, project: Path) -> None:
    """The attempt runs remotely, its step asks here, and its patch comes back."""
    turns = [Reply(calls=[Call("write_file", {"path": "b.txt", "content": "from ray\n"})]), Reply("done")]
    with (
        Runner(cluster) as made,
        OpenAIFake(turns, api_key=KEY, models=["m"]) as fake,
        ScratchTree(project) as tree,
    ):
        request = attempt(fake)
        submission, ref = made.runner.submit(request, Snapshot.of(tree))
        outcome = made.runner.result(submission, ref, threading.Event())
        beats = made.runner.heartbeats()[submission]
    assert outcome is not None and outcome["answer"] == "done"
    assert "+from ray" in outcome["patch"] and "b/b.txt" in outcome["patch"]
    assert not (project / "b.txt").exists()  # the project changes only when the patch is merged
    assert [(a["tool"], a["args"]["path"]) for a in made.asked] == [("write_file", "b.txt")]  # asked here
    assert [c["tool"] for c in outcome["tool_calls"]] == ["write_file"] and outcome["starts"] == 1
    # the key reached the provider (the fake refuses any other) but travelled in no argument
    clean, env = split_credentials(request.settings)
    assert KEY not in repr(pickle.dumps(clean)) and env == {"SLOP_RAY_KEY_OPENAI_COMPATIBLE": KEY}
    assert beats[0]["ticket"] == "T1" and beats[0]["node"] and beats[0]["last_event"] == "finished"


def rejected_step(cluster: Any, project: Path) -> None:
    """A step the user rejects never reaches the patch."""
    turns = [Reply(calls=[Call("write_file", {"path": "b.txt", "content": "x"})]), Reply("gave up")]
    decide = lambda req: {"approved": False, "reason": "no"}  # noqa: E731
    with (
        Runner(cluster, decide) as made,
        OpenAIFake(turns, api_key=KEY, models=["m"]) as fake,
        ScratchTree(project) as tree,
    ):
        submission, ref = made.runner.submit(attempt(fake), Snapshot.of(tree))
        outcome = made.runner.result(submission, ref, threading.Event())
    assert outcome is not None and outcome["patch"] == "" and len(made.asked) == 1
    assert outcome["tool_calls"][0]["status"] == "rejected"


def abort_cancels(cluster: Any, project: Path) -> None:
    """An abort cancels the running task within 2 s."""
    with (
        Runner(cluster) as made,
        OpenAIFake([Reply("late", delay=30)], api_key=KEY, models=["m"]) as fake,
        ScratchTree(project) as tree,
    ):
        submission, ref = made.runner.submit(attempt(fake), Snapshot.of(tree))
        wait_for_model_calls(fake, 1)  # the task is running and waiting on the model
        abort = threading.Event()
        abort.set()
        started = time.monotonic()
        assert made.runner.result(submission, ref, abort) is None
        with pytest.raises((ray.exceptions.TaskCancelledError, ray.exceptions.WorkerCrashedError)):
            ray.get(ref, timeout=10)
        assert time.monotonic() - started < 2.0


# -- whole tracks through the conductor ----------------------------------------------------------
DIAMOND = 20  # t00 -> t01 … t18 -> t19
# a ticket's slot, then two lines nobody edits: edits that touch would conflict (as in git)
SLOTS = "".join(f"slot {i:02d}\n--\n--\n" for i in range(DIAMOND))


def diamond() -> list[Ticket]:
    middle = [f"t{i:02d}" for i in range(1, DIAMOND - 1)]
    tickets = [Ticket("t00", "write the base", target_files=["out/t00.txt"])]
    tickets += [
        Ticket(t, f"fill {t}'s slot", target_files=["shared.txt"], depends_on=["t00"]) for t in middle
    ]
    tickets.append(Ticket(f"t{DIAMOND - 1}", "sum up", target_files=["out/end.txt"], depends_on=middle))
    return tickets


def scripted(request: Any) -> Reply:
    """Each ticket's model: one edit of its own (found by the ticket id in the prompt), then done."""
    messages = request.body["messages"]
    if messages[-1]["role"] == "tool":
        return Reply("done")
    ticket = re.search(r"Ticket (t\d+):", json.dumps(messages)).group(1)  # type: ignore[union-attr]
    number = int(ticket[1:])
    if number in (0, DIAMOND - 1):
        name = "out/t00.txt" if number == 0 else "out/end.txt"
        return Reply(calls=[Call("write_file", {"path": name, "content": f"made by {ticket}\n"})])
    edit = {
        "path": "shared.txt",
        "old_string": f"slot {number:02d}\n",
        "new_string": f"slot {number:02d} by {ticket}\n",
    }
    return Reply(calls=[Call("edit_file", edit)])


def files_of(base: Path) -> dict[str, bytes]:
    """The project's files, without the app's own (its config names the fake's port)."""
    return {p.relative_to(base).as_posix(): p.read_bytes() for p in sorted(base.rglob("*")) if p.is_file()
            and not {".git", ".slop_cache", "conductor", "logs"} & set(p.relative_to(base).parts)
            and not (p.parent == base and p.suffix == ".toml")}  # fmt: skip


def diamond_is_identical_on_threads_and_ray(cluster: Any, tmp_path: Path, make_controller: Any) -> None:
    """A 20-ticket diamond gives byte-identical project trees on threads and on Ray."""
    trees = {}
    for backend in ("threads", "ray"):
        fake = OpenAIFake(api_key=KEY, models=["m"])
        fake.responder = scripted
        fake.start()
        remote = None
        if backend == "ray":
            remote = RayAttempts(RaySettings(address=cluster.address), lambda f=fake: provider_settings(f))
        rig = track_rig(
            tmp_path / f"diamond_{backend}",
            make_controller,
            diamond(),
            remote,
            fake,
            files={"shared.txt": SLOTS},
        )
        try:
            rig.conductor.start()
            assert rig.conductor.join(120), f"{backend}: the track did not end"
            assert rig.conductor.status is ConductorStatus.DONE, (
                backend,
                [(t.id, str(t.status), t.blocked_reason) for t in rig.conductor.track.tickets],
            )
            trees[backend] = files_of(rig.ctrl.base_dir())
        finally:
            rig.close()
            if remote is not None:
                remote.stop()
    assert trees["threads"] == trees["ray"]
    shared = trees["ray"]["shared.txt"].decode()
    assert all(f"slot {i:02d} by t{i:02d}" in shared for i in range(1, DIAMOND - 1))  # 18 three-way merges
    assert trees["ray"]["out/end.txt"] == b"made by t19\n"


def track_abort_cancels_every_task(cluster: Any, tmp_path: Path, make_controller: Any) -> None:
    """Abort during a Ray run: every task is cancelled within 2 s, no patch is applied."""
    fake = OpenAIFake(api_key=KEY, models=["m"])
    fake.responder = lambda request: Reply("too late", delay=60)
    fake.start()
    remote = RayAttempts(RaySettings(address=cluster.address), lambda: provider_settings(fake))
    tickets = [Ticket(f"s{i}", "slow", target_files=["x.txt"]) for i in range(2)]
    rig = track_rig(tmp_path / "abort", make_controller, tickets, remote, fake)
    try:
        before = files_of(rig.ctrl.base_dir())
        rig.conductor.start()
        wait_for_model_calls(fake, 2)  # both tasks are waiting on the model
        started = time.monotonic()
        rig.conductor.abort(wait=5.0)
        assert rig.conductor.join(5.0)
        beats = remote.heartbeats()
        assert time.monotonic() - started < 2.0 + 0.5  # the abort's own bookkeeping, within reason
        assert len(beats) == 2 and all(b[-1]["last_event"] == "started" for b in beats.values())
        assert files_of(rig.ctrl.base_dir()) == before  # no patch applied
        assert {t.status for t in rig.conductor.track.tickets} == {TicketStatus.KILLED}
    finally:
        rig.close()
        remote.stop()


def track_survives_a_dead_node(cluster: Any, tmp_path: Path, make_controller: Any) -> None:
    """The spare node dies mid-run: the track completes, the ticket on it shows one retry."""
    spare = next(iter(cluster.worker_nodes))
    fake = OpenAIFake(api_key=KEY, models=["m"])
    state = {"calls": 0}

    def respond(request: Any) -> Reply:
        state["calls"] += 1
        if state["calls"] == 1:
            return Reply("never seen", delay=60)  # the first attempt hangs on the spare node
        return scripted(request)

    fake.responder = respond
    fake.start()
    dashboard: list[list[dict[str, Any]]] = []  # what the MMA dashboard is sent
    remote = RayAttempts(
        RaySettings(address=cluster.address, max_retries=2),
        lambda: provider_settings(fake),
        placement=lambda ticket: spare.node_id,
        on_workers=dashboard.append,
    )
    rig = track_rig(tmp_path / "dead_node", make_controller, diamond()[:1], remote, fake)
    try:
        rig.conductor.start()
        wait_for_model_calls(fake, 1)
        cluster.remove_node(spare, allow_graceful=False)
        assert rig.conductor.join(90) and rig.conductor.status is ConductorStatus.DONE
        ticket = rig.conductor.track.ticket("t00")
        assert ticket.status is TicketStatus.COMPLETED and ticket.retry_count == 1
        [starts] = remote.heartbeats().values()  # one attempt, which Ray started twice
        assert [b["node"] == spare.node_id for b in starts] == [True, False]
        wait_until(lambda: dashboard and dashboard[-1][-1]["last_event"] == "finished")
        [row] = dashboard[-1]
        assert row["ticket"] == "t00" and row["starts"] == 2 and row["node"] == starts[1]["node"][:12]
        assert (rig.ctrl.base_dir() / "out/t00.txt").read_text() == "made by t00\n"
    finally:
        rig.close()
        remote.stop()
