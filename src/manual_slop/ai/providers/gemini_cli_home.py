"""The private home the ``gemini_cli`` provider runs the real Gemini CLI in.

One home per provider object (one app session), made at the first call and deleted by
``close()`` (or when the provider object is collected, or at exit); the CLI finds it
through ``GEMINI_CLI_HOME``::

    <home>/.gemini/settings.json     auth type gemini-api-key; telemetry, usage statistics and
                                     auto-update off; the CLI's own retries off; our BeforeTool
                                     hook (scripts/cli_tool_bridge.py) for every tool
    <home>/.gemini/tmp/...           the CLI's sessions (what ``--resume`` reads)
    <home>/tmp/                      TMPDIR: the CLI's error reports land here, not in /tmp
    <home>/asks/                     the bridge's markers while an ask waits for a human

The CLI needs the workspace trusted to run headless, and a trusted workspace's own
``.gemini/settings.json`` overrides user settings: one that configures hooks could switch
the approval gate off (``hooksConfig.enabled = false``) or run commands outside it, so
:func:`check_workspace` refuses to run the CLI there. (System settings would win over the
workspace, but the CLI only reads a system settings file owned by root.)

The hook command is ``<this Python> -I scripts/cli_tool_bridge.py``; the script is found in
the source tree (``bridge_script()``).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import sys
import tempfile
import weakref
from pathlib import Path
from typing import Any

from manual_slop.ai.errors import ConfigurationError

__all__ = [
    "APPROVAL_MODES",
    "HOOK_TIMEOUT_MS",
    "CliHome",
    "bridge_command",
    "bridge_script",
    "bundled_cli",
    "check_workspace",
    "settings",
]

# The CLI's --approval-mode values. Only ``yolo`` offers the shell tool without the CLI
# prompting (which it cannot do headless); every call is gated by our hook in every mode.
APPROVAL_MODES = ("yolo", "auto_edit", "plan", "default")
# Node's setTimeout maximum. The CLI runs the tool when a hook times out, so the hook's
# timeout must never end a wait for a human; the bridge gives up (and denies) long before.
HOOK_TIMEOUT_MS = 2_147_483_647

_REPO = Path(__file__).resolve().parents[4]


def bridge_script() -> Path:
    """``scripts/cli_tool_bridge.py`` of this source tree (ConfigurationError when it is missing)."""
    script = _REPO / "scripts" / "cli_tool_bridge.py"
    if not script.is_file():
        raise ConfigurationError(
            f"the Gemini CLI approval bridge {script} is missing; the gemini_cli provider runs from a "
            "Manual Slop source checkout (its scripts/ folder holds the bridge)"
        )
    return script


def bridge_command(python: str | None = None) -> str:
    """The shell command the CLI runs before each tool call."""
    interpreter = python or sys.executable
    return f"{shlex.quote(interpreter)} -I {shlex.quote(str(bridge_script()))}"


def bundled_cli() -> Path | None:
    """The CLI ``make test`` / ``make gemini-cli`` installs into ``.tools/gemini-cli`` (or None)."""
    binary = _REPO / ".tools" / "gemini-cli" / "node_modules" / ".bin" / "gemini"
    return binary if binary.exists() else None


def settings(command: str) -> dict[str, Any]:
    """``.gemini/settings.json`` of the private home."""
    return {
        "security": {
            "auth": {"selectedType": "gemini-api-key"},
            # the commands and hooks the CLI runs get no secret (not even its own key); the bridge
            # needs these two, which name the Hook API and where its token is, not the token
            "environmentVariableRedaction": {
                "enabled": True,
                "allowed": ["SLOP_HOOK_URL", "SLOP_HOOK_TOKEN_FILE"],
            },
        },
        "privacy": {"usageStatisticsEnabled": False},
        "telemetry": {"enabled": False},
        "general": {
            "enableAutoUpdate": False,
            "enableAutoUpdateNotification": False,
            # the client retries (RetryPolicy, Retry-After, fallback); the CLI's own backoff
            # would hide a 429 behind minutes of silent waiting
            "maxAttempts": 1,
            "retryFetchErrors": False,
        },
        "hooksConfig": {"enabled": True},
        "hooks": {
            "BeforeTool": [
                {
                    "matcher": ".*",
                    # no "name": hooksConfig.disabled lists hooks by name (else by command,
                    # which holds this home's random path)
                    "hooks": [
                        {
                            "type": "command",
                            "command": command,
                            "timeout": HOOK_TIMEOUT_MS,
                            "description": "Every tool call waits for Manual Slop's Execution Clutch",
                        }
                    ],
                }
            ]
        },
    }


_HOOK_KEYS = re.compile(r'"(hooks|hooksConfig)"\s*:')


def check_workspace(workdir: str | Path) -> None:
    """ConfigurationError when the project's own CLI settings could bypass the approval gate."""
    path = Path(workdir) / ".gemini" / "settings.json"
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return
    except OSError as exc:
        raise ConfigurationError(
            f"{path}: cannot be read ({exc.strerror or exc}), so the gemini_cli provider cannot check "
            "that the project's CLI settings keep its tool approvals on"
        ) from exc
    if _HOOK_KEYS.search(text):
        raise ConfigurationError(
            f"{path} configures Gemini CLI hooks; the gemini_cli provider does not run in this "
            "project because those settings could switch off or bypass the approval of its tool "
            "calls. Remove 'hooks' and 'hooksConfig' from that file, or use another provider."
        )


class CliHome:
    """A private CLI home folder; :meth:`ensure` makes it, :meth:`remove` deletes it."""

    def __init__(self) -> None:
        self.root: Path | None = None
        self._finalizer: weakref.finalize | None = None

    def ensure(self) -> Path:
        """The home folder, made (with its settings) on first use."""
        if self.root is not None and self.root.is_dir():
            return self.root
        root = Path(tempfile.mkdtemp(prefix="slop-gemini-cli-"))
        try:
            (root / ".gemini").mkdir()
            (root / "tmp").mkdir()
            (root / "asks").mkdir()
            _write_json(root / ".gemini" / "settings.json", settings(bridge_command()))
        except BaseException:
            shutil.rmtree(root, ignore_errors=True)
            raise
        self.root = root
        # deleted with this object or at interpreter exit when nobody called remove()
        self._finalizer = weakref.finalize(self, shutil.rmtree, str(root), ignore_errors=True)
        return root

    def environment(self) -> dict[str, str]:
        """The variables that point the CLI at this home."""
        root = self.ensure()
        return {
            "GEMINI_CLI_HOME": str(root),
            "TMPDIR": str(root / "tmp"),
            "SLOP_BRIDGE_ASKS": str(root / "asks"),
        }

    @property
    def asks(self) -> Path | None:
        return None if self.root is None else self.root / "asks"

    def waiting_asks(self) -> bool:
        """True while a bridge waits for a human (its marker file exists)."""
        folder = self.asks
        try:
            return folder is not None and any(folder.iterdir())
        except OSError:
            return False

    def clear_asks(self) -> None:
        folder = self.asks
        if folder is None or not folder.is_dir():
            return
        for marker in folder.iterdir():
            marker.unlink(missing_ok=True)

    def remove(self) -> None:
        if self._finalizer is not None:
            self._finalizer()  # removes the folder (once)
            self._finalizer = None
        self.root = None


def _write_json(path: Path, data: dict[str, Any]) -> None:
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    os.chmod(path, 0o600)
