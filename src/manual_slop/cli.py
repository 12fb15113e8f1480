"""Command line: ``sloppy [--headless] [--config PATH] [--project PATH [--new]] [--hook-port N]
[--enable-test-hooks] [--log-dir PATH] [--port-file PATH] [--token-file PATH]``, or a command
that works without the window: ``sloppy index [PATH ...] [--project PATH] [--config PATH]``,
``sloppy search QUERY [--top-k N] [--json] [--memory] [--project PATH] [--config PATH]``,
``sloppy replay RUN.jsonl [--json]`` (see :mod:`manual_slop.commands`; the command name comes first).

Paths are checked before anything is read: a bad flag or an unusable path ends
the program with one line on stderr and exit code 2. ``--config`` and ``--project`` take
``.toml`` files only, and never one that belongs to another program (a top-level table
their schema does not know): the app neither moves nor rewrites such a file. A
``--project`` that does not exist is created only with ``--new``. Without a display the app
runs headless and says so. SIGINT and SIGTERM stop it cleanly (dual flush).
The Hook API starts in headless mode (or with ``hook.enabled`` / ``--enable-test-hooks``, or
when the active provider is ``gemini_cli``, whose tool calls ask for approval over it)
and announces itself with the only line written to stdout:
``hook server listening on http://HOST:PORT``. Its bearer token is ``SLOP_HOOK_TOKEN``,
``hook.token`` or one generated at start (see :mod:`manual_slop.hooks.token`); a
non-loopback ``hook.host`` without a configured token stops start-up (exit 2).
"""

from __future__ import annotations

import argparse
import contextlib
import faulthandler
import os
import signal
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from manual_slop import __version__
from manual_slop.commands import COMMANDS, run_command
from manual_slop.commands.args import (
    PROG,
    ArgParser,
    RedactingFilter,
    UsageError,
    check_toml_file,
    int_in_range,
    two_stage_interrupts,
)
from manual_slop.commands.args import say as _say
from manual_slop.config import GLOBAL_SCHEMA, PROJECT_SCHEMA

if TYPE_CHECKING:
    from manual_slop.config import LoadResult
    from manual_slop.controller import AppController
    from manual_slop.hooks.server import HookServer
    from manual_slop.hooks.token import HookAuth

__all__ = ["UsageError", "build_parser", "display_available", "main"]


_port = int_in_range(0, 65535, "an integer 0-65535")


def build_parser() -> argparse.ArgumentParser:
    commands = "; ".join(f"{PROG} {c.name} ({c.summary})" for c in COMMANDS.values())
    parser = ArgParser(
        prog=PROG,
        description="Manual Slop: an LLM workbench under human control.",
        epilog=f"Commands that work without the window: {commands}. See {PROG} COMMAND --help.",
        allow_abbrev=False,
    )
    parser.add_argument("--headless", action="store_true", help="no window; the Hook API is the interface")
    parser.add_argument(
        "--config", type=Path, metavar="PATH", help="global config file (default ./config.toml)"
    )
    parser.add_argument(
        "--project", type=Path, metavar="PATH", help="project file (default: projects.active)"
    )
    parser.add_argument("--new", action="store_true", help="create the --project file (it must not exist)")
    parser.add_argument("--hook-port", type=_port, metavar="N", help="Hook API port (0 picks a free one)")
    parser.add_argument("--enable-test-hooks", action="store_true", help="start the Hook API in GUI mode")
    parser.add_argument(
        "--log-dir", type=Path, metavar="PATH", help="log folder (default logs/ beside config)"
    )
    parser.add_argument(
        "--port-file", type=Path, metavar="PATH", help="write the Hook API's port here once it listens"
    )
    parser.add_argument(
        "--token-file",
        type=Path,
        metavar="PATH",
        help="write the Hook API's bearer token here (mode 0600) once it listens",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    return parser


def _project_file(path: Path | None, new: bool) -> Path | None:
    """``--project``: an existing project, or (with ``--new``) a new one created now."""
    if path is None:
        if new:
            raise UsageError("--new needs --project PATH (the project file to create)")
        return None
    checked = check_toml_file(path, "--project", PROJECT_SCHEMA)
    if new:
        if checked.exists():
            raise UsageError(f"--project {checked}: already exists; drop --new to open it")
        from manual_slop.documents import Documents

        try:
            Documents.create_project(checked)
        except OSError as exc:
            raise UsageError(f"--project {checked}: cannot be created ({exc.strerror or exc})") from None
    elif not checked.exists():
        raise UsageError(f"--project {checked}: does not exist; create it with --new, or check the path")
    return checked


def _check_output_file(path: Path, flag: str) -> Path:
    """A file the app writes once it listens (--port-file, --token-file)."""
    path = path.expanduser()
    if path.is_dir():
        raise UsageError(f"{flag} {path}: is a directory")
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir() or not os.access(parent, os.W_OK):
        raise UsageError(f"{flag} {path}: folder {parent} does not exist or is not writable")
    return path


def _check_log_dir(path: Path) -> Path:
    path = path.expanduser()
    if path.exists() and not path.is_dir():
        raise UsageError(f"--log-dir {path}: exists and is not a directory")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"--log-dir {path}: cannot be created ({exc.strerror})") from None
    if not os.access(path, os.W_OK):
        raise UsageError(f"--log-dir {path}: is not writable")
    return path


