"""The command line of the Hook API client: ``python -m manual_slop.hooks.client``.

Every command prints the JSON the API replied, pretty-printed (``--json``: one compact
line); ``events`` prints one event per line. Errors are one line on stderr,
``error: CODE: message`` for an error reply, ``error: message`` otherwise.

Exit codes (:class:`ExitCode`)::

    0    done (events: also Ctrl+C, and a reader that closed the pipe)
    1    an error reply, no server, a wait ran out, a task or request ended in error
    2    bad usage (also an --edit file that is not a JSON object, an unknown event type)
    3    send: the request was cancelled
    130  interrupted (Ctrl+C) while waiting
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import IntEnum
from typing import Any
from urllib.parse import quote

from manual_slop.hooks.api_client import ApiHookClient
from manual_slop.hooks.errors import HookApiError, HookError, HookTaskFailed
from manual_slop.hooks.schemas import EVENT_TYPES, json_type

__all__ = ["ExitCode", "main"]

PROG = "python -m manual_slop.hooks.client"
SEND_WAIT_MIN_S = 120.0  # a model's answer takes longer than a reply: send waits at least this
FOLLOW_POLL_S = 25.0  # one long poll of events --follow (the server allows up to 30 s)
EVENTS_PAGE = 1000

MMA_ACTIONS = {
    "plan": "btn_mma_plan_epic",
    "accept": "btn_mma_accept_tracks",
    "start": "btn_mma_start_track",
    "pause": "btn_mma_pause",
    "resume": "btn_mma_resume",
    "abort": "btn_mma_abort",
}


class ExitCode(IntEnum):
    OK = 0
    FAILED = 1
    USAGE = 2
    CANCELLED = 3
    INTERRUPTED = 130


class UsageError(Exception):
    """An argument argparse cannot check (an --edit file, an event type): exit 2, one line."""


@dataclass(frozen=True, slots=True)
class Outcome:
    """How a command ends: the reply to print (None: it printed its own), the exit code and
    the line for stderr."""

    reply: Any = None
    code: ExitCode = ExitCode.OK
    error: str = ""


Command = Callable[[ApiHookClient, argparse.Namespace], Outcome]


# =========================================================================================
# the commands
# =========================================================================================
def _status(client: ApiHookClient, args: argparse.Namespace) -> Outcome:
    return Outcome(client.status())


def _get(client: ApiHookClient, args: argparse.Namespace) -> Outcome:
    return Outcome(client.get(f"/api/gui/value/{quote(args.field, safe='')}"))


def _set(client: ApiHookClient, args: argparse.Namespace) -> Outcome:
    return _task(client, client.set_value(args.field, _value(args.value)), args.timeout)


def _click(client: ApiHookClient, args: argparse.Namespace) -> Outcome:
    user_data = None if args.user_data is None else _value(args.user_data)
    return _task(client, client.click(args.action, user_data), args.timeout)


def _pending(client: ApiHookClient, args: argparse.Namespace) -> Outcome:
    return Outcome(client.get("/api/pending"))


def _approve(client: ApiHookClient, args: argparse.Namespace) -> Outcome:
    payload = _read_edits(args.edit) if args.edit is not None else {}
    if args.reason:
        payload["reason"] = args.reason
    return Outcome(client.approve(args.id, payload or None))


def _reject(client: ApiHookClient, args: argparse.Namespace) -> Outcome:
    return Outcome(client.reject(args.id, args.reason, args.abort))


def _events(client: ApiHookClient, args: argparse.Namespace) -> Outcome:
    unknown = sorted(set(args.type) - set(EVENT_TYPES))
    if unknown:
        raise UsageError(f"--type: unknown event type {', '.join(unknown)}; known: {', '.join(EVENT_TYPES)}")
    since, wanted = args.since, set(args.type)
    try:
        while True:
            page = client.read_events(since, FOLLOW_POLL_S if args.follow else 0.0, EVENTS_PAGE)
            if page["dropped"]:
                print(f"warning: {page['dropped']} events were lost (the buffer overflowed)", file=sys.stderr)
            for event in page["events"]:
                if not wanted or event["type"] in wanted:
                    print(_dump(event, compact=True), flush=True)
            since = page["next"]
            if not args.follow and len(page["events"]) < EVENTS_PAGE:
                return Outcome()
    except KeyboardInterrupt:  # how --follow is meant to end
        return Outcome()
    except BrokenPipeError:  # the reader has what it wanted (events --follow | head -1)
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # no second error when Python flushes at exit
        os.close(devnull)
        return Outcome()


def _mma(client: ApiHookClient, args: argparse.Namespace) -> Outcome:
    if args.mma_command == "status":
        return Outcome(client.mma_status())
    if args.mma_command == "graph":
        graph = client.mma_graph(args.format, args.track or None)
        if args.format == "mermaid" and not args.json:
            print(graph["mermaid"], end="", flush=True)  # the flowchart itself: `> plan.mmd` works
            return Outcome()
        return Outcome(graph)
    user_data: Any = None
    if args.mma_command == "plan" and args.epic is not None:
        epic = _task(client, client.set_value("mma_epic_input", args.epic), args.timeout)
        if epic.code != ExitCode.OK:
            return epic
    elif args.mma_command == "accept" and args.indices:
        user_data = args.indices
    elif args.mma_command == "start" and args.track:
        user_data = args.track
    return _task(client, client.click(MMA_ACTIONS[args.mma_command], user_data), args.timeout)


def _send(client: ApiHookClient, args: argparse.Namespace) -> Outcome:
    request_id = client.send(args.message)
    if args.no_wait:
        return Outcome({"request_id": request_id})
    status = client.wait_for_request(request_id, max(args.timeout, SEND_WAIT_MIN_S))
    reply = {"request_id": request_id, **status}
    if status["state"] == "error":
        return Outcome(reply, ExitCode.FAILED, f"error: request {request_id} failed: {status['error']}")
    if status["state"] == "cancelled":
        return Outcome(reply, ExitCode.CANCELLED)
    return Outcome(reply)


def _cancel(client: ApiHookClient, args: argparse.Namespace) -> Outcome:
    reply = client.cancel(args.request_id)
    if args.no_wait:
        return Outcome(reply)
    status = client.wait_for_request(args.request_id, args.timeout)
    final = {"request_id": args.request_id, **status}
    if status["state"] != "cancelled":  # it finished on its own before the cancel reached it
        return Outcome(final, ExitCode.FAILED, f"error: request {args.request_id} ended {status['state']}")
    return Outcome(final)


COMMANDS: dict[str, Command] = {
    "status": _status,
    "get": _get,
    "set": _set,
    "click": _click,
    "pending": _pending,
    "approve": _approve,
    "reject": _reject,
    "events": _events,
    "mma": _mma,
    "send": _send,
    "cancel": _cancel,
}


# =========================================================================================
# helpers
# =========================================================================================
def _task(client: ApiHookClient, task_id: str, timeout: float) -> Outcome:
    """Wait for a queued task; its ``GET /api/gui/task/{id}`` status, exit 1 when it failed."""
    try:
        return Outcome(client.wait_for_task(task_id, timeout))
    except HookTaskFailed as exc:
        return Outcome(client.task(task_id), ExitCode.FAILED, f"error: {exc}")


def _value(text: str) -> Any:
    """A command-line value: JSON when it parses (42, true, ["a"]), else the text itself."""
    try:
        return json.loads(text)
    except ValueError:
        return text


def _read_edits(source: str) -> dict[str, Any]:
    """The JSON object of ``--edit FILE`` (``-``: stdin); UsageError naming the file otherwise."""
    name = "<stdin>" if source == "-" else source
    try:
        if source == "-":
            text = sys.stdin.read()
        else:
            with open(source, encoding="utf-8") as file:
                text = file.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"--edit {name}: cannot read it ({getattr(exc, 'strerror', None) or exc})") from exc
    try:
        edits = json.loads(text)
    except ValueError as exc:
        raise UsageError(f"--edit {name}: not JSON ({exc})") from exc
    if not isinstance(edits, dict):
        raise UsageError(
            f"--edit {name}: expected a JSON object of the dialog's editable keys, got {json_type(edits)}"
        )
    return edits


def _dump(value: Any, *, compact: bool) -> str:
    if compact:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return json.dumps(value, ensure_ascii=False, indent=2)


# =========================================================================================
# the parser
# =========================================================================================
def _parser() -> argparse.ArgumentParser:
    # --json is accepted before or after the command: `pending --json` works as `--json pending`.
    output = argparse.ArgumentParser(add_help=False)
    output.add_argument(
        "--json", action="store_true", default=argparse.SUPPRESS, help="print compact one-line JSON"
    )
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Drive Manual Slop over its Hook API. Prints the JSON the API replied.",
        epilog="exit codes: 0 done; 1 error reply, no server, a task or request failed, a wait ran "
        "out; 2 bad usage; 3 send: the request was cancelled; 130 interrupted",
    )
    parser.add_argument("--url", default=None, help="server URL (default: SLOP_HOOK_URL, else the port)")
    parser.add_argument("--port", type=int, default=None, help="server port on 127.0.0.1 (default 8999)")
    parser.add_argument(
        "--token",
        default=None,
        help="bearer token (default: SLOP_HOOK_TOKEN, else the app's runtime token file for the port)",
    )
    parser.add_argument("--timeout", type=float, default=10.0, help="seconds to wait for a reply or task")
    parser.add_argument("--json", action="store_true", help="print compact one-line JSON")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, help_text: str) -> argparse.ArgumentParser:
        return commands.add_parser(name, help=help_text, description=help_text, parents=[output])

    command("status", "server status")
    command("get", "a field's value: {field, value}").add_argument("field")
    setter = command("set", "set a field (VALUE is JSON, or text) and wait for the task")
    setter.add_argument("field")
    setter.add_argument("value")
    clicker = command("click", "click an action (USER_DATA is JSON, or text) and wait for the task")
    clicker.add_argument("action")
    clicker.add_argument("user_data", nargs="?")
    command("pending", "dialogs waiting for a decision: {pending: [...]}")
    approve = command("approve", "approve a pending dialog, optionally edited")
    approve.add_argument("id")
    approve.add_argument(
        "--edit",
        metavar="FILE",
        help="a JSON object of the dialog's editable keys, e.g. {\"args\": {...}} ('-': stdin)",
    )
    approve.add_argument("--reason", default="", help="recorded with the decision in the audit log")
    reject = command("reject", "reject a pending dialog")
    reject.add_argument("id")
    reject.add_argument("--reason", default="", help="why; told to the model and recorded")
    reject.add_argument("--abort", action="store_true", help="also stop the whole track (mma_spawn)")
    events = command("events", "events as JSON lines")
    events.add_argument("--since", type=int, default=0, metavar="N", help="events after seq N (default 0)")
    events.add_argument("--follow", action="store_true", help="keep waiting for new events until Ctrl+C")
    events.add_argument(
        "--type", nargs="+", action="extend", default=[], metavar="T", help="only events of these types"
    )
    mma = command("mma", "MMA status, or click an MMA action and wait for its task")
    mma_commands = mma.add_subparsers(dest="mma_command", required=True, metavar="MMA_COMMAND")

    def mma_command(name: str, help_text: str) -> argparse.ArgumentParser:
        return mma_commands.add_parser(name, help=help_text, description=help_text, parents=[output])

    mma_command("status", "GET /api/mma/status")
    graph = mma_command("graph", "a track's ticket DAG (GET /api/mma/graph); mermaid: the flowchart text")
    graph.add_argument("--format", choices=("json", "mermaid"), default="json")
    graph.add_argument("--track", default="", metavar="TRACK_ID", help="default the active track")
    mma_command("plan", "ask Tier 1 to split the epic into tracks").add_argument(
        "--epic", help="set mma_epic_input to this first"
    )
    mma_command("accept", "accept proposed tracks").add_argument(
        "indices", nargs="*", type=int, metavar="INDEX", help="proposal indices (default all)"
    )
    mma_command("start", "start a planned track").add_argument(
        "track", nargs="?", default="", metavar="TRACK_ID", help="default the first"
    )
    mma_command("pause", "pause the running track (running tickets finish)")
    mma_command("resume", "resume the paused (or blocked) track")
    mma_command("abort", "abort the running track (kills in-flight tickets)")
    sender = command("send", "Gen + Send a message and wait for the request to end")
    sender.add_argument("message")
    sender.add_argument("--no-wait", action="store_true", help="print {request_id} at once")
    canceller = command("cancel", "stop a request and wait until it is cancelled")
    canceller.add_argument("request_id", metavar="REQ")
    canceller.add_argument("--no-wait", action="store_true", help="print the cancel reply at once")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    url = args.url or (None if args.port is not None else os.environ.get("SLOP_HOOK_URL") or None)
    client = ApiHookClient(url, args.token, timeout=args.timeout, port=args.port)
    try:
        outcome = COMMANDS[args.command](client, args)
    except UsageError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return ExitCode.USAGE
    except HookApiError as exc:
        print(f"error: {exc.code}: {exc}", file=sys.stderr)
        return ExitCode.FAILED
    except HookError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return ExitCode.FAILED
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return ExitCode.INTERRUPTED
    finally:
        client.close()
    if outcome.reply is not None:
        print(_dump(outcome.reply, compact=args.json))
    if outcome.error:
        print(outcome.error, file=sys.stderr)
    return outcome.code


if __name__ == "__main__":
    sys.exit(main())
