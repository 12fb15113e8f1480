"""The garbage collector's policy of the frame loops (manual_slop.gc_policy), on the real collector."""

from __future__ import annotations

import gc
import weakref

import pytest

from manual_slop.gc_policy import NO_AUTOMATIC_FULL, GcPolicy


class Cycle:
    """An object that refers to itself: only the cyclic collector can free it."""

    def __init__(self) -> None:
        self.me = self


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def collector():
    """The process's collector exactly as it was, whatever a test leaves behind."""
    threshold = gc.get_threshold()
    yield
    gc.set_threshold(*threshold)
    gc.unfreeze()


def test_policy_freezes_survivors_between_frames_and_sweeps_frozen_cycles(collector) -> None:
    before = gc.get_threshold()
    clock = Clock()
    policy = GcPolicy(full_every=3, sweep_growth=1e-9, max_deferral_s=600.0, clock=clock)
    lost = Cycle()
    lost_ref = weakref.ref(lost)
    policy.install()
    try:
        assert gc.get_threshold() == (before[0], before[1], NO_AUTOMATIC_FULL), (
            "automatic full collections stay on"
        )
        assert gc.get_freeze_count() > 0, "what existed at install was not frozen"
        for second in (policy, GcPolicy()):  # the collector is the process's: one policy at a time
            with pytest.raises(RuntimeError, match="already installed"):
                second.install()

        gc.collect(1)  # generation-1 collections count towards the policy's own full one
        assert policy.tick(idle=False) is None, "a full collection ran before it was due"
        gc.collect(1), gc.collect(1)
        young_garbage = weakref.ref(Cycle())  # dies young: the freeze's young collection frees it
        del lost  # frozen garbage in a cycle: only a sweep can find it
        kept = [Cycle() for _ in range(10)]  # live objects the freeze adds to the frozen set
        tick = policy.tick(idle=False)
        assert tick is not None and tick.kind == "freeze", tick
        assert young_garbage() is None, "a young cycle was frozen instead of collected"
        assert policy.tick(idle=False) is None, "froze again with no young collection since"
        assert lost_ref() is not None, "the freeze scanned frozen objects"

        tick = policy.tick(idle=True)  # the frozen set grew: an idle tick sweeps everything
        assert tick is not None and tick.kind == "sweep", tick
        assert lost_ref() is None, "the sweep left a frozen cycle behind (a leak)"
        assert policy.tick(idle=True) is None, "a sweep ran again with nothing grown"

        doomed = Cycle()
        doomed_ref = weakref.ref(doomed)
        gc.collect(1), gc.collect(1), gc.collect(1)
        assert policy.tick(idle=False).kind == "freeze"  # freezes `doomed`
        del doomed
        assert policy.tick(idle=False) is None, "a sweep ran while busy before it was overdue"
        clock.now += 600.0  # never idle: the sweep is overdue after max_deferral_s anyway
        tick = policy.tick(idle=False)
        assert tick is not None and tick.kind == "sweep", tick
        assert doomed_ref() is None, "the overdue sweep left a frozen cycle behind"
        assert [t.kind for t in policy.ticks] == ["freeze", "sweep", "freeze", "sweep"]
        assert all(t.ms >= 0 for t in policy.ticks) and kept
    finally:
        policy.uninstall()
    assert gc.get_threshold() == before, "uninstall did not restore the thresholds"
    assert gc.get_freeze_count() == 0, "uninstall left objects frozen"
    assert policy.tick(idle=True) is None, "an uninstalled policy still collects"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"full_every": 0}, "full_every must be at least 1, got 0"),
        ({"sweep_growth": 0}, "sweep_growth must be positive, got 0"),
        ({"max_deferral_s": -1}, "max_deferral_s must be positive, got -1"),
    ],
)
def test_bad_settings_are_named(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        GcPolicy(**kwargs)


class StandInController:
    """The few controller calls the headless ticker makes; stops after ``frames`` frames."""

    def __init__(self, frames: int) -> None:
        self.frames = frames
        self.thresholds: list[tuple[int, int, int]] = []

    def bind_main_thread(self) -> None:
        pass

    def should_stop(self) -> bool:
        return len(self.thresholds) >= self.frames

    def run_frame(self) -> None:
        self.thresholds.append(gc.get_threshold())

    def wait_for_work(self, timeout: float) -> bool:
        return False  # nothing posted: the ticker is idle at once (IDLE_AFTER_S is 0 below)


def test_headless_ticker_installs_ticks_and_uninstalls_the_policy(collector, monkeypatch) -> None:
    from manual_slop import headless

    monkeypatch.setattr(headless, "IDLE_AFTER_S", 0.0)
    before = gc.get_threshold()
    controller = StandInController(frames=3)
    idle_flags: list[bool] = []

    class Recording(GcPolicy):
        def tick(self, idle: bool):
            idle_flags.append(idle)
            return super().tick(idle)

    policy = Recording()
    lost_ref = weakref.ref(Cycle())  # garbage already: install's collection frees it
    headless.HeadlessTicker(controller, hz=1000.0, gc_policy=policy).run()  # type: ignore[arg-type]
    assert lost_ref() is None
    assert idle_flags == [True] * 3, "the ticker did not tick the policy between frames"
    assert [t[2] for t in controller.thresholds] == [NO_AUTOMATIC_FULL] * 3, "frames ran without the policy"
    assert gc.get_threshold() == before and gc.get_freeze_count() == 0, "the ticker left the policy installed"