def display_available(environ: dict[str, str] | None = None) -> bool:
    """True when a window can be opened (always on Windows and macOS)."""
    env = os.environ if environ is None else environ
    if sys.platform.startswith("linux") or "bsd" in sys.platform:
        return bool(env.get("DISPLAY") or env.get("WAYLAND_DISPLAY"))
    return True


def main(argv: Sequence[str] | None = None) -> int:
    started_at = time.time()
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in COMMANDS:
        return run_command(argv[0], argv[1:])
    try:
        args = build_parser().parse_args(argv)
        config_file = check_toml_file(args.config or Path("config.toml"), "--config", GLOBAL_SCHEMA)
        project_file = _project_file(args.project, args.new)
        log_dir = _check_log_dir(args.log_dir) if args.log_dir else None
        port_file = _check_output_file(args.port_file, "--port-file") if args.port_file else None
        token_file = _check_output_file(args.token_file, "--token-file") if args.token_file else None
    except UsageError as exc:
        misplaced = next((a for a in argv if a in COMMANDS), None)
        hint = f"; a command comes first: {PROG} {misplaced} ..." if misplaced else ""
        if not hint and argv and not argv[0].startswith("-"):
            hint = f"; {argv[0]!r} is not a command ({', '.join(COMMANDS)})"
        _say(f"error: {exc}{hint} (see --help)")
        return 2

    headless = args.headless
    if not headless and not display_available():
        _say("no display found; starting headless")
        headless = True

    from manual_slop.hooks.errors import HookStartError

    controller: AppController | None = None
    hook_server: HookServer | None = None
    early: _EarlyStart | None = None
    switch_interval = sys.getswitchinterval()

    def on_first_interrupt(signum: int) -> None:
        if controller is not None:  # one that arrives while the app is built is honoured after
            controller.request_stop_from_signal()

    # The first Ctrl+C / SIGTERM stops cleanly (requests cancelled, files saved) within about
    # two seconds; a second one means now: nothing is waited for.
    with two_stage_interrupts(on_first_interrupt, "exiting at once (nothing more is saved)") as received:
        if headless:  # the Hook API first: clients connect (and wait) while the app is built
            try:
                early = _listen_first(config_file, args.hook_port, port_file, token_file, started_at)
            except HookStartError as exc:
                _say(f"error: {exc}")
                return 2
            hook_server = early.server
            # While the app is built (imports: the main thread holds the GIL), let the server's
            # threads take it within 1 ms instead of 5: the first /status does not wait on them.
            sys.setswitchinterval(min(switch_interval, 0.001))
        import logging  # after the Hook API listens: it needs none

        logging.basicConfig(level=logging.WARNING, format=f"{PROG}: %(levelname)s: %(message)s")
        try:
            controller = _build_controller(
                config_file, project_file, log_dir, headless, args, port_file, token_file, started_at, early
            )
        except BaseException:
            if hook_server is not None:
                _stop_hook_server(hook_server, port_file, token_file)
            raise
        finally:
            sys.setswitchinterval(switch_interval)
        if received:
            controller.request_stop_from_signal()
        code = _run(controller, headless, hook_server, port_file, token_file)
    return code


