"""Durable approvals end to end: the real headless app (``sloppy.py --headless``) talking, as
DeepSeek, to the wire-level fake; a chat tool approval, an MMA spawn and an MMA step pending;
``kill -9``; a restart lists the same ids with the same payloads; approving each finishes its
work; ``audit.log`` (all sessions) has exactly one decision per id. Then the same with random
kill points (2 rounds here; ``make reliability`` runs 50 with ``SLOP_RELIABILITY_ROUNDS``)."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from manual_slop.hooks import ApiHookClient
from manual_slop.mma.models import Track
from manual_slop.mma.persistence import TrackStore
from tests.fakes import Call, OpenAIFake, Reply
from tests.fakes.http import Recorded
from tests.helpers import app_env
from tests.integration.test_cli import SLOPPY, reap

TRACK = "durable"
CHAT = "please write chat.txt"


def answer(request: Recorded) -> Reply | None:
    """The model, by content: ticket a writes alpha.txt, ticket b just reports, the chat writes
    chat.txt; each says it is done once its tool result is in the conversation."""
    messages = request.body.get("messages", []) if isinstance(request.body, dict) else []
    text = json.dumps(messages)
    answered = any(m.get("role") == "tool" for m in messages)
    if "Write alpha" in text:
        return Reply("Done: alpha written.") if answered else Reply(calls=[Call("write_file", ALPHA, "c_a")])
    if "Check beta" in text:
        return Reply("Done: beta checked.")
    if CHAT in text:
        return Reply("chat.txt written.") if answered else Reply(calls=[Call("write_file", CHAT_FILE, "c_c")])
    return Reply("ok")


ALPHA = {"path": "alpha.txt", "content": "alpha\n"}
CHAT_FILE = {"path": "chat.txt", "content": "chat\n"}


@pytest.fixture
def fake() -> Iterator[OpenAIFake]:
    with OpenAIFake() as server:
        server.responder = answer
        yield server


def prepare(root: Path, base_url: str) -> None:
    (root / "config.toml").write_text(
        '[ai]\nprovider = "deepseek"\nmodel = "deepseek-chat"\n\n'
        f'[providers.deepseek]\nbase_url = "{base_url}"\n'
        "\n[approval]\ntimeout_s = 300\n"
    )
    (root / "manual_slop.toml").write_text('[files]\npaths = ["alpha.txt", "chat.txt"]\n')
    track = Track.from_dict(
        {
            "id": TRACK,
            "title": "Durable",
            "tickets": [
                {"id": "a", "description": "Write alpha", "depends_on": []},
                {"id": "b", "description": "Check beta", "depends_on": []},
            ],
        }
    )
    TrackStore(root).save(track)


class App:
    """One run of the headless app in ``root``; ``kill()`` is ``kill -9``."""

    def __init__(self, root: Path) -> None:
        self.proc = subprocess.Popen(
            [
                sys.executable,
                str(SLOPPY),
                "--headless",
                "--config",
                str(root / "config.toml"),
                "--hook-port",
                "0",
            ],
            cwd=root,
            env=app_env(DEEPSEEK_API_KEY="sk-test"),
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        assert line.startswith("hook server listening on "), line
        self.api = ApiHookClient(line.split()[-1])
        self.api.wait_for_server(20)

    def kill(self) -> None:
        self.api.close()
        reap(self.proc)

    def stop(self) -> None:
        try:
            self.api.shutdown()
            self.proc.wait(20)
        finally:
            self.api.close()
            reap(self.proc)


def until(check: Callable[[], Any], timeout: float = 30.0, what: str = "") -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out waiting for {what or check}"
        time.sleep(0.02)


def pending_of(api: ApiHookClient) -> dict[tuple[str, str], dict[str, Any]]:
    """Pending dialogs by (kind, what): a ticket id, or the chat's tool."""
    return {(d["kind"], d["payload"].get("ticket_id", "chat")): d for d in api.pending()}


def three(found: dict[tuple[str, str], dict[str, Any]]) -> dict[tuple[str, str], dict[str, Any]] | None:
    return found if len(found) == 3 else None


def audited(root: Path) -> Counter[str]:
    ids: Counter[str] = Counter()
    for path in (root / "logs" / "sessions").glob("*/audit.log"):
        for line in path.read_text().splitlines():
            entry = json.loads(line)
            if entry.get("event") == "decision":
                ids[entry["id"]] += 1
    return ids


def journaled(root: Path) -> set[str]:
    ids: set[str] = set()
    for path in (root / "logs" / "sessions").glob("*/approvals.jsonl"):
        for line in path.read_text().splitlines():
            try:
                ids.add(json.loads(line)["id"])
            except (json.JSONDecodeError, KeyError):
                continue  # a torn last line
    return ids


def three_pending(root: Path) -> dict[tuple[str, str], dict[str, Any]]:
    """The AI client holds one send lock for a whole send, tool approvals included, so a live
    chat call and a worker's step never wait at once in one process. Session one: the chat's
    tool approval and both spawns wait; kill -9. Session two: the three are restored, a's spawn
    is approved, a's worker proposes its step; now a tool approval, a spawn and a step wait;
    returns them with session two still running."""
    first = App(root)
    try:
        api = first.api
        api.send(CHAT)
        until(lambda: ("tool_approval", "chat") in pending_of(api), what="the chat's tool approval")
        api.wait_for_task(api.click("btn_mma_start_track", TRACK))
        until(lambda: {("mma_spawn", "a"), ("mma_spawn", "b")} <= set(pending_of(api)), what="the spawns")
    finally:
        first.kill()
    second = App(root)
    api = second.api
    restored = until(lambda: three(pending_of(api)), what="restored dialogs")
    api.approve(restored[("mma_spawn", "a")]["id"])
    until(lambda: ("mma_step", "a") in pending_of(api), what="a's step")
    found = pending_of(api)
    assert set(found) == {("tool_approval", "chat"), ("mma_spawn", "b"), ("mma_step", "a")}
    assert found[("mma_spawn", "b")]["id"] == restored[("mma_spawn", "b")]["id"]
    second.kill()
    return found


