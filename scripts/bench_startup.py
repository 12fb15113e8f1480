#!/usr/bin/env python3
"""Cold start to the first 200 of ``GET /status``, measured beside two baselines in one run.

Three programs, each started as a fresh process by the same interpreter, timed from
``Popen`` to the moment that matters:

1. ``python -c pass``: the interpreter alone, timed to its exit.
2. A bare ``ThreadingHTTPServer`` script (this file with ``--bare-server``): binds port 0,
   prints ``hook server listening on http://127.0.0.1:PORT``; timed to its first 200 on
   ``/status``.
3. The app, ``sloppy.py --headless --hook-port 0`` in a fresh folder (new config and
   project each round): timed the same way, to its first 200 on ``/status``. The Hook API
   listens before the app is built (``/status`` is liveness; every other request waits for
   the app), so the bench also times the first 200 of ``GET /openapi.json`` with the token
   (from the runtime token file of the port): the app built and serving its whole API ("app
   ready", not a goal).

Rounds are interleaved (pass, bare, app, pass, bare, app, ...) so drift in the machine's
load hits all three; medians are compared. Goals: app ≤ 1.5x the bare server and ≤ 1.0 s.

Run: ``.venv/bin/python scripts/bench_startup.py [--rounds N]``. The last line prints the
ratios. ``--importtime`` runs the app once under ``python -X importtime`` and prints the
slowest imports instead (where the time goes).
"""

from __future__ import annotations

import argparse
import http.client
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ANNOUNCE = "hook server listening on "
TIMEOUT_S = 30.0


def serve_bare() -> None:
    """Child mode: the baseline; a ThreadingHTTPServer answering /status, until stdin closes."""
    import json
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Status(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = json.dumps({"status": "ok"}).encode()
            self.send_response(200 if self.path == "/status" else 404)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Status)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    print(f"{ANNOUNCE}http://127.0.0.1:{server.server_address[1]}", flush=True)
    sys.stdin.read()
    server.shutdown()


def announced_port(proc: subprocess.Popen[str]) -> int:
    assert proc.stdout is not None
    line = proc.stdout.readline()  # the announcement is the only line either server prints
    if not line.startswith(ANNOUNCE):
        raise SystemExit(f"{proc.args[1]} did not announce its port: {line!r} (exit {proc.poll()})")
    return int(line.rsplit(":", 1)[1])


def first_200(proc: subprocess.Popen[str], started: float, port: int | None = None, path: str = "/status",
              token: str = "") -> float:  # fmt: skip
    """Seconds from ``started`` to the first 200 of ``path`` on the port ``proc`` announces."""
    port = announced_port(proc) if port is None else port
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    while time.perf_counter() - started < TIMEOUT_S:
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=TIMEOUT_S)
            conn.request("GET", path, headers=headers)
            response = conn.getresponse()
            response.read()
            conn.close()
            if response.status == 200:
                return time.perf_counter() - started
        except OSError:
            pass
        time.sleep(0.002)
    raise SystemExit(f"{proc.args[1]}: no 200 on {path} within {TIMEOUT_S} s")


def stop(proc: subprocess.Popen[str]) -> None:
    if proc.stdin is not None:
        proc.stdin.close()  # the bare server stops when stdin closes
    proc.terminate()  # the app stops cleanly on SIGTERM
    try:
        proc.wait(timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=5)
        raise SystemExit(f"{proc.args[1]} did not stop within {TIMEOUT_S} s of SIGTERM") from None


def time_pass(env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], env=env, check=True, timeout=TIMEOUT_S)
    return time.perf_counter() - started


def time_bare(env: dict[str, str]) -> float:
    started = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, __file__, "--bare-server"],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        return first_200(proc, started)
    finally:
        stop(proc)


def app_command(folder: Path, *python_flags: str) -> list[str]:
    return [sys.executable, *python_flags, str(ROOT / "sloppy.py"), "--headless", "--hook-port", "0",
            "--config", str(folder / "config.toml")]  # fmt: skip


