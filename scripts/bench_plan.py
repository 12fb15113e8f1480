#!/usr/bin/env python3
"""What a /plan run costs around its model calls, measured side by side in one run.

The app runs headless (controller + ticker) with the real AI client talking to the wire-level
OpenAI-compatible fake (as DeepSeek); the approval policy is ``auto`` so nothing waits for a
human. Every subtask's model call answers after ``DELAY_S``.

1. Parallel groups: N subtasks in ONE group versus the same N subtasks in N groups (a chain).
   The chain's span is N times the delay plus overhead; one group should take about one delay
   (4 workers). Printed: the chain / one group (ideal: N).
2. Overhead: a plan of N instant subtasks in one group, from approval to done (merge included),
   versus the same number of plain sends of the client one after another (+ one for the merge).

Run: ``.venv/bin/python scripts/bench_plan.py`` — prints ratios (same run, same machine).
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT)]

from tests.fakes import OpenAIFake, Recorded, Reply  # noqa: E402

from manual_slop.ai import AIClient, RetryPolicy  # noqa: E402
from manual_slop.controller import AppController, LaunchOptions  # noqa: E402
from manual_slop.headless import HeadlessTicker  # noqa: E402

N = 4
DELAY_S = 0.5
ROUNDS = 3


def plan_of(groups: list[int]) -> dict[str, Any]:
    subtasks = [
        {"id": f"S{i + 1}", "title": f"Part {i + 1}", "objective": f"Do part {i + 1} of the work",
         "agent_key": "worker", "engine": "llm", "parallel_group": group,
         "depends_on": [f"S{i}"] if group > 1 else []}
        for i, group in enumerate(groups)
    ]  # fmt: skip
    return {"subtasks": subtasks, "merge": {"strategy": "list the parts"}}


class App:
    def __init__(self, folder: Path, fake: OpenAIFake) -> None:
        self.ctrl = AppController(
            folder / "config.toml",
            options=LaunchOptions(headless=True),
            environ={"DEEPSEEK_API_KEY": "sk-bench"},
            backend=AIClient(retry=RetryPolicy(base_delay_s=0.01)),
        )
        ticker = HeadlessTicker(self.ctrl)
        self.ticker = threading.Thread(target=ticker.run, name="bench-ticker", daemon=True)
        self.ticker.start()
        for name, value in (
            ("current_provider", "deepseek"),
            ("provider_base_url", fake.base_url),
            ("approval_policy", "auto"),
        ):
            self.main(lambda n=name, v=value: self.ctrl.fields.set(n, v))
        self.main(lambda: self.ctrl.agents.save("worker", {"system_prompt": "You do one part."}))

    def main(self, fn: Any) -> Any:
        return self.ctrl.call_on_main(fn, timeout=10)

    def run_plan(self, goal: str) -> dict[str, Any]:
        plan_id = self.main(lambda: self.ctrl.plans.start(goal))
        deadline = time.monotonic() + 120
        while True:
            plan = self.main(lambda: self.ctrl.plans.get(plan_id))
            if plan["status"] in ("done", "failed", "aborted", "invalid", "rejected"):
                assert plan["status"] == "done", plan["metadata"]
                return plan
            assert time.monotonic() < deadline, plan["status"]
            time.sleep(0.01)

    def close(self) -> None:
        self.ctrl.request_stop()
        self.ticker.join(10)


def span(plan: dict[str, Any]) -> float:
    subtasks = plan["subtasks"]
    return max(s["finished_at"] for s in subtasks) - min(s["started_at"] for s in subtasks)


def main() -> None:
    current: dict[str, Any] = {"plan": None, "delay": 0.0}

    def respond(request: Recorded) -> Reply | None:
        body = request.body if isinstance(request.body, dict) else {}
        user = str([m for m in body.get("messages", []) if m.get("role") == "user"][-1]["content"])
        if "You are the task planner" in user:
            return Reply(json.dumps(current["plan"]))
        if user.startswith("Overall goal:"):
            return Reply("part done", delay=current["delay"])
        return Reply("merged")

    with tempfile.TemporaryDirectory() as tmp, OpenAIFake() as fake:
        fake.responder = respond
        app = App(Path(tmp), fake)
        try:
            chain, group, overhead, plain = [], [], [], []
            for _ in range(ROUNDS):
                current.update(plan=plan_of([1] * N), delay=DELAY_S)
                group.append(span(app.run_plan("one group")))
                current.update(plan=plan_of(list(range(1, N + 1))), delay=DELAY_S)
                chain.append(span(app.run_plan("a chain")))
                current.update(plan=plan_of([1] * N), delay=0.0)
                plan = app.run_plan("instant")
                first = min(s["started_at"] for s in plan["subtasks"])
                overhead.append(plan["metadata"]["merged_at"] - first)
                client = app.ctrl.backend.fork()
                client.apply_settings(app.main(app.ctrl.ai_settings))
                t0 = time.perf_counter()
                for _ in range(N + 1):  # the subtasks and the merge, one after another
                    client.send("", "Overall goal: x", enable_tools=False)
                plain.append(time.perf_counter() - t0)
                client.release()
        finally:
            app.close()
    g, c = statistics.median(group), statistics.median(chain)
    o, p = statistics.median(overhead), statistics.median(plain)
    print(f"{N} subtasks answering after {DELAY_S} s each, {ROUNDS} rounds (medians):")
    print(f"  one group: {g:.2f} s; a chain of {N} groups: {c:.2f} s; chain / group: {c / g:.2f} (ideal {N})")
    print(f"  instant subtasks, first start to merged: {o * 1000:.0f} ms; {N + 1} plain sends one after "
          f"another: {p * 1000:.0f} ms; ratio {o / p:.2f}")


if __name__ == "__main__":
    main()
