#!/usr/bin/env python3
"""Screenshots of the three colour themes for docs/guide_gui.md.

Opens the real window under a private Xvfb (software GL) at 960x600 on a controller with a
little realistic state — a short discussion, a Gemini cached content and Anthropic cache hits
in the comms log, a fetched model list and MMA tier models — shows the Theme panel, and for
each theme (dark, light, nerv) switches it through the ``theme`` field on the main thread,
waits until the window has applied it, and captures the whole window with the test engine.

Run: ``.venv/bin/python scripts/screenshot_themes.py [--out docs/images]``
(writes ``theme_dark.png``, ``theme_light.png``, ``theme_nerv.png``).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT)]

from imgui_bundle.immapp import testing  # noqa: E402
from tests.xvfb import xvfb_display  # noqa: E402

from manual_slop.controller import AppController  # noqa: E402
from manual_slop.gui import App  # noqa: E402
from manual_slop.themes import THEME_NAMES  # noqa: E402

SIZE = (960, 600)
MODELS = ["claude-opus-4-1", "claude-sonnet-4-6", "claude-haiku-4-5"]
DISCUSSION = (
    ("User", "Why does the parser drop the last line of config.toml?"),
    (
        "AI",
        "`read_block()` stops at the first blank line and the file has no trailing newline, so "
        "the final `key = value` never reaches the loop. Appending `\\n` before splitting fixes it.",
    ),
    ("User", "Write the fix and a test for a file without a trailing newline."),
)


def _comms(provider: str, model: str, kind: str, payload: dict, tier: str = "") -> dict:
    now = time.time()
    return {
        "ts": time.strftime("%H:%M:%S", time.localtime(now)),
        "local_ts": now,
        "direction": "IN",
        "kind": kind,
        "provider": provider,
        "model": model,
        "source_tier": tier or None,
        "payload": payload,
    }


def _usage(read: int, write: int, fresh: int = 900) -> dict:
    return {
        "text": "…",
        "usage": {
            "input_tokens": fresh,
            "output_tokens": 240,
            "cache_read_tokens": read,
            "cache_write_tokens": write,
        },
    }


def stage(ctrl: AppController) -> None:
    """The state the pictures show (set before the window opens, on this thread)."""
    for role, text in DISCUSSION:
        ctrl.context.discussions.append(role, text)
    ctrl.fields.set("current_provider", "anthropic")
    ctrl.state.model_lists["anthropic"] = list(MODELS)
    ctrl.state.available_models = list(MODELS)
    ctrl.fields.set("mma_tier1_model", MODELS[0])
    ctrl.fields.set("mma_tier3_models", [MODELS[2], MODELS[1]])
    ctrl.fields.set("ai_input", "Now run the tests.")
    for entry in (
        _comms(
            "gemini", "gemini-2.5-flash", "cache_created", {"name": "cachedContents/7kq2v", "tokens": 48_210}
        ),
        _comms("anthropic", MODELS[1], "response", _usage(0, 31_400)),
        _comms("anthropic", MODELS[1], "response", _usage(31_400, 0, 410)),
        _comms("anthropic", MODELS[2], "response", _usage(28_950, 1_200, 300), "Tier 3"),
    ):
        ctrl.add_comms_entry(entry)
    ctrl.process_pending()


def capture_themes(out: Path) -> list[Path]:
    written: list[Path] = []
    with tempfile.TemporaryDirectory() as tmp:
        ctrl = AppController(Path(tmp) / "config.toml", environ={})
        try:
            stage(ctrl)
            app = App(ctrl, size=SIZE)
            app.runner_params.ini_disable = True

            def test(ctx, app=app) -> None:
                ctx.yield_(5)
                app.focus("Theme")
                app.focus("Discussion")
                for theme in THEME_NAMES:
                    ctrl.post_gui_task(
                        {"action": "custom_callback", "callback": lambda t=theme: ctrl.fields.set("theme", t)}
                    )
                    for _ in range(120):
                        if app.gui.appearance[:1] == (theme,):
                            break
                        ctx.yield_()
                    else:
                        raise RuntimeError(f"the window never applied the {theme} theme")
                    ctx.yield_(4)
                    path = out / f"theme_{theme}.png"
                    testing.capture(ctx, str(path))
                    written.append(path)

            app.run(test=test)
        finally:
            ctrl.bind_main_thread()
            ctrl.shutdown()
    return written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "images")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    with xvfb_display():
        written = capture_themes(args.out.resolve())
    for path in written:
        print(f"{path} ({path.stat().st_size:,} bytes)")
    if len(written) != len(THEME_NAMES):
        sys.exit(f"only {len(written)} of {len(THEME_NAMES)} themes captured")


if __name__ == "__main__":
    main()
