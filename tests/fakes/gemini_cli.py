"""Set up the mock ``gemini`` CLI (:mod:`tests.fakes.gemini_cli_mock`) for one test.

``FakeGeminiCli(folder, turns)`` writes the script and an executable ``gemini``
wrapper in ``folder``; point the provider's binary at ``fake.binary`` and read
what each invocation received from ``fake.calls()``.
"""

from __future__ import annotations

import json
import os
import shlex
import stat
import sys
from pathlib import Path
from typing import Any

__all__ = ["FakeGeminiCli", "cli_turn"]

MOCK = Path(__file__).with_name("gemini_cli_mock.py")


def cli_turn(
    text: str = "",
    *,
    chunks: list[str] | None = None,
    tool_uses: list[dict[str, Any]] | None = None,
    error: dict[str, Any] | None = None,
    exit: int | None = None,
    stderr: str = "",
    delay: float = 0.0,
    **extra: Any,
) -> dict[str, Any]:
    """One scripted CLI invocation (``extra``: ask_wait, garbage, child, no_result; see the mock)."""
    turn: dict[str, Any] = {"text": text, **extra}
    if chunks is not None:
        turn["chunks"] = chunks
    if tool_uses:
        turn["tool_uses"] = tool_uses
    if error is not None:
        turn["error"] = error
    if exit is not None:
        turn["exit"] = exit
    if stderr:
        turn["stderr"] = stderr
    if delay:
        turn["delay"] = delay
    return turn


class FakeGeminiCli:
    """A scripted ``gemini`` executable in ``folder``."""

    def __init__(self, folder: Path, turns: list[dict[str, Any]] | None = None) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.script = folder / "gemini_script.json"
        self.script.write_text(json.dumps(turns or []), encoding="utf-8")
        self.binary = folder / "gemini"
        self.binary.write_text(
            "#!/bin/sh\n"
            f"exec {shlex.quote(sys.executable)} {shlex.quote(str(MOCK))} "
            f'--script {shlex.quote(str(self.script))} "$@"\n',
            encoding="utf-8",
        )
        self.binary.chmod(self.binary.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)

    def push(self, *turns: dict[str, Any]) -> None:
        current = json.loads(self.script.read_text(encoding="utf-8"))
        self.script.write_text(json.dumps([*current, *turns]), encoding="utf-8")

    def calls(self) -> list[dict[str, Any]]:
        """argv and stdin of every invocation so far, in order."""
        log = Path(str(self.script) + ".calls")
        if not log.exists():
            return []
        return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines() if line.strip()]

    @staticmethod
    def flag(argv: list[str], name: str) -> str | None:
        return argv[argv.index(name) + 1] if name in argv and argv.index(name) + 1 < len(argv) else None

    def env(self) -> dict[str, str]:
        return dict(os.environ)
