"""A writer killed with SIGKILL at random moments never leaves a torn config file."""

from __future__ import annotations

import hashlib
import random
import signal
import subprocess
import sys
import textwrap
import time
import tomllib
from pathlib import Path

WRITER = textwrap.dedent(
    """
    import hashlib, sys
    from pathlib import Path
    from manual_slop.config import TomlFile

    target = TomlFile(Path(sys.argv[1]), {})
    for i in range(200):
        blob = ("line %d " % i) * (500 + (i * 7919) % 20000)
        target.save({"save": {"index": i, "blob": blob, "sha": hashlib.sha256(blob.encode()).hexdigest()}})
        if i == 0:
            print("first save done", flush=True)
    print("all saves done", flush=True)
    """
)

TRIALS = 20


def check_file(path: Path) -> int:
    data = tomllib.loads(path.read_text(encoding="utf-8"))  # raises if torn
    blob = data["save"]["blob"]
    assert hashlib.sha256(blob.encode()).hexdigest() == data["save"]["sha"]
    return data["save"]["index"]


def test_sigkill_during_200_saves_never_tears_the_file(tmp_path: Path) -> None:
    rng = random.Random(1234)
    indices: list[int] = []
    for trial in range(TRIALS):
        target = tmp_path / f"trial{trial}" / "config.toml"
        target.parent.mkdir()
        proc = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(target)], stdout=subprocess.PIPE, text=True
        )
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "first save done"
        time.sleep(rng.uniform(0.0, 0.25))
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        proc.stdout.close()
        indices.append(check_file(target))
        leftovers = [p.name for p in target.parent.iterdir() if p.name != "config.toml"]
        assert all(name.startswith(".config.toml.") and name.endswith(".tmp") for name in leftovers)
    # The kills landed at different points of the run, not all before or after it.
    assert len(set(indices)) > TRIALS // 2
    assert min(indices) < 199
