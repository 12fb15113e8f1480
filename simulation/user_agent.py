"""A simulated user: reads, types and hesitates at a human pace — or instantly.

Scenarios act through a :class:`UserAgent` rather than the client directly, so
the same scenario runs in CI at full speed (:meth:`Pace.instant`, the default: no
sleeping at all) and, for a developer watching a live app, like a person
(:meth:`Pace.human`): it pauses to read what the app shows (reading speed in words
per minute), types a message into a field a few characters at a time with jittered
gaps (the app sees each partial value, as a window would), and now and then
hesitates before a click or a decision.

Every pause is drawn from a seeded random generator, so a run can be replayed.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from manual_slop.hooks import ApiHookClient

__all__ = ["Pace", "UserAgent"]


@dataclass(frozen=True, slots=True)
class Pace:
    """How fast the simulated user is; every delay is in seconds."""

    reading_wpm: float = 0.0  # words per minute when reading; 0 = no reading delay
    typing_cps: float = 0.0  # characters per second when typing; 0 = the whole text at once
    typing_jitter: float = 0.0  # +/- this fraction of each typing gap
    typing_chunk: int = 6  # characters sent per field update while typing
    hesitation_chance: float = 0.0  # probability of a pause before an action
    hesitation_s: tuple[float, float] = (0.0, 0.0)  # (shortest, longest) pause
    max_pause_s: float = 5.0  # no single pause is longer than this
    seed: int = 0

    @classmethod
    def instant(cls) -> Pace:
        """CI: no delays at all."""
        return cls()

    @classmethod
    def human(cls, seed: int = 0) -> Pace:
        """A developer watching: ~250 wpm reading, ~12 characters/s typing, occasional pauses."""
        return cls(
            reading_wpm=250.0,
            typing_cps=12.0,
            typing_jitter=0.4,
            typing_chunk=4,
            hesitation_chance=0.3,
            hesitation_s=(0.3, 1.5),
            max_pause_s=4.0,
            seed=seed,
        )

    @property
    def is_instant(self) -> bool:
        return self.reading_wpm <= 0 and self.typing_cps <= 0 and self.hesitation_chance <= 0


class UserAgent:
    """Acts on the app over the Hook API the way a person at the window would."""

    def __init__(
        self,
        client: ApiHookClient,
        pace: Pace | None = None,
        *,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.client = client
        self.pace = pace or Pace.instant()
        self._rng = random.Random(self.pace.seed)
        self._sleep = sleep
        self.paused_s = 0.0  # total time spent reading, typing and hesitating

    # -- pauses -------------------------------------------------------------------------------
    def _pause(self, seconds: float) -> None:
        seconds = min(max(0.0, seconds), self.pace.max_pause_s)
        if seconds > 0:
            self.paused_s += seconds
            self._sleep(seconds)

    def read(self, text: Any) -> None:
        """Take the time to read ``text`` (nothing when reading is instant)."""
        if self.pace.reading_wpm <= 0:
            return
        words = len(str(text).split())
        self._pause(words / self.pace.reading_wpm * 60.0)

    def hesitate(self) -> None:
        """Sometimes pause before acting."""
        if self.pace.hesitation_chance > 0 and self._rng.random() < self.pace.hesitation_chance:
            low, high = self.pace.hesitation_s
            self._pause(self._rng.uniform(low, high))

    # -- actions ------------------------------------------------------------------------------
    def type_into(self, field: str, text: str, timeout: float = 10.0) -> None:
        """Type ``text`` into a string field; returns once the app holds the whole text."""
        pace = self.pace
        if pace.typing_cps > 0 and len(text) > pace.typing_chunk:
            step = max(1, pace.typing_chunk)
            for end in range(step, len(text), step):
                self.client.set_value(field, text[:end])
                gap = step / pace.typing_cps
                self._pause(gap * (1.0 + self._rng.uniform(-pace.typing_jitter, pace.typing_jitter)))
        self.client.wait_for_task(self.client.set_value(field, text), timeout)

    def set(self, field: str, value: Any, timeout: float = 10.0) -> None:
        """Change a setting (a checkbox, a combo, a slider) and wait until it is applied."""
        self.hesitate()
        self.client.wait_for_task(self.client.set_value(field, value), timeout)

    def click(self, action: str, user_data: Any = None, timeout: float = 10.0) -> None:
        """Press a button and wait until the app handled it (HookTaskFailed when it refused)."""
        self.hesitate()
        self.client.wait_for_task(self.client.click(action, user_data), timeout)

    def select(self, listbox: str, item: str, timeout: float = 10.0) -> None:
        self.hesitate()
        self.client.wait_for_task(self.client.select_list_item(listbox, item), timeout)

    def select_tab(self, tab_bar: str, tab: str, timeout: float = 10.0) -> None:
        self.hesitate()
        self.client.wait_for_task(self.client.select_tab(tab_bar, tab), timeout)

    def approve(self, dialog: dict[str, Any], payload: dict[str, Any] | None = None) -> None:
        """Read a dialog, think, approve it (with edits when ``payload`` is given)."""
        self.read(dialog.get("payload"))
        self.hesitate()
        self.client.approve(dialog["id"], payload)

    def reject(self, dialog: dict[str, Any], reason: str = "", abort: bool = False) -> None:
        self.read(dialog.get("payload"))
        self.hesitate()
        self.client.reject(dialog["id"], reason, abort)
