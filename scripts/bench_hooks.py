#!/usr/bin/env python3
"""Hook API latency and throughput, measured beside a bare ThreadingHTTPServer in the same run.

Both servers run as their own processes, as in real use: the app is ``sloppy.py --headless``
(its headless ticker running), the baseline is a bare ``ThreadingHTTPServer`` (HTTP/1.1
keep-alive, TCP_NODELAY) answering every GET with a constant JSON body. The same client
(``http.client``, one kept-alive connection per thread) measures both, back to back:

1. Latency: median (and p95) of ``GET /api/gui/value/ai_status`` — every check of the
   request guard (Host, Origin, bearer token), routing, the lock-free read of a scalar
   field, JSON, the redacted reply, the apihooks.log entry — divided by the bare server's
   median. The same for ``GET /api/gui/value/available_models``, a list field read through
   the main-thread trampoline, to show what the hop to the frame loop costs.
2. Throughput: sustained requests/second over 5 s from 8 client threads, first request.

Both servers get the same request, token included (the bare one ignores it). In the
latency runs a reply other than 200 stops the run with its status and body. In the
throughput run every client thread counts its errors (a non-200, a reset, a timeout) and
carries on with a fresh connection; the per-client counts are printed and any error makes
the bench exit 1 with ``FAILED``. The last line prints the ratios and the error counts.

Run: ``.venv/bin/python scripts/bench_hooks.py`` — prints the figures and their ratios.
"""

from __future__ import annotations

import http.client
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PATH = "/api/gui/value/ai_status"  # a scalar field: read lock-free once every queued write has run
MAIN_PATH = "/api/gui/value/available_models"  # a list field: read through the main thread
WARMUP = 200
SAMPLES = 2000
CLIENTS = 8
DURATION_S = 5.0


class ConstantHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    body = json.dumps({"field": "ai_status", "value": "idle"}).encode()

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, format: str, *args: object) -> None:
        pass


