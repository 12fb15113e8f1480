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

import pytest

WRITER = textwrap.dedent(
    """
    import hashlib, sys
    from pathlib import Path
    from manual_slop.config import TomlFile

    target = TomlFile(Path(sys.argv[1]), {})
    for i in range(200):
        blob = ("line %d " % i) * (500 + (i * 7919) % 20000)
        target.save({"save": {"index": i, "blob": blob, "sha": hashlib.sha256(blob.encode()).hexdigest()}})
        print(i, flush=True)
    """
)

TRIALS = 20


def check_file(path: Path) -> int:
    data = tomllib.loads(path.read_text(encoding="utf-8"))  # raises if torn
    blob = data["save"]["blob"]
    assert hashlib.sha256(blob.encode()).hexdigest() == data["save"]["sha"]
    return data["save"]["index"]


@pytest.mark.heavy(20)  # seconds here, alone on two cores
def test_sigkill_during_200_saves_never_tears_the_file(tmp_path: Path) -> None:
    # Each trial kills the writer a random few milliseconds after it reported a random
    # save number, so the kills land at different points of the run however loaded the
    # machine is, and usually in the middle of the next save.
    rng = random.Random(1234)
    for trial in range(TRIALS):
        target = tmp_path / f"trial{trial}" / "config.toml"
        target.parent.mkdir()
        kill_after = rng.randrange(0, 198)
        proc = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(target)], stdout=subprocess.PIPE, text=True
        )
        assert proc.stdout is not None
        while int(proc.stdout.readline()) < kill_after:
            pass
        time.sleep(rng.uniform(0.0, 0.004))
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        proc.stdout.close()
        assert check_file(target) >= kill_after  # parses, checksum matches, never older
        leftovers = [p.name for p in target.parent.iterdir() if p.name != "config.toml"]
        assert all(name.startswith(".config.toml.") and name.endswith(".tmp") for name in leftovers)