@dataclass(frozen=True, slots=True)
class _EarlyStart:
    """What a headless start did before building the controller: the config it read, the token
    it resolved, the Hook API it started (answering ``/status``; every other request waits)."""

    server: HookServer
    config: LoadResult
    auth: HookAuth


def _listen_first(
    config_file: Path,
    hook_port: int | None,
    port_file: Path | None,
    token_file: Path | None,
    started_at: float,
) -> _EarlyStart:
    """Read the config, resolve the token, start the Hook API and announce it; HookStartError
    when it must not or cannot start (nothing is left behind then)."""
    from manual_slop.config import GLOBAL_SCHEMA, TomlFile
    from manual_slop.hooks.errors import HookStartError
    from manual_slop.hooks.server import HookServer
    from manual_slop.hooks.token import resolve_hook_auth
    from manual_slop.schema import get_path

    config = TomlFile(config_file, GLOBAL_SCHEMA).load()  # the controller takes it over as read

    def setting(dotted: str) -> Any:
        return get_path(config.data, dotted)

    auth = resolve_hook_auth(os.environ, setting("hook.token"), bool(setting("hook.require_token")))
    host = str(setting("hook.host"))
    refusal = binding_refusal(host, auth)
    if refusal is not None:
        raise HookStartError(refusal)
    server = HookServer(
        None,
        host,
        hook_port if hook_port is not None else setting("hook.port"),
        auth.token,
        allowed_hosts=tuple(setting("hook.allowed_hosts") or ()),
        mode="headless",
        started_at=started_at,
    ).start()
    _announce(server, port_file, token_file)
    return _EarlyStart(server, config, auth)


def _build_controller(
    config_file: Path,
    project_file: Path | None,
    log_dir: Path | None,
    headless: bool,
    args: argparse.Namespace,
    port_file: Path | None,
    token_file: Path | None,
    started_at: float,
    early: _EarlyStart | None,
) -> AppController:
    from manual_slop.ai import ai_client
    from manual_slop.controller import AppController, LaunchOptions

    options = LaunchOptions(
        headless=headless,
        hook_port=args.hook_port,
        enable_test_hooks=args.enable_test_hooks,
        port_file=port_file,
        token_file=token_file,
        started_at=started_at,
    )
    return AppController(
        config_file,
        project_file,
        log_dir,
        options=options,
        backend=ai_client,
        config=early.config if early else None,
        hook_auth=early.auth if early else None,
    )


def _run(
    controller: AppController,
    headless: bool,
    hook_server: HookServer | None,
    port_file: Path | None,
    token_file: Path | None,
) -> int:
    """Run the built app until it is asked to stop; the exit code. ``hook_server``: the Hook API
    a headless start started before the app (attached here)."""
    import logging

    from manual_slop.ai import ai_client
    from manual_slop.gc_policy import GcPolicy
    from manual_slop.headless import HeadlessTicker
    from manual_slop.hooks.errors import HookStartError

    wanted = controller.setting("hook.enabled") or controller.options.enable_test_hooks
    # the gemini CLI's tool calls ask for approval over the Hook API (scripts/cli_tool_bridge.py)
    serves_hooks = (
        hook_server is not None
        or controller.mode == "headless"
        or wanted
        or controller.state.current_provider == "gemini_cli"
    )
    refusal = hook_binding_refusal(controller) if serves_hooks and hook_server is None else None
    if refusal is not None:
        controller.shutdown()
        _say(f"error: {refusal}")
        return 2
    app_log_path = controller.session_log.root / "app.log"
    app_log_path.touch(mode=0o600)  # private, like the rest (never truncates)
    app_log = logging.FileHandler(app_log_path, encoding="utf-8")
    app_log.setFormatter(logging.Formatter("%(asctime)s %(threadName)s %(name)s %(levelname)s %(message)s"))
    redacting = RedactingFilter(controller.redactor.redact)
    app_log.addFilter(redacting)
    root = logging.getLogger()
    root.addHandler(app_log)
    for handler in root.handlers:
        handler.addFilter(redacting)
    if controller.state.approval_policy == "auto":
        _say("WARNING: approval policy is AUTO — actions run without asking")
    if serves_hooks and not controller.hook_auth.required:
        # through logging: stderr ("sloppy: WARNING: ...") and app.log alike
        logging.getLogger(__name__).warning(
            "hook.require_token is false — any local user and any local program can drive the app"
        )

    if hasattr(signal, "SIGUSR1"):  # `kill -USR1 <pid>` prints every thread's stack (diagnosing hangs)
        faulthandler.register(signal.SIGUSR1, all_threads=True)
    code = 0
    try:
        if hook_server is not None:
            hook_server.attach(controller)
        elif serves_hooks:
            hook_server = _start_hook_server(controller)
        _say(f"running {controller.mode}: project {controller.paths.project_file}")
        _say(f"session logs: {controller.session_log.root}")
        if headless:
            HeadlessTicker(controller, gc_policy=GcPolicy()).run()
        else:
            from manual_slop.gui import App

            App(controller, gc_policy=GcPolicy()).run()
    except HookStartError as exc:
        _say(f"error: {exc}")
        code = 2
    finally:
        if hook_server is not None:
            _stop_hook_server(hook_server, port_file, token_file)
        leftovers = controller.shutdown()
        ai_client.cleanup(timeout=1.0)  # stops a send still running; caches deleted, connections closed
        root.removeHandler(app_log)
        app_log.close()
    alive = [t.name for t in threading.enumerate() if t is not threading.main_thread() and t.is_alive()]
    if leftovers or alive:
        _say(f"stopped; threads still alive: {', '.join(sorted(set(leftovers + alive)))}")
    else:
        _say("stopped cleanly (config and project saved; no threads left)")
    return code