def serve_bare() -> None:
    """Child mode: the baseline server; prints its port, serves until stdin closes."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), ConstantHandler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    print(server.server_address[1], flush=True)
    sys.stdin.read()
    server.shutdown()


def start_bare() -> tuple[subprocess.Popen[str], int]:
    proc = subprocess.Popen(
        [sys.executable, __file__, "--bare-server"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    return proc, int(proc.stdout.readline())


def start_app(folder: Path) -> tuple[subprocess.Popen[str], int, str]:
    env = {k: v for k, v in os.environ.items() if k != "SLOP_HOOK_TOKEN"}
    token_file = folder / "hook.token"
    proc = subprocess.Popen(
        [sys.executable, str(ROOT / "sloppy.py"), "--headless", "--hook-port", "0",
         "--config", str(folder / "config.toml"), "--token-file", str(token_file)],
        cwd=folder, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line.startswith("hook server listening on "):
        raise SystemExit(f"the app did not start: {line!r}")
    return proc, int(line.rsplit(":", 1)[1]), token_file.read_text().strip()


def get(conn: http.client.HTTPConnection, headers: dict[str, str], path: str = PATH) -> None:
    conn.request("GET", path, headers=headers)
    response = conn.getresponse()
    body = response.read()
    if response.status != 200:
        raise RuntimeError(f"GET {path}: HTTP {response.status} {body[:200]!r}")


def latency_ms(port: int, headers: dict[str, str], path: str = PATH) -> list[float]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    for _ in range(WARMUP):
        get(conn, headers, path)
    samples = []
    for _ in range(SAMPLES):
        started = time.perf_counter()
        get(conn, headers, path)
        samples.append((time.perf_counter() - started) * 1000.0)
    conn.close()
    return samples


class Clients:
    """Per client thread: requests answered 200, errors, and the first error of each."""

    def __init__(self, server: str) -> None:
        self.server = server
        self.ok = [0] * CLIENTS
        self.errors = [0] * CLIENTS
        self.first: list[str] = [""] * CLIENTS

    def failed(self) -> int:
        return sum(self.errors)

    def report(self) -> list[str]:
        return [
            f"  {self.server} client {n}: {self.ok[n]:,} ok, {self.errors[n]} errors"
            + (f" (first: {self.first[n]})" if self.first[n] else "")
            for n in range(CLIENTS)
        ]


def throughput(port: int, headers: dict[str, str], clients: Clients) -> float:
    """Requests/s over DURATION_S; every client keeps going after an error (a fresh
    connection) and counts it, so one failure neither hides the others nor stops the run."""
    stop = threading.Event()

    def client(n: int) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        try:
            while not stop.is_set():
                try:
                    get(conn, headers)
                    clients.ok[n] += 1
                except Exception as exc:  # counted and reported: a dead client must not pass for a slow one
                    clients.errors[n] += 1
                    clients.first[n] = clients.first[n] or f"{type(exc).__name__}: {exc}"[:200]
                    conn.close()
                    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        finally:
            conn.close()

    threads = [threading.Thread(target=client, args=(n,), daemon=True) for n in range(CLIENTS)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    stop.wait(DURATION_S)
    stop.set()
    for thread in threads:
        thread.join(15)
    alive = sum(thread.is_alive() for thread in threads)
    if alive:
        raise SystemExit(f"FAILED: {alive} {clients.server} client thread(s) still running 15 s after stop")
    return sum(clients.ok) / (time.perf_counter() - started)


def p95(samples: list[float]) -> float:
    return statistics.quantiles(samples, n=20)[-1]


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        app, app_port, token = start_app(Path(tmp))
        bare, bare_port = start_bare()
        headers = {"Authorization": f"Bearer {token}"}
        try:
            bare_lat, app_lat = latency_ms(bare_port, headers), latency_ms(app_port, headers)
            main_lat = latency_ms(app_port, headers, MAIN_PATH)
            bare_clients, app_clients = Clients("bare"), Clients("Hook API")
            bare_rps = throughput(bare_port, headers, bare_clients)
            app_rps = throughput(app_port, headers, app_clients)
            conn = http.client.HTTPConnection("127.0.0.1", app_port, timeout=10)
            conn.request(
                "POST", "/api/shutdown", body=b"{}", headers={**headers, "Content-Type": "application/json"}
            )
            conn.getresponse().read()
            conn.close()
            app.wait(10)
        finally:
            for proc in (app, bare):
                if proc.stdin is not None:
                    proc.stdin.close()
                if proc.poll() is None:
                    proc.terminate()
                proc.wait(10)
    bare_med, app_med = statistics.median(bare_lat), statistics.median(app_lat)
    print(f"GET {PATH}, {SAMPLES} sequential requests on one kept-alive connection")
    print(f"  bare ThreadingHTTPServer  median {bare_med:.3f} ms   p95 {p95(bare_lat):.3f} ms")
    print(f"  Hook API                  median {app_med:.3f} ms   p95 {p95(app_lat):.3f} ms")
    print(f"  latency ratio (Hook API / bare): {app_med / bare_med:.2f}x")
    main_med = statistics.median(main_lat)
    print(f"GET {MAIN_PATH} (through the main thread), {SAMPLES} sequential requests")
    print(f"  Hook API                  median {main_med:.3f} ms   p95 {p95(main_lat):.3f} ms")
    print(f"  latency ratio (Hook API / bare): {main_med / bare_med:.2f}x")
    print(f"sustained throughput, {CLIENTS} client threads, {DURATION_S:g} s each")
    print(f"  bare ThreadingHTTPServer  {bare_rps:,.0f} requests/s")
    print(f"  Hook API                  {app_rps:,.0f} requests/s")
    print(f"  throughput ratio (Hook API / bare): {app_rps / bare_rps:.2f}")
    print("per client (requests answered 200, errors):")
    for line in (*bare_clients.report(), *app_clients.report()):
        print(line)
    failed = bare_clients.failed() + app_clients.failed()
    print(
        f"RATIOS latency {app_med / bare_med:.2f}x, through the main thread {main_med / bare_med:.2f}x, "
        f"throughput {app_rps / bare_rps:.2f}; errors: bare {bare_clients.failed()}, "
        f"Hook API {app_clients.failed()}" + (" — FAILED" if failed else "")
    )
    if failed:
        print(f"FAILED: {failed} request(s) did not get a 200 (see the per-client lines)", file=sys.stderr)
        raise SystemExit(1)


if __name__ == "__main__":
    if sys.argv[1:] == ["--bare-server"]:
        serve_bare()
    else:
        main()
