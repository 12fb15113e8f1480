#!/usr/bin/env python3
"""The Gemini CLI's BeforeTool hook: every tool call the CLI makes waits in Manual Slop's
Execution Clutch first.

The ``gemini_cli`` provider installs this script as a ``BeforeTool`` hook for every tool in
the private CLI home it prepares. Before each tool call the CLI runs it with the call as
JSON on stdin::

    {"tool_name": "run_shell_command", "tool_input": {"command": "..."}, "session_id": "...", "cwd": "..."}

The script asks the Hook API (``POST $SLOP_HOOK_URL/api/ask`` with the app's bearer token),
blocks until the user decides (in the GUI or over the API) or the approval policy does,
and prints the CLI's decision as one JSON object on stdout::

    {"decision": "allow"}                                                    approved as asked
    {"decision": "allow", "hookSpecificOutput": {"tool_input": {...}}}       approved, arguments edited
    {"decision": "deny", "reason": "REJECTED by user: ..."}                  the reason reaches the model

It fails closed. An unset or unreachable Hook API, a refused token, an approval timeout, a
malformed hook call, or a bug in this script all end in ``deny`` with a reason naming the
problem: the CLI treats a hook that prints nothing or exits with 1 as "allow", so this
script always prints a decision and exits 0 (exit 2, "block", is the last resort).

Environment (set by the provider for the CLI, inherited by its hooks):

    SLOP_HOOK_URL      the Hook API's base URL (unset: no Hook API is running -> deny)
    SLOP_HOOK_TOKEN    its bearer token; when empty (the provider never passes it, so no
                       command the CLI runs can read it from the environment), the token is
                       read from the app's per-user runtime token file:
    SLOP_HOOK_TOKEN_FILE   that file (the provider names it: the CLI runs with its own TMPDIR);
                       unset: the runtime file of the URL's port,
                       $XDG_RUNTIME_DIR/manual_slop/hook-<port>.token, else
                       <tempdir>/manual_slop-<uid>/hook-<port>.token
                       (the lookup of manual_slop.hooks.token.discover_token)
    SLOP_BRIDGE_DENY   when set: deny every call with this reason without asking
                       (tools are off for the request)
    SLOP_BRIDGE_ASKS   a folder; a marker file ``ask-<pid>`` exists there while an ask
                       waits for a human, so the provider stops its own timeout clock

Standard library only, so it starts in a few tens of milliseconds with any Python 3.
"""

from __future__ import annotations

import http.client
import json
import os
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

# The CLI kills a hook after its configured timeout and then runs the tool anyway; the
# provider sets that timeout to Node's maximum (~24.8 days), and the bridge gives up
# (and denies) well before it.
WAIT_LIMIT_S = 20 * 86_400.0
CONNECT_TIMEOUT_S = 5.0


def decide(call: Any, environ: Mapping[str, str]) -> dict[str, Any]:
    """The CLI's decision for one hook call (never raises for a bad call or an API failure)."""
    if not isinstance(call, dict) or not isinstance(call.get("tool_name"), str) or not call["tool_name"]:
        return deny("the hook call from the Gemini CLI has no tool_name; the tool was not run")
    tool = call["tool_name"]
    args = call.get("tool_input")
    if not isinstance(args, dict):
        args = {}
    refusal = environ.get("SLOP_BRIDGE_DENY", "")
    if refusal:
        return deny(refusal)
    url = environ.get("SLOP_HOOK_URL", "").strip()
    if not url:
        return deny(
            f"{tool} was not run: Manual Slop's Hook API is not running, so nobody can approve it "
            "(start Manual Slop headless, or with hook.enabled = true or --enable-test-hooks)"
        )
    body = {"question": f"The Gemini CLI asks to run {tool}", "tool": tool, "args": args}
    marker = _marker(environ)
    try:
        status, reply = _post(url, "/api/ask", body, _token(url, environ))
    except (OSError, http.client.HTTPException, ValueError) as exc:
        return deny(
            f"{tool} was not run: Manual Slop's Hook API at {url} is unreachable "
            f"({type(exc).__name__}: {exc}); nobody could approve it"
        )
    finally:
        if marker is not None:
            marker.unlink(missing_ok=True)
    return _answer(tool, args, status, reply)


def deny(reason: str) -> dict[str, Any]:
    return {"decision": "deny", "reason": reason}


