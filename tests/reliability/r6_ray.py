"""R6 on the Ray backend: Tier 3 attempts as tasks on a real local Ray cluster (started here,
stopped before the suite counts processes), each running the real AI client inside its task
against one OpenAI-compatible fake, whose scripted model fails 20 % of the attempts.

The fake plays each ticket's model: an attempt of an even ticket writes ``<ticket>.txt`` in
its scratch tree (``write_file``, a patch the app merges), then answers; an odd one answers at
once. A failed attempt is a 400 (the send inside the task raises: a failed attempt) or a
garbage answer, as the threads backend's scripted Tier 3 raises or answers garbage.
"""

from __future__ import annotations

import json
import random
import re
import threading
from collections import Counter
from collections.abc import Callable
from typing import Any

from manual_slop.headless import HeadlessTicker
from manual_slop.mma.backends.ray_attempts import RayAttempts
from manual_slop.mma.backends.ray_backend import RaySettings
from tests.fakes import Call, Fail, OpenAIFake, Recorded, Reply, Turn

__all__ = ["RayRig", "ray_model"]

KEY = "sk-r6-ray-7c1d"
# the ticket the attempt is for: the Tier 3 prompt says "Ticket <id>: <description>"
_TICKET = re.compile(r"Ticket ([ta]\d+):")


def ray_model(
    seed: int, pause_s: tuple[float, float], failure_rate: float, garbage: tuple[str, ...]
) -> tuple[Callable[[Recorded], Turn], Counter[str]]:
    """The fake's responder for one track, and the count of what it drew per attempt."""
    rng, lock, drawn = random.Random(seed), threading.Lock(), Counter[str]()

    def respond(request: Recorded) -> Turn:
        body = request.body if isinstance(request.body, dict) else {}
        messages = body.get("messages") or [{}]
        with lock:
            roll, think, junk = rng.random(), rng.uniform(*pause_s), rng.choice(garbage)
        if messages[-1].get("role") == "tool":  # the file is written: the attempt's answer
            return Reply("done", delay=think)
        found = _TICKET.search(json.dumps(messages))
        ticket = found.group(1) if found else "?"
        with lock:
            outcome = (
                "raised" if roll < failure_rate / 2 else "garbage" if roll < failure_rate else "answered"
            )
            drawn[outcome] += 1
        if outcome == "raised":
            return Fail(400, delay=think)  # not retried: the send in the task fails
        if outcome == "garbage":
            return Reply(junk, delay=think)
        if int(ticket[1:] or 0) % 2 == 0:
            return Reply(calls=[Call("write_file", {"path": f"{ticket}.txt", "content": f"done {ticket}\n"})])
        return Reply(f"done {ticket}", delay=think)

    return respond, drawn


class RayRig:
    """One fake for every track (its responder is the current track's), the app's frame loop on
    a thread, and one local Ray cluster (started at once: its start-up is not a track's time)."""

    def __init__(self, ctrl: Any) -> None:
        self.ctrl = ctrl
        self.fake = OpenAIFake(api_key=KEY, models=["m"])
        self.current: Callable[[Recorded], Turn] = lambda request: Fail(500)
        self.fake.responder = lambda request: self.current(request)
        self.fake.start()
        # the tools' context and dialogs are served by the frame loop, as in the app
        self.ticker = threading.Thread(target=HeadlessTicker(ctrl).run, name="r6-ticker", daemon=True)
        self.ticker.start()
        settings = {
            "provider": "openai_compatible",
            "model": "m",
            "base_url": self.fake.base_url,
            "api_key": KEY,
        }
        # half a CPU a task: four attempts at once on a two-core machine
        self.remote = RayAttempts(
            RaySettings(address="", num_cpus=0.5, max_retries=0), lambda: dict(settings)
        )
        self.remote.runner.start()
        self.closed = False

    def close(self) -> None:
        """Stop the cluster (every raylet, GCS and worker process), the fake and the frame loop."""
        if self.closed:
            return
        self.closed = True
        self.remote.stop()
        self.fake.stop()
        self.ctrl.request_stop()
        self.ticker.join(5.0)