def finish_everything(root: Path, app: App, timeout: float = 60.0) -> None:
    """Approve whatever is pending until the track is done and the chat's file exists; a track
    left unfinished with nothing to resume is started again by hand."""
    api = app.api
    deadline = time.monotonic() + timeout
    while True:
        assert time.monotonic() < deadline, (api.mma_status(), api.pending())
        for dialog in api.pending():
            api.approve(dialog["id"])
        status = api.mma_status()
        track_done = status["active_track"] is not None and status["active_track"]["status"] == "done"
        if track_done and not api.pending():
            return
        if status["status"] in ("idle", "done", "blocked") and not track_done and not api.pending():
            time.sleep(0.2)  # a restored track may be starting at the first frame
            if api.mma_status()["status"] in ("idle", "done", "blocked") and not api.pending():
                api.wait_for_task(api.click("btn_mma_start_track", TRACK))
        time.sleep(0.02)


@pytest.mark.heavy(20)
def test_pending_approvals_survive_kill_9_and_approving_each_finishes_its_work(
    tmp_path: Path, fake: OpenAIFake
) -> None:
    prepare(tmp_path, fake.base_url)
    before = three_pending(tmp_path)
    assert not (tmp_path / "alpha.txt").exists() and not (tmp_path / "chat.txt").exists()

    second = App(tmp_path)
    try:
        api = second.api
        after = until(lambda: three(pending_of(api)), what="three restored dialogs")
        assert {k: (d["id"], d["payload"]) for k, d in after.items()} == {
            k: (d["id"], d["payload"]) for k, d in before.items()
        }
        calls = len(fake.model_calls())
        api.approve(after[("tool_approval", "chat")]["id"])
        until(lambda: (tmp_path / "chat.txt").exists(), what="the chat's call to run")
        api.approve(after[("mma_step", "a")]["id"])
        patch = until(lambda: pending_of(api).get(("tool_approval", "a")), what="a's patch to be shown")
        assert "+alpha" in patch["payload"]["diff"]  # the step ran in a's scratch tree
        api.approve(patch["id"])
        until(lambda: (tmp_path / "alpha.txt").exists(), what="a's patch to land")
        api.approve(after[("mma_spawn", "b")]["id"])
        status = until(
            lambda: (s := api.mma_status())["active_track"]["status"] == "done" and s,
            what="the track to finish",
        )
        assert [(t["id"], t["status"]) for t in status["tickets"]] == [("a", "completed"), ("b", "completed")]
        assert api.pending() == []  # nothing was asked twice: a's spawn was not asked again
        assert len(fake.model_calls()) > calls
        notes = [n["message"] for n in api.get_value("notifications")]
        assert any("pending again" in n for n in notes), notes
    finally:
        second.stop()
    assert (tmp_path / "alpha.txt").read_text() == "alpha\n" and (
        tmp_path / "chat.txt"
    ).read_text() == "chat\n"
    history = (tmp_path / "manual_slop_history.toml").read_text()
    assert "approved after a restart" in history and before[("tool_approval", "chat")]["id"] in history
    counts = audited(tmp_path)
    for dialog in before.values():
        assert counts[dialog["id"]] == 1, dialog["kind"]
    assert max(counts.values()) == 1


def rounds() -> int:
    return int(os.environ.get("SLOP_RELIABILITY_ROUNDS", "2"))


@pytest.mark.heavy(30)  # 2 rounds of three app starts
@pytest.mark.timeout(60 + 40 * rounds())  # ~13 s a round alone on two cores; make reliability runs 50
def test_random_kill_points_never_lose_or_duplicate_a_decision(tmp_path: Path, fake: OpenAIFake) -> None:
    rng = random.Random(int(os.environ.get("SLOP_RELIABILITY_SEED", "18")))
    started = time.monotonic()
    for n in range(rounds()):
        root = tmp_path / f"round{n}"
        root.mkdir()
        prepare(root, fake.base_url)
        first = App(root)
        try:  # kill somewhere between the chat's dialog and a worker waiting for the send lock
            stage = rng.randrange(3)
            api = first.api
            api.send(CHAT)
            until(lambda api=api: ("tool_approval", "chat") in pending_of(api))
            if stage >= 1:
                api.wait_for_task(api.click("btn_mma_start_track", TRACK))
                until(lambda api=api: ("mma_spawn", "a") in pending_of(api))
            if stage >= 2:
                api.approve(pending_of(api)[("mma_spawn", "a")]["id"])
                time.sleep(rng.uniform(0.0, 0.3))
        finally:
            first.kill()
        second = App(root)
        try:  # kill again in the middle of the approvals (a's step may be waiting by then)
            api = second.api
            until(api.pending, what="restored dialogs")
            for _ in range(rng.randrange(5)):
                waiting = api.pending()
                if waiting:
                    api.approve(rng.choice(waiting)["id"])
                time.sleep(rng.uniform(0.0, 0.2))
        finally:
            second.kill()
        third = App(root)
        try:
            finish_everything(root, third)
        finally:
            third.stop()
        counts = audited(root)
        assert max(counts.values()) == 1, f"round {n}: a decision twice: {counts}"
        lost = journaled(root) - set(counts)
        assert not lost, f"round {n}: journaled but never decided: {lost}"
    per_round = (time.monotonic() - started) / rounds()
    print(f"\n{rounds()} rounds, {per_round:.2f} s per round")
