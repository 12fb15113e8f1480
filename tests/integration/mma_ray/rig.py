"""A whole MMA track on the real AI client against the OpenAI-compatible fake, on threads or
on Ray: shared by the Ray tests and ``scripts/bench_mma_scale.py``."""

from __future__ import annotations

import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from manual_slop.ai import AIClient
from manual_slop.headless import HeadlessTicker
from manual_slop.mma.bindings import default_services
from manual_slop.mma.client import TierCaller
from manual_slop.mma.conductor import ConductorConfig, ConductorEngine
from manual_slop.mma.models import Ticket, TierUsage, Track
from manual_slop.mma.persistence import TrackStore
from tests.fakes import OpenAIFake

KEY = "sk-ray-test-4f1e9a"


def provider_settings(fake: OpenAIFake) -> dict[str, Any]:
    """The AI settings a Ray attempt gets (the key included: it travels in the task's environment)."""
    return {"provider": "openai_compatible", "model": "m", "base_url": fake.base_url, "api_key": KEY}


@dataclass
class TrackRig:
    ctrl: Any
    conductor: ConductorEngine
    caller: TierCaller
    fake: OpenAIFake
    ticker: threading.Thread

    def close(self) -> None:
        if self.conductor.is_alive():
            self.conductor.abort(wait=3.0)
        self.conductor.join(5.0)
        self.caller.shutdown(3.0)
        self.fake.stop()
        self.ctrl.request_stop()
        self.ticker.join(5.0)


def track_rig(
    folder: Path,
    make_controller: Any,
    tickets: list[Ticket],
    remote: Any,
    fake: OpenAIFake,
    *,
    files: dict[str, str] | None = None,
    max_workers: int = 4,
) -> TrackRig:
    """A controller on the OpenAI-compatible ``fake`` (its frame loop on a thread, every dialog
    approved by the auto policy), a git project holding ``files``, and a conductor for ``tickets``
    whose attempts run on ``remote`` (None: threads)."""
    folder.mkdir()
    (folder / "config.toml").write_text(
        f'[ai]\nprovider = "openai_compatible"\nmodel = "m"\n\n'
        f'[providers.openai_compatible]\nbase_url = "{fake.base_url}"\nmodel = "m"\n'
    )
    ctrl = make_controller(
        config_file=folder / "config.toml", environ={"OPENAI_API_KEY": KEY}, backend=AIClient()
    )
    base = ctrl.base_dir()
    for name, text in (files or {}).items():
        (base / name).write_text(text)
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=base, check=True)
    ctrl.clutch.set_policy("auto")
    # the app's frame loop: the tools' context is read on the main thread, as in the app
    ticker = threading.Thread(target=HeadlessTicker(ctrl).run, name="test-ticker", daemon=True)
    ticker.start()
    caller = TierCaller(default_services(ctrl).client, TierUsage())
    config = ConductorConfig(
        base_dir=base, max_workers=max_workers, retry_backoff_s=0.01, remote_attempts=remote
    )
    conductor = ConductorEngine(
        Track("tr_ray", "diamond", "goal", tickets=tickets), ctrl.event_queue, True,
        host=ctrl, caller=caller, config=config, store=TrackStore(base),
    )  # fmt: skip
    return TrackRig(ctrl, conductor, caller, fake, ticker)