def child_env(pycache: Path) -> dict[str, str]:
    """The environment of every program started: bytecode cached (in ``pycache``) as on a user's
    machine, where the second start onward reads .pyc files; an inherited PYTHONDONTWRITEBYTECODE
    would make every round compile the app's sources again."""
    env = {k: v for k, v in os.environ.items() if k not in ("SLOP_HOOK_TOKEN", "DISPLAY", "WAYLAND_DISPLAY")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(pycache)
    # this checkout's sources, not whichever checkout the venv's editable install points at
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "src"), env.get("PYTHONPATH")]))
    return env


def app_token(port: int) -> str:
    """The token the app wrote (before announcing itself) to the runtime file of its port."""
    sys.path.insert(0, str(ROOT / "src"))
    from manual_slop.hooks.token import discover_token

    return discover_token(port)


def time_app(folder: Path, env: dict[str, str]) -> tuple[float, float]:
    """Seconds to the first 200 of /status, and to the first 200 of /openapi.json (app ready)."""
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir()
    started = time.perf_counter()
    proc = subprocess.Popen(
        app_command(folder), cwd=folder, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    try:
        port = announced_port(proc)
        status = first_200(proc, started, port)
        return status, first_200(proc, started, port, "/openapi.json", app_token(port))
    finally:
        stop(proc)


def importtime(folder: Path, env: dict[str, str], top: int) -> None:
    """Run the app once under -X importtime; print the ``top`` slowest imports (cumulative)."""
    folder.mkdir(exist_ok=True)
    proc = subprocess.Popen(
        app_command(folder, "-X", "importtime"), cwd=folder, env=env,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    started = time.perf_counter()
    port = announced_port(proc)
    first_200(proc, started, port, "/openapi.json", app_token(port))
    stop(proc)
    assert proc.stderr is not None
    rows = []
    for line in proc.stderr.read().splitlines():
        parts = line.removeprefix("import time:").split("|")
        if len(parts) == 3 and parts[0].strip().isdigit():
            rows.append((int(parts[1]), int(parts[0]), parts[2].rstrip()))
    print(f"{'cumulative µs':>14} {'self µs':>9}  module")
    for cumulative, own, name in sorted(rows, reverse=True)[:top]:
        print(f"{cumulative:>14} {own:>9}  {name}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15, help="interleaved rounds (each starts all three)")
    parser.add_argument("--importtime", type=int, metavar="TOP", help="print the TOP slowest imports instead")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-startup-") as tmp:
        folder = Path(tmp) / "app"
        env = child_env(Path(tmp) / "pycache")
        time_pass(env), time_bare(env), time_app(folder, env)  # writes the .pyc files, warms the file cache
        if args.importtime:
            importtime(folder, env, args.importtime)
            return 0
        times: dict[str, list[float]] = {"pass": [], "bare": [], "app": [], "ready": []}
        for _ in range(args.rounds):
            times["pass"].append(time_pass(env))
            times["bare"].append(time_bare(env))
            app, ready = time_app(folder, env)
            times["app"].append(app)
            times["ready"].append(ready)
    medians = {name: statistics.median(values) for name, values in times.items()}
    print(f"cold start, median of {args.rounds} interleaved rounds (min-max)")
    labels = {
        "pass": "python -c pass (to exit)",
        "bare": "bare ThreadingHTTPServer",
        "app": "sloppy --headless",
        "ready": "  its app ready (openapi)",
    }
    for name, label in labels.items():
        values = times[name]
        spread = f"{min(values) * 1000:.1f}-{max(values) * 1000:.1f}"
        print(f"{label:<28} {medians[name] * 1000:>8.1f} ms  ({spread})")
    app, bare, bare_py = medians["app"], medians["bare"], medians["pass"]
    verdict = "PASS" if app / bare <= 1.5 and app <= 1.0 else "FAIL"
    print(
        f"ratios: app/bare server {app / bare:.2f} (goal <= 1.5), app/python -c pass {app / bare_py:.2f}, "
        f"bare/python {bare / bare_py:.2f}; app {app:.3f} s (goal <= 1.0 s) {verdict}; "
        f"app ready/bare {medians['ready'] / bare:.2f}"
    )
    return 0


if __name__ == "__main__":
    if sys.argv[1:] == ["--bare-server"]:
        serve_bare()
    else:
        raise SystemExit(main())