def _answer(tool: str, args: dict[str, Any], status: int, reply: Any) -> dict[str, Any]:
    if status == 200 and isinstance(reply, dict) and isinstance(reply.get("approved"), bool):
        if not reply["approved"]:
            why = reply.get("reason") or reply.get("answer") or ""
            if why.startswith("ACCESS DENIED"):  # the path policy refused it; no one was asked
                return deny(why)
            return deny(f"REJECTED by user: {why}" if why else "REJECTED by user")
        approved = reply.get("args")
        if isinstance(approved, dict) and approved != args:
            return {"decision": "allow", "hookSpecificOutput": {"tool_input": approved}}
        return {"decision": "allow"}
    message = ""
    if isinstance(reply, dict) and isinstance(reply.get("error"), dict):
        message = str(reply["error"].get("message") or "")
    if status == 408:
        return deny(f"{tool} was not run: nobody decided within the approval timeout ({message})")
    if status == 409:
        return deny(f"{tool} was not run: Manual Slop is shutting down ({message})")
    if status == 401:
        return deny(
            f"{tool} was not run: the Hook API refused the bridge's token "
            "(SLOP_HOOK_TOKEN, or the app's runtime token file for its port)"
        )
    return deny(f"{tool} was not run: the Hook API answered HTTP {status} ({message or 'no details'})")


def runtime_token_path(port: int, environ: Mapping[str, str]) -> Path:
    """Where the app keeps its token while it listens on ``port`` (see manual_slop.hooks.token)."""
    xdg = environ.get("XDG_RUNTIME_DIR", "").strip()
    if xdg and os.path.isabs(xdg):
        return Path(xdg) / "manual_slop" / f"hook-{port}.token"
    user = str(os.getuid()) if hasattr(os, "getuid") else __import__("getpass").getuser()
    return Path(tempfile.gettempdir()) / f"manual_slop-{user}" / f"hook-{port}.token"


def _token(url: str, environ: Mapping[str, str]) -> str:
    given = environ.get("SLOP_HOOK_TOKEN", "").strip()
    if given:
        return given
    named = environ.get("SLOP_HOOK_TOKEN_FILE", "").strip()
    port = urlsplit(url).port
    if not named and port is None:
        return ""
    path = Path(named) if named else runtime_token_path(port, environ)  # type: ignore[arg-type]
    try:
        return path.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return ""


def _post(url: str, path: str, body: dict[str, Any], token: str) -> tuple[int, Any]:
    parts = urlsplit(url)
    if parts.scheme != "http" or not parts.hostname:
        raise ValueError(f"SLOP_HOOK_URL must be an http:// URL, got {url!r}")
    conn = http.client.HTTPConnection(parts.hostname, parts.port or 80, timeout=CONNECT_TIMEOUT_S)
    try:
        conn.connect()
        conn.sock.settimeout(WAIT_LIMIT_S)  # the ask blocks until someone decides
        headers = {"Content-Type": "application/json"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        conn.request("POST", parts.path.rstrip("/") + path, json.dumps(body), headers)
        response = conn.getresponse()
        data = response.read()
    finally:
        conn.close()
    try:
        return response.status, json.loads(data) if data else None
    except ValueError:
        return response.status, None


def _marker(environ: Mapping[str, str]) -> Path | None:
    folder = environ.get("SLOP_BRIDGE_ASKS", "")
    if not folder:
        return None
    marker = Path(folder) / f"ask-{os.getpid()}"
    try:
        marker.touch()
    except OSError:
        return None  # only the provider's timeout clock depends on it
    return marker


def main() -> int:
    try:
        raw = sys.stdin.read()
        try:
            call = json.loads(raw)
        except ValueError:
            decision = deny("the hook call from the Gemini CLI is not JSON; the tool was not run")
        else:
            decision = decide(call, os.environ)
        sys.stdout.write(json.dumps(decision) + "\n")
        sys.stdout.flush()
        return 0
    except BaseException as exc:  # fail closed, whatever happened
        reason = f"the tool was not run: Manual Slop's approval bridge failed ({type(exc).__name__}: {exc})"
        try:
            sys.stdout.write(json.dumps(deny(reason)) + "\n")
            sys.stdout.flush()
            return 0
        except BaseException:
            sys.stderr.write(reason + "\n")
            return 2  # the CLI blocks the tool with stderr as the reason


if __name__ == "__main__":
    sys.exit(main())
