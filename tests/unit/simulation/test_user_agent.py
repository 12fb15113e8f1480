"""The simulated user: instant in CI, human-paced on request, replayable by seed."""

from __future__ import annotations

from typing import Any

from simulation import Pace, UserAgent


class RecordingClient:
    """Stands in for ApiHookClient: records what the user did (the agent only calls these)."""

    def __init__(self) -> None:
        self.values: list[tuple[str, Any]] = []
        self.clicks: list[tuple[str, Any]] = []
        self.decisions: list[tuple[str, bool, Any]] = []

    def set_value(self, field: str, value: Any) -> str:
        self.values.append((field, value))
        return f"t{len(self.values)}"

    def click(self, action: str, user_data: Any = None) -> str:
        self.clicks.append((action, user_data))
        return "c"

    def wait_for_task(self, task_id: str, timeout: float = 10.0) -> dict[str, Any]:
        return {"state": "done"}

    def approve(self, dialog_id: str, payload: Any = None) -> None:
        self.decisions.append((dialog_id, True, payload))

    def reject(self, dialog_id: str, reason: str = "", abort: bool = False) -> None:
        self.decisions.append((dialog_id, False, reason))


def test_instant_pace_never_sleeps_and_types_in_one_go() -> None:
    sleeps: list[float] = []
    client = RecordingClient()
    user = UserAgent(client, Pace.instant(), sleep=sleeps.append)  # type: ignore[arg-type]
    user.read("a long text " * 100)
    user.type_into("ai_input", "Hello there, model.")
    user.click("btn_gen_send")
    user.approve({"id": "d1", "payload": {"script": "ls"}})
    assert sleeps == [] and user.paused_s == 0
    assert client.values == [("ai_input", "Hello there, model.")]
    assert client.clicks == [("btn_gen_send", None)] and client.decisions == [("d1", True, None)]
    assert Pace.instant().is_instant and not Pace.human().is_instant


def test_human_pace_reads_types_and_hesitates() -> None:
    sleeps: list[float] = []
    client = RecordingClient()
    pace = Pace.human(seed=7)
    user = UserAgent(client, pace, sleep=sleeps.append)  # type: ignore[arg-type]
    user.read(" ".join(["word"] * 50))  # 50 words at 250 wpm = 12 s, capped at max_pause_s
    assert sleeps == [pace.max_pause_s]
    sleeps.clear()
    user.type_into("ai_input", "Hello there")  # typed 4 characters at a time
    assert [v for _, v in client.values] == ["Hell", "Hello th", "Hello there"]
    assert len(sleeps) == 2 and all(0 < s < 1 for s in sleeps)
    for _ in range(20):
        user.click("btn_save")
    hesitations = [s for s in sleeps[2:] if s > 0]
    assert hesitations and all(pace.hesitation_s[0] <= s <= pace.hesitation_s[1] for s in hesitations)
    assert len(hesitations) < 20  # only sometimes
    assert user.paused_s == sum([pace.max_pause_s, *sleeps])


def test_same_seed_same_pauses() -> None:
    def pauses(seed: int) -> list[float]:
        sleeps: list[float] = []
        user = UserAgent(RecordingClient(), Pace.human(seed), sleep=sleeps.append)  # type: ignore[arg-type]
        for _ in range(10):
            user.type_into("ai_input", "some message text")
            user.click("btn_save")
        return sleeps

    assert pauses(1) == pauses(1) != pauses(2)
