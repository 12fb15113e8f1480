"""R4 kill -9: every file the app writes survives ``kill -9`` of its writer at random points.

A zygote process imports the app once and forks one writer per kill cycle: the writer starts as
the app does after a crash (loads what is there), then saves through the app's own code in a
loop (:mod:`.kill9_writers`). Two kinds of kill point:

- ``timer``: SIGKILL from this process after a random delay (anywhere, C code included);
- ``point``: the writer SIGKILLs itself just before its k-th C-level file call of one save
  (``open``, ``write``, ``fsync``, ``replace`` …), k random over the calls a save makes — the
  moments a non-atomic write would leave a torn file.

After each kill every file must be whole (see :mod:`.kill9_writers`). Fast: 50 cycles spread
over the writers; ``make reliability``: 500 per writer. A static scan of ``src/`` fails when a
new write site appears that :data:`.write_sites.KNOWN_SITES` does not cover. A corrupt file
found at start is moved aside (or left in place) and reported, never overwritten.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import select
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.reliability.conftest import LONG
from tests.reliability.kill9_writers import STAND_INS, WRITERS, Torn, fingerprint, reference
from tests.reliability.write_sites import KNOWN_SITES, scan_write_sites

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="kill -9 and fork are POSIX")

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "src" / "manual_slop"
FAST_CYCLES = 50
LONG_CYCLES_PER_WRITER = 500
WAIT_S = 20.0  # a cycle that takes longer is a hung writer


class Zygote:
    """The forking server (``python -m tests.reliability.kill9_writers``) and its JSON lines."""

    def __init__(self) -> None:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), str(REPO)])}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.reliability.kill9_writers"],
            cwd=REPO, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0,
        )  # fmt: skip
        self._buffer = b""

    def _line(self, timeout: float) -> dict[str, Any]:
        assert self.proc.stdout is not None
        deadline = time.monotonic() + timeout
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"the zygote said nothing for {timeout} s")
            if select.select([self.proc.stdout], [], [], left)[0]:
                chunk = os.read(self.proc.stdout.fileno(), 65536)
                if not chunk:
                    raise EOFError(f"the zygote exited ({self.proc.wait(5)})")
                self._buffer += chunk
        raw, self._buffer = self._buffer.split(b"\n", 1)
        return json.loads(raw)

    def run(self, request: dict[str, Any], kill_after: float | None = None) -> dict[str, Any]:
        """Fork a writer for ``request``; SIGKILL it after ``kill_after`` s (None: it ends itself).
        Returns how it ended (``signal``, ``code``) and what it printed (``count``)."""
        assert self.proc.stdin is not None
        self.proc.stdin.write((json.dumps(request) + "\n").encode())
        ended: dict[str, Any] = {}
        while "pid" not in ended:  # the writer may speak before the zygote has named it
            ended.update(self._line(WAIT_S))
        pid = ended.pop("pid")
        if kill_after is not None:
            time.sleep(kill_after)
            with contextlib.suppress(ProcessLookupError):  # it crashed first: reported below
                os.kill(pid, signal.SIGKILL)  # not reaped yet: the pid is still the writer's
        try:
            while "signal" not in ended:
                ended.update(self._line(WAIT_S))
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            raise
        return ended

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(10)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait(10)
            if self.proc.stdout is not None:
                self.proc.stdout.close()


@pytest.fixture(scope="module")
def zygote() -> Iterator[Zygote]:
    server = Zygote()
    try:
        yield server
    finally:
        server.close()


def calibrate(zygote: Zygote, kind: str, root: Path) -> tuple[list[str], float]:
    """The file calls one save makes, in order, and the CPU seconds a writer needs to start and
    make two saves (the timer's range: under load the kill lands earlier in the run, never later)."""
    ended = zygote.run({"kind": kind, "root": str(root), "cycle": 0, "mode": "count", "warm": 1})
    assert ended["code"] == 0 and ended.get("calls"), f"{kind}: the counting run failed: {ended}"
    return ended["calls"], ended["cpu"]


def kill_points(calls: list[str], rng: random.Random) -> list[int]:
    """Every file call of a save as a kill point (1-based), the telling ones first: the first
    ``write`` into a file just opened (a non-atomic writer has truncated its file and written
    nothing), then any other call right after an ``open``, then the rest; each group shuffled."""
    first_write = [i + 1 for i in range(1, len(calls)) if calls[i] == "write" and calls[i - 1] == "open"]
    after_open = [i + 1 for i in range(1, len(calls)) if calls[i - 1] == "open" and i + 1 not in first_write]
    rest = [i for i in range(1, len(calls) + 1) if i not in first_write and i not in after_open]
    for group in (first_write, after_open, rest):
        rng.shuffle(group)
    return first_write + after_open + rest


def kill_cycles(zygote: Zygote, kind: str, root: Path, cycles: int, rng: random.Random) -> Counter[str]:
    """``cycles`` kills of ``kind``'s writer in ``root``, every file checked after each: two in
    five by timer, the others at file calls."""
    scratch = root.with_name(root.name + "-reference")
    scratch.mkdir()
    ref = reference(kind, scratch)
    calls, cpu = calibrate(zygote, kind, root.with_name(root.name + "-count"))
    checker = (WRITERS.get(kind) or STAND_INS[kind])(root)
    points = kill_points(calls, rng)
    counts: Counter[str] = Counter()
    for cycle in range(1, cycles + 1):
        request = {"kind": kind, "root": str(root), "cycle": cycle, "warm": rng.randrange(0, 3)}
        if cycle % 5 in (1, 4):
            how = "timer"
            ended = zygote.run({**request, "mode": "timer"}, kill_after=rng.uniform(0.0, cpu * 1.5))
        else:
            point = points[counts["points"] % len(points)]
            counts["points"] += 1
            how = f"before file call {point} of {len(calls)} ({calls[point - 1]})"
            ended = zygote.run({**request, "mode": "point", "kill_at": point})
        if ended["signal"] == signal.SIGKILL:
            counts["killed by timer" if how == "timer" else "killed at a file call"] += 1
        else:
            assert ended["code"] == 3, f"{kind}: the writer failed before its kill: {ended}"
            counts["save ended first"] += 1  # this save made fewer calls than the counted one
        try:
            checker.check(ref)
        except Torn as exc:
            raise Torn(Path(kind), f"cycle {cycle}, killed {how}: {exc}") from None
    del counts["points"]
    return counts


def plan_cycles() -> dict[str, int]:
    """Fast: 50 spread over the writers; long: 500 each."""
    kinds = sorted(WRITERS)
    if LONG:
        return dict.fromkeys(kinds, LONG_CYCLES_PER_WRITER)
    share, extra = divmod(FAST_CYCLES, len(kinds))
    return {kind: share + (index < extra) for index, kind in enumerate(kinds)}


@pytest.mark.heavy(6)  # seconds here, alone on two cores (a zygote's start, then ~60 forks)
@pytest.mark.timeout(3600 if LONG else 120)  # long: 5,000 cycles, ~0.2 s each on two loaded cores
def test_kill9_at_random_points_never_tears_a_file(
    zygote: Zygote, tmp_path: Path, summary: Callable[[str], None]
) -> None:
    seed = int(os.environ.get("SLOP_RELIABILITY_SEED", random.randrange(1 << 30)))
    rng = random.Random(seed)
    torn: list[str] = []
    counts: Counter[str] = Counter()
    plan = plan_cycles()
    for kind, cycles in plan.items():
        root = tmp_path / kind.replace(" ", "_").replace("+", "_")
        root.mkdir()
        try:
            counts += kill_cycles(zygote, kind, root, cycles, rng)
        except Torn as exc:
            torn.append(str(exc))
    summary(
        f"R4 kill -9: {sum(counts.values())} kill cycles over {len(plan)} writers, "
        f"{counts['killed by timer']} by timer, {counts['killed at a file call']} at a file call, "
        f"{counts['save ended first']} ran past the point, {len(torn)} torn (seed {seed})"
    )
    assert not torn, f"seed {seed}: " + "\n".join(torn)


def test_every_write_site_in_src_is_covered() -> None:
    found = scan_write_sites(PACKAGE)
    new = {site: n for site, n in found.items() if KNOWN_SITES.get(site, (0, ""))[0] != n}
    gone = sorted(site for site in KNOWN_SITES if site not in found)
    assert not new, (
        "write sites R4 does not know (add a kill -9 writer in tests/reliability/kill9_writers.py, "
        f"or an exemption with its reason, to write_sites.KNOWN_SITES): {sorted(new.items())}"
    )
    assert not gone, f"KNOWN_SITES lists sites that are gone: {gone}"
    unknown = {how for _, how in KNOWN_SITES.values() if not how.startswith("exempt:")} - set(WRITERS)
    assert not unknown, f"KNOWN_SITES names writers that do not exist: {unknown}"


def test_the_scan_finds_each_kind_of_write(tmp_path: Path) -> None:
    (tmp_path / "mod.py").write_text(
        "import io, os, shutil, sqlite3\n"
        "def reads(p):\n    open(p).read(); p.open('rb'); os.open(p, os.O_RDONLY); io.open(p, 'r')\n"
        "class Store:\n"
        "    def save(self, p):\n"
        "        atomic_write_text(p, 'x'); p.write_text('x'); p.write_bytes(b'x'); open(p, 'w')\n"
        "        p.open(mode='a'); io.open(p, 'wb'); os.open(p, os.O_WRONLY | os.O_CREAT)\n"
        "        sqlite3.connect(p); shutil.copy2(p, p); logging.FileHandler(p); open(p, 'w')\n"
    )
    assert scan_write_sites(tmp_path) == {
        ("mod.py", "Store.save", kind): 2 if kind == "open(w)" else 1
        for kind in (
            "atomic_write_text", "write_text", "write_bytes", "open(w)", "open(a)", "open(wb)", "os.open",
            "sqlite3.connect", "shutil.copy2", "FileHandler",
        )
    }  # fmt: skip


def _corrupt_cases() -> list[tuple[str, str]]:
    return [(kind, target) for kind, cls in sorted(WRITERS.items()) for target in cls.corrupt_targets]


@pytest.mark.parametrize(("kind", "target"), _corrupt_cases())
def test_a_corrupt_file_at_start_is_reported_and_never_overwritten(
    tmp_path: Path, kind: str, target: str
) -> None:
    writer = WRITERS[kind](tmp_path)
    writer.setup()
    writer.step(0)
    writer.close()
    path = tmp_path / target
    garbage = b"\x00not {[ a " + kind.encode() + b" file \xff]]\n= = =\n"
    path.write_bytes(garbage)
    report = ""
    try:
        report = writer.load()
    except Exception as exc:  # a loader that raises has reported it too
        report = f"{type(exc).__name__}: {exc}"
    assert report, f"{target}: garbage at start was not reported"
    if writer.saves_on_start:
        restarted = WRITERS[kind](tmp_path, cycle=1)
        restarted.setup()  # the app starts again and saves as it always does
        restarted.step(1)
        restarted.close()
    kept = [p for p in path.parent.iterdir() if p.name.startswith(path.name) and p.read_bytes() == garbage]
    assert kept, f"{target}: the garbage was overwritten (report: {report})"
    assert all(p == path or ".corrupt-" in p.name for p in kept), kept
    if path.exists() and path not in kept and target in writer.whole:
        assert fingerprint(path), f"{target}: the file saved after the move is not whole"


def test_the_checker_calls_a_non_atomic_writer_torn(zygote: Zygote, tmp_path: Path) -> None:
    # the planted defect, built in: plan files written with open("w") + write; the first write
    # into a just-opened file comes first among the kill points, so three point cycles always
    # land in its window (here with any seed)
    root = tmp_path / "planted"
    root.mkdir()
    with pytest.raises(Torn, match=r"torn: .*\.json: (zero-length|does not parse|half a file)"):
        kill_cycles(zygote, "non-atomic plan (planted)", root, 5, random.Random())
