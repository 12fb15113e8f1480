#!/usr/bin/env python3
"""What governance costs, measured side by side in one run (the machines are shared and noisy).

1. A send with one tool round against the OpenAI-wire fake, with a run log (every prompt
   written whole) / without one: median of alternating sends.
2. A human decision through the clutch with the approval journal (fsync'd before the dialog is
   shown, and again once decided) / without it: submit on a thread, resolve at once.
3. The loop guard's check of one call (normalize, count) / running the cheapest tool
   (``read_file`` of a small file) through the registry.

Run: ``.venv/bin/python scripts/bench_governance.py [--sends N] [--dialogs N]``. Prints ratios;
nothing passes or fails on absolute times.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # tests.fakes
sys.path.insert(0, str(ROOT / "src"))

from bench_client import alternate  # noqa: E402 (the same side-by-side timing as every bench)
from tests.fakes import Call, OpenAIFake, Reply  # noqa: E402

from manual_slop.ai import AIClient, RetryPolicy  # noqa: E402
from manual_slop.ai.loop_guard import GuardLimits, RepeatGuard  # noqa: E402
from manual_slop.clutch import ExecutionClutch  # noqa: E402
from manual_slop.dialogs import ConfirmDialog  # noqa: E402
from manual_slop.governance.journal import ApprovalJournal  # noqa: E402
from manual_slop.governance.run_log import RunLogs  # noqa: E402
from manual_slop.redaction import Redactor  # noqa: E402
from manual_slop.tools import ExecutionContext, ToolCall, default_registry  # noqa: E402


def bench_run_log(folder: Path, sends: int) -> tuple[float, float]:
    (folder / "notes.txt").write_text("the notes\n" * 50)
    with OpenAIFake() as fake:

        def client(runs: RunLogs | None) -> AIClient:
            made = AIClient(retry=RetryPolicy(max_retries=0))
            made.set_provider("deepseek", "deepseek-chat")
            made.configure(base_url=fake.base_url, api_key="bench-key")
            made.runs = runs
            return made

        logged = client(RunLogs(folder / "runs", Redactor(["bench-key"]), "bench"))
        plain = client(None)
        counter = iter(range(10**9))

        def send(made: AIClient) -> Callable[[], None]:
            def call() -> None:
                n = next(counter)
                fake.push(Reply("", [Call("read_file", {"path": "notes.txt"})]), Reply("they are notes"))
                made.send("", f"what is in notes.txt? ({n})", base_dir=str(folder), conversation=f"c{n}")

            return call

        return alternate(send(logged), send(plain), sends)


def bench_journal(folder: Path, dialogs: int) -> tuple[float, float]:
    def clutch(journal: ApprovalJournal | None) -> ExecutionClutch:
        return ExecutionClutch(lambda entry: None, lambda kind, payload: 0, "manual", (), journal=journal)

    journal = ApprovalJournal(folder / "approvals.jsonl", lambda dialog: {"type": "none", "why": "bench"})
    journaled, plain = clutch(journal), clutch(None)

    def decide(on: ExecutionClutch) -> Callable[[], None]:
        def call() -> None:
            dialog = ConfirmDialog("make", str(folder))
            asker = threading.Thread(target=on.submit, args=(dialog, 10.0))
            asker.start()
            while on.get(dialog.uid) is None:
                time.sleep(0)
            on.resolve(dialog.uid, True, decider="hook")
            asker.join(10)

        return call

    return alternate(decide(journaled), decide(plain), dialogs)


def bench_guard(folder: Path, calls: int) -> tuple[float, float]:
    (folder / "small.txt").write_text("small\n")
    registry = default_registry()
    context = ExecutionContext.for_directory(folder)
    guard = RepeatGuard(GuardLimits(), lambda name: False)
    call = ToolCall("c1", "read_file", {"path": "./small.txt", "offset": 1.0})
    return alternate(lambda: guard.check(call), lambda: registry.execute(call, context), calls)


def report(label_a: str, label_b: str, a: float, b: float, unit: str, scale: float) -> None:
    print(f"  {label_a:<15}{a * scale:9.3f} {unit}  {label_b:<10}{b * scale:9.3f} {unit}  ratio {a / b:.3f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sends", type=int, default=40, help="sends per side")
    parser.add_argument("--dialogs", type=int, default=200, help="decisions per side")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        print(f"send with one tool round, median of {args.sends} alternating sends each")
        report("with a run log", "without", *bench_run_log(folder, args.sends), "ms", 1e3)
        print(f"a human decision through the clutch, median of {args.dialogs} each")
        report("journaled", "not", *bench_journal(folder, args.dialogs), "ms", 1e3)
        print(f"the loop guard's check of a call / running read_file, median of {args.dialogs * 10} each")
        report("guard check", "read_file", *bench_guard(folder, args.dialogs * 10), "µs", 1e6)
    return 0


if __name__ == "__main__":
    sys.exit(main())