def hook_binding_refusal(controller: AppController) -> str | None:
    """Why the Hook API must not start as configured (one line), or None.

    A non-loopback address needs a token the user configured: a generated one does not
    count, since no remote client could know it; switching the token off is for loopback only.
    """
    return binding_refusal(str(controller.setting("hook.host")), controller.hook_auth)


def binding_refusal(host: str, auth: HookAuth) -> str | None:
    """:func:`hook_binding_refusal` for a ``hook.host`` and the token in effect."""
    from manual_slop.hooks.guard import is_loopback

    if is_loopback(host):
        return None
    if not auth.required:
        return (
            f"hook.host = {host!r} is not a loopback address and hook.require_token is false; "
            "set hook.require_token = true and a token, or use hook.host = '127.0.0.1'"
        )
    if not auth.configured:
        return (
            f"hook.host = {host!r} is not a loopback address and no token is configured; "
            "set SLOP_HOOK_TOKEN or hook.token in config.toml, or use hook.host = '127.0.0.1'"
        )
    return None


def _start_hook_server(controller: AppController) -> HookServer:
    """Start the Hook API, write --port-file and --token-file, announce the URL on stdout."""
    from manual_slop.hooks.server import HookServer

    options = controller.options
    port = options.hook_port if options.hook_port is not None else controller.setting("hook.port")
    server = HookServer(
        controller,
        controller.setting("hook.host"),
        port,
        allowed_hosts=tuple(controller.setting("hook.allowed_hosts") or ()),
    ).start()
    _announce(server, options.port_file, options.token_file)
    return server


def _announce(server: HookServer, port_file: Path | None, token_file: Path | None) -> None:
    """Write --port-file and --token-file, then say the URL on stdout (the server stops when a
    file cannot be written)."""
    from manual_slop.atomic_io import atomic_write_text
    from manual_slop.hooks.errors import HookStartError
    from manual_slop.hooks.token import write_token_file

    try:
        if port_file is not None:
            try:
                atomic_write_text(port_file, f"{server.port}\n", durable=False)  # removed at exit
            except OSError as exc:
                reason = exc.strerror or exc
                raise HookStartError(f"--port-file {port_file}: cannot be written ({reason})") from exc
        if token_file is not None and server.token:
            write_token_file(token_file, server.token)
    except HookStartError:
        server.stop()
        raise
    print(f"hook server listening on {server.url}", flush=True)


def _stop_hook_server(server: HookServer, port_file: Path | None, token_file: Path | None) -> None:
    from manual_slop.hooks.token import remove_token_file

    port, token = server.port, server.token
    left = server.stop()
    if left:
        _say(f"hook server threads still alive: {', '.join(left)}")
    if port_file is not None:
        with contextlib.suppress(OSError):
            if port_file.read_text().strip() == str(port):
                port_file.unlink()
    if token_file is not None:
        remove_token_file(token_file, token)
