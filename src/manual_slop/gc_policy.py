"""When the cyclic garbage collector runs while a frame loop (window or headless ticker) is up.

Why: CPython's automatic generation-2 collection scans every object the collector tracks, on
whichever thread happens to allocate. With a loaded state (10,000 comms entries, the event
journal's ring of 20,000 events, 200 tickets: about 130,000 tracked objects, plus the ~60,000 of
the imported modules) one such collection took up to 430 ms on a quiet machine — a visible
pause in the middle of a frame (``scripts/bench_gui.py``).

The policy, applied by :meth:`GcPolicy.install` when the frame loop starts:

1. What exists when the loop starts (modules, classes, the loaded project and logs) is collected
   once and then frozen (``gc.freeze``): it is long-lived, and frozen objects are left out of
   every later scan. Objects that are frozen are still freed by reference counting as usual.
2. Automatic generation-2 collections are off (generation 2's threshold raised); generations 0
   and 1 run as before: small, bounded scans that find most cyclic garbage, which dies young.
3. Between frames, :meth:`GcPolicy.tick` freezes what survived once as many generation-1
   collections have happened as would have started a generation-2 one (10): a young collection
   (generations 0 and 1) and ``gc.freeze`` (a list splice) — about a millisecond, however large
   the state. (Scanning what was promoted instead would take in whatever arrived at once: the
   workers' shared file cache parses 55,000 AST objects, and a full collection over 80,000
   objects with those took 222 ms at a load of 11.)
4. Frozen objects that later become garbage inside a reference cycle are found by no scan
   until a full sweep (unfreeze, collect everything, freeze again). One is due once the frozen
   set has grown by ``sweep_growth`` (a quarter, CPython's own rule for generation 2) since the
   last sweep, and runs at the next idle tick (no user input in the window; nothing posted for
   a second in headless mode) — or at once when the last sweep is ``max_deferral_s`` (10
   minutes) old, so what can leak stays within a quarter of the heap for at most that long.
   A sweep costs what a full collection costs (hundreds of ms over a loaded state).

:meth:`GcPolicy.uninstall` (when the loop ends) unfreezes and restores the thresholds.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["GcPolicy", "GcTick"]

NO_AUTOMATIC_FULL = 1 << 30  # generation 2's threshold: never reached by generation-1 counts


@dataclass(frozen=True, slots=True)
class GcTick:
    """What one tick did: ``kind`` is "freeze" (a young collection, then the survivors frozen)
    or "sweep" (everything collected, frozen objects included); ``ms`` its wall time."""

    kind: str
    ms: float
    collected: int


class GcPolicy:
    """The collector's policy for one frame loop; install, tick between frames, uninstall.

    Main thread only (``gc.freeze`` and the thresholds are process-wide).
    """

    def __init__(
        self,
        *,
        full_every: int = 10,
        sweep_growth: float = 0.25,
        max_deferral_s: float = 600.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if full_every < 1:
            raise ValueError(f"full_every must be at least 1, got {full_every}")
        if sweep_growth <= 0:
            raise ValueError(f"sweep_growth must be positive, got {sweep_growth}")
        if max_deferral_s <= 0:
            raise ValueError(f"max_deferral_s must be positive, got {max_deferral_s}")
        self.full_every = full_every
        self.sweep_growth = sweep_growth
        self.max_deferral_s = max_deferral_s
        self._clock = clock
        self._saved: tuple[int, int, int] | None = None
        self._frozen_after_sweep = 0
        self._young_at_freeze = 0  # generation-1 collections counted at the last freeze
        self._last_sweep = 0.0
        self.ticks: list[GcTick] = []  # the latest collections it ran (bounded), for the figures

    @property
    def installed(self) -> bool:
        return self._saved is not None

    def install(self) -> None:
        """Collect and freeze what exists, switch automatic generation-2 collections off."""
        if self._saved is not None or gc.get_threshold()[2] == NO_AUTOMATIC_FULL:
            raise RuntimeError("a gc policy is already installed in this process")
        self._saved = gc.get_threshold()
        young, middle, _ = self._saved
        self._sweep()
        gc.set_threshold(young, middle, NO_AUTOMATIC_FULL)

    def uninstall(self) -> None:
        """Unfreeze and put the thresholds back (the collector is as it was before install)."""
        if self._saved is None:
            return
        gc.set_threshold(*self._saved)
        self._saved = None
        gc.unfreeze()

    def tick(self, idle: bool) -> GcTick | None:
        """Between frames (main thread): run a due collection; ``idle`` allows a full sweep."""
        if self._saved is None:
            return None
        overdue = self._clock() - self._last_sweep >= self.max_deferral_s
        if (idle or overdue) and self._sweep_due():
            return self._record("sweep", self._sweep)
        if gc.get_count()[2] - self._young_at_freeze >= self.full_every:
            return self._record("freeze", self._freeze_survivors)
        return None

    def _sweep_due(self) -> bool:
        # get_freeze_count walks a list: only asked when a sweep is allowed at all
        grown = gc.get_freeze_count() - self._frozen_after_sweep
        return grown > self._frozen_after_sweep * self.sweep_growth

    def _freeze_survivors(self) -> int:
        collected = gc.collect(1)  # young garbage is not frozen
        gc.freeze()  # does not reset generation 2's count (only a full collection does)
        self._young_at_freeze = gc.get_count()[2]
        return collected

    def _sweep(self) -> int:
        gc.unfreeze()
        collected = gc.collect()
        gc.freeze()
        self._frozen_after_sweep = gc.get_freeze_count()
        self._young_at_freeze = gc.get_count()[2]
        self._last_sweep = self._clock()
        return collected

    def _record(self, kind: str, run: Callable[[], int]) -> GcTick:
        started = time.perf_counter()
        collected = run()
        tick = GcTick(kind, (time.perf_counter() - started) * 1000.0, collected)
        self.ticks.append(tick)
        del self.ticks[:-100]
        return tick
