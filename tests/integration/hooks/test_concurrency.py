"""Eight clients hammer the server while the ticker runs: no errors, writes applied in order."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from manual_slop.hooks import ApiHookClient
from manual_slop.schema import Field
from tests.integration.hooks.conftest import HookApp

CLIENTS = 8
REQUESTS_PER_CLIENT = 500


def test_eight_clients_times_500_mixed_requests(hook_app_factory) -> None:
    app: HookApp = hook_app_factory()
    applied: list[tuple[int, int]] = []  # (client, n) in the order the main thread applied them
    # A real registry field whose setter records the order of application.
    app.ctrl.fields.register(
        "probe",
        Field(str, "", "test probe"),
        lambda: f"{len(applied)}",
        lambda value: applied.append(tuple(int(x) for x in value.split(":"))),
    )
    errors: list[str] = []
    task_ids: dict[int, list[str]] = {n: [] for n in range(CLIENTS)}
    counts = [0] * CLIENTS

    def worker(n: int) -> None:
        client = app.client()
        writes = 0
        mix: list[Callable[[ApiHookClient], Any]] = [
            lambda c: c.get_value("ai_status"),
            lambda c: c.status(),
            lambda c: c.health(),
            lambda c: c.state(),
            lambda c: c.read_events(0, 0.0, 50),
            lambda c: c.pending(),
            lambda c: c.comms(),
            lambda c: c.diagnostics(),
            lambda c: c.task(task_ids[n][-1]) if task_ids[n] else c.session(),
            lambda c: c.mma_status(),
        ]
        try:
            for i in range(REQUESTS_PER_CLIENT):
                if i % 3 == 0:
                    task_ids[n].append(client.set_value("probe", f"{n}:{writes}"))
                    writes += 1
                else:
                    mix[i % len(mix)](client)
                counts[n] += 1
        except Exception as exc:  # collected: a failing thread must fail the test
            errors.append(f"client {n} request {counts[n]}: {type(exc).__name__}: {exc}")
        finally:
            client.close()

    threads = [threading.Thread(target=worker, args=(n,), name=f"test-client-{n}") for n in range(CLIENTS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert not any(t.is_alive() for t in threads)
    assert not errors, errors[:5]
    assert counts == [REQUESTS_PER_CLIENT] * CLIENTS

    checker = app.client()
    for n in range(CLIENTS):
        checker.wait_for_task(task_ids[n][-1])
        assert all(app.ctrl.tasks.get(t).state == "done" for t in task_ids[n])
    writes_per_client = len(task_ids[0])
    for n in range(CLIENTS):
        assert [i for c, i in applied if c == n] == list(range(writes_per_client)), f"client {n} out of order"
    assert checker.health()["healthy"] is True
    logged = app.ctrl.session_log.read("apihooks")
    assert len(logged) >= CLIENTS * REQUESTS_PER_CLIENT
    assert all(entry["status"] < 400 for entry in logged)
