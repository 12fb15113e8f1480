#!/usr/bin/env python3
"""MMA at scale: the wall time of one track on the threads backend and on a local Ray cluster.

A track of N independent tickets (40 by default); each ticket's model answers after 0.5 s (the
OpenAI-compatible fake) with one ``run_shell`` call that burns 0.5 s of CPU in the ticket's
scratch tree, then says it is done; its patch (one new file) is merged into the project. The same
track runs at 1, 2 and 4 workers on threads and on Ray (a local cluster of this machine's cores;
``--ray-cpus`` per ticket), side by side in one run. It prints the wall times, the speed-up over
one worker on the same backend, and Ray's overhead per ticket (Ray's wall time minus the threads'
at the same worker count, divided by the tickets).

Run: ``.venv/bin/python scripts/bench_mma_scale.py [--tickets 40] [--workers 1 2 4]``
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # tests.fakes, the track rig
sys.path.insert(0, str(ROOT / "src"))

from tests.fakes import Call, OpenAIFake, Reply  # noqa: E402
from tests.integration.mma_ray.rig import provider_settings, track_rig  # noqa: E402

from manual_slop.controller import AppController, LaunchOptions  # noqa: E402
from manual_slop.mma.backends.ray_attempts import RayAttempts  # noqa: E402
from manual_slop.mma.backends.ray_backend import RaySettings  # noqa: E402
from manual_slop.mma.conductor import ConductorStatus  # noqa: E402
from manual_slop.mma.models import Ticket  # noqa: E402

MODEL_S = 0.5
BURN = "import time; t = time.process_time()\nwhile time.process_time() - t < 0.5: pass"


def respond(request: Any) -> Reply:
    messages = request.body["messages"]
    if messages[-1]["role"] == "tool":
        return Reply("done")
    ticket = re.search(r"Ticket (b\d+):", json.dumps(messages)).group(1)  # type: ignore[union-attr]
    command = f"python3 -c '{BURN}' && echo {ticket} > {ticket}.txt"
    return Reply(calls=[Call("run_shell", {"script": command})], delay=MODEL_S)


def run_track(backend: str, workers: int, tickets: int, folder: Path, ray_cpus: float) -> float:
    made: list[AppController] = []

    def make_controller(**kwargs: Any) -> AppController:
        config = kwargs.pop("config_file")
        controller = AppController(config, options=LaunchOptions(headless=True), **kwargs)
        made.append(controller)
        return controller

    fake = OpenAIFake(api_key="sk-ray-test-4f1e9a", models=["m"])
    fake.responder = respond
    fake.start()
    remote = None
    if backend == "ray":
        remote = RayAttempts(RaySettings(num_cpus=ray_cpus), lambda: provider_settings(fake))
        remote.cluster.start()  # the cluster's start is not part of the track's time
    work = [Ticket(f"b{i:02d}", "burn", target_files=[f"b{i:02d}.txt"]) for i in range(tickets)]
    rig = track_rig(folder, make_controller, work, remote, fake, max_workers=workers)
    try:
        started = time.perf_counter()
        rig.conductor.start()
        if not rig.conductor.join(600) or rig.conductor.status is not ConductorStatus.DONE:
            raise SystemExit(f"{backend} x{workers}: the track ended {rig.conductor.status}")
        elapsed = time.perf_counter() - started
        landed = sum(1 for i in range(tickets) if (rig.ctrl.base_dir() / f"b{i:02d}.txt").exists())
        if landed != tickets:
            raise SystemExit(f"{backend} x{workers}: {landed} of {tickets} patches landed")
        return elapsed
    finally:
        rig.close()
        if remote is not None:
            remote.stop()
        for controller in made:
            controller.bind_main_thread()
            controller.shutdown()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tickets", type=int, default=40)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--ray-cpus", type=float, default=0.5, help="CPUs each ticket's Ray task asks for")
    args = parser.parse_args()
    times: dict[tuple[str, int], float] = {}
    with tempfile.TemporaryDirectory(prefix="bench-mma-") as tmp:
        for workers in args.workers:
            for backend in ("threads", "ray"):  # side by side at each worker count
                folder = Path(tmp) / f"{backend}-{workers}"
                times[backend, workers] = run_track(backend, workers, args.tickets, folder, args.ray_cpus)
                print(f"  {backend:7} x{workers}: {times[backend, workers]:6.1f} s", flush=True)
    print(f"\n{args.tickets} tickets, each {MODEL_S} s of model and 0.5 s of CPU in a tool")
    columns = ("threads s", "speed-up", "ray s", "speed-up", "ray overhead/ticket")
    print(f"{'workers':>7} " + " ".join(f"{c:>{max(9, len(c))}}" for c in columns))
    first = args.workers[0]
    for workers in args.workers:
        threads, ray = times["threads", workers], times["ray", workers]
        overhead_ms = (ray - threads) / args.tickets * 1000
        print(
            f"{workers:>7} {threads:>10.1f} {times['threads', first] / threads:>9.2f}"
            f" {ray:>8.1f} {times['ray', first] / ray:>9.2f} {overhead_ms:>17.0f} ms"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
