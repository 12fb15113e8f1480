"""A headless start imports none of the heavy libraries: they load on first use.

The real start-up path runs in a fresh interpreter (``cli.main`` with ``--headless
--hook-port 0``: controller, every feature's bindings, the Hook API listening) and, where the
ticker would start, records which heavy modules are loaded, then stops. Each of these costs
the start 5-400 ms (scripts/bench_startup.py measures the whole). It also records what was
loaded when the Hook API had started listening (before the controller is built): the first
``GET /status`` must not wait for the app's modules.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from manual_slop.tools.builtin import builtin_tools

SRC = Path(__file__).resolve().parents[2] / "src"
HEAVY = (
    "numpy", "jsonschema", "yaml", "imgui_bundle", "anthropic", "google.genai", "openai", "mcp",
    "xllamacpp", "PIL", "requests", "httpx", "pydantic", "html.parser", "urllib.request",
)  # fmt: skip

# Not needed to answer the first GET /status: imported after the Hook API listens (the app,
# the API's routes) or on first use (saving a TOML file, checking a token, joining threads).
AFTER_LISTENING = (
    "manual_slop.controller", "manual_slop.ai", "manual_slop.hooks.api", "manual_slop.hooks.routes",
    "manual_slop.hooks.openapi", "manual_slop.events", "manual_slop.automation", "manual_slop.state",
    "asyncio", "logging", "tomli_w", "hmac", "secrets", "concurrent.futures", "encodings.idna",
)  # fmt: skip

PROBE = """
import json, sys
import manual_slop.headless as headless
from manual_slop import cli

def report(ticker):
    loaded = sorted(m for m in json.loads(sys.argv[1]) if m in sys.modules)
    print("LOADED " + json.dumps(loaded), flush=True)

announce = cli._announce

def announce_and_report(*args, **kwargs):
    announce(*args, **kwargs)  # the Hook API listens and has said so: what did that need?
    early = sorted(m for m in json.loads(sys.argv[3]) if m in sys.modules)
    print("EARLY " + json.dumps(early), flush=True)

cli._announce = announce_and_report
headless.HeadlessTicker.run = report
code = cli.main(["--headless", "--hook-port", "0", "--config", sys.argv[2]])
print("EXIT", code, flush=True)
"""


def test_a_headless_start_listens_first_and_leaves_the_heavy_libraries_unloaded(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "SLOP_HOOK_TOKEN")}
    env["PYTHONPATH"] = str(SRC)
    done = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(HEAVY), str(tmp_path / "config.toml"),
         json.dumps(AFTER_LISTENING)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    lines = done.stdout.splitlines()
    loaded = [json.loads(line.removeprefix("LOADED ")) for line in lines if line.startswith("LOADED ")]
    assert loaded, f"the app never reached its ticker: {done.stdout}\n{done.stderr}"
    assert loaded[0] == [], f"a headless start imported {loaded[0]}; import them where they are used"
    early = [json.loads(line.removeprefix("EARLY ")) for line in lines if line.startswith("EARLY ")]
    assert early == [[]], f"the Hook API waited for {early} before it listened; import them after"
    assert "EXIT 0" in lines, done.stderr


def test_every_builtin_schema_is_a_valid_json_schema() -> None:
    """The built-in tools check their schemas on first use (keeping jsonschema out of the
    start-up); this checks them all now, as declaring them used to."""
    tools = builtin_tools(with_powershell=True)
    assert len(tools) > 20
    for tool in tools:
        assert tool.validator.is_valid({}) in (True, False), tool.name  # compiles (and checks) it
