"""Tier 3 attempts as tasks on a real local two-node Ray cluster (started and stopped here): the
project travels as a git bundle, the credential only in the task's environment, the worker's
step dialog comes back to the app and waits for its answer, a node that dies mid-attempt
costs one retry on the other node, and an abort cancels the task within 2 s."""

from __future__ import annotations

import pickle
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from manual_slop.mma.backends.ray_backend import (
    AttemptRequest,
    RayCluster,
    RaySettings,
    RayTicketRunner,
    split_credentials,
)
from manual_slop.mma.snapshot import Snapshot
from manual_slop.mma.worktree import ScratchTree
from tests.fakes import Call, OpenAIFake, Reply

KEY = "sk-ray-test-4f1e9a"
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


def attempt(fake: OpenAIFake, ticket: str = "T1") -> AttemptRequest:
    settings = {"provider": "openai_compatible", "model": "m", "base_url": fake.base_url, "api_key": KEY}
    return AttemptRequest(ticket, "Write b.txt saying 'from ray'.", "# context", settings)


@pytest.mark.heavy(30)  # one test, one cluster: xdist cannot spread the scenarios over two clusters
def test_attempts_on_a_two_node_cluster(cluster: Any, tmp_path: Path) -> None:
    """Every scenario on the one cluster (the node scenario last: it kills the spare node)."""
    for scenario in (runs_remotely, rejected_step, abort_cancels, dead_node_retries):
        folder = tmp_path / scenario.__name__
        folder.mkdir()
        scenario(cluster, make_project(folder))


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
        fake.wait_for_requests(1, timeout=30)  # the task is running and waiting on the model
        abort = threading.Event()
        abort.set()
        started = time.monotonic()
        assert made.runner.result(submission, ref, abort) is None
        with pytest.raises((ray.exceptions.TaskCancelledError, ray.exceptions.WorkerCrashedError)):
            ray.get(ref, timeout=10)
        assert time.monotonic() - started < 2.0


def dead_node_retries(cluster: Any, project: Path) -> None:
    """A node that dies mid-attempt costs one retry, on the other node, seen by the app."""
    spare = next(iter(cluster.worker_nodes))
    turns = [Reply("first try", delay=30), Reply("second try")]
    with (
        Runner(cluster) as made,
        OpenAIFake(turns, api_key=KEY, models=["m"]) as fake,
        ScratchTree(project) as tree,
    ):
        submission, ref = made.runner.submit(attempt(fake), Snapshot.of(tree), prefer_node=spare.node_id)
        fake.wait_for_requests(1, timeout=30)
        cluster.remove_node(spare, allow_graceful=False)
        outcome = made.runner.result(submission, ref, threading.Event())
        beats = made.runner.heartbeats()[submission]
    assert outcome is not None and outcome["answer"] == "second try"
    assert outcome["starts"] == 2 and len(beats) == 2  # one retry
    assert beats[0]["node"] == spare.node_id and beats[1]["node"] != spare.node_id
