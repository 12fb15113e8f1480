"""``sloppy mcp serve [--project PATH] [--config PATH] [--http HOST:PORT] ...``: the app's tools
for any MCP client (see :mod:`manual_slop.mcp.server`).

It runs the app headless in this process: the project, the path policy, the HITL rules and the
Execution Clutch are the app's own, and the Hook API listens (``--hook-port``, a free port by
default, announced on stderr and in ``--port-file``) so a mutating call's dialog can be decided
over ``/api/pending`` like any other. Without ``--http`` the client speaks over stdin/stdout
and the server ends when the client closes stdin; fd 1 is pointed at stderr first, so nothing
else the app prints reaches the protocol. With ``--http`` it serves streamable HTTP at
``http://HOST:PORT/mcp`` until SIGINT/SIGTERM, with the Hook API's token (``SLOP_HOOK_TOKEN``,
``hook.token`` or a generated one, written to ``--token-file``) required as a bearer token.

To share a running window's clutch instead, start MCP from the app (``mcp.serve_http`` in
config.toml, ``POST /api/mcp/serve``, or the MCP panel).
"""

from __future__ import annotations

import argparse
import logging
import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from manual_slop.commands.args import PROG, ArgParser, UsageError, check_toml_file, say, two_stage_interrupts

if TYPE_CHECKING:
    from manual_slop.controller import AppController

__all__ = ["build_parser", "run"]

log = logging.getLogger(__name__)


def build_parser() -> argparse.ArgumentParser:
    parser = ArgParser(
        prog=f"{PROG} mcp",
        description="Serve Manual Slop's tools, context files and agent profiles over MCP.",
        allow_abbrev=False,
    )
    sub = parser.add_subparsers(dest="action", metavar="serve", required=True)
    serve = sub.add_parser(
        "serve",
        help="serve over stdio (default) or streamable HTTP",
        description="Run the app headless and serve its tools over MCP; mutating calls wait for a "
        "decision over the Hook API's /api/pending.",
    )
    serve.add_argument("--project", type=Path, metavar="PATH", help="project file (default: projects.active)")
    serve.add_argument(
        "--config", type=Path, metavar="PATH", help="global config file (default ./config.toml)"
    )
    serve.add_argument(
        "--http", metavar="HOST:PORT", help="serve streamable HTTP at http://HOST:PORT/mcp instead of stdio"
    )
    serve.add_argument(
        "--hook-port", type=int, default=0, metavar="N", help="Hook API port (default 0: a free one)"
    )
    serve.add_argument("--port-file", type=Path, metavar="PATH", help="write the Hook API's port here")
    serve.add_argument("--token-file", type=Path, metavar="PATH", help="write the bearer token here (0600)")
    serve.add_argument(
        "--log-dir", type=Path, metavar="PATH", help="log folder (default logs/ beside config)"
    )
    return parser


def run(args: argparse.Namespace) -> int:
    from manual_slop import cli
    from manual_slop.config import GLOBAL_SCHEMA
    from manual_slop.mcp.transports import parse_address

    config_file = check_toml_file(args.config or Path("config.toml"), "--config", GLOBAL_SCHEMA)
    project_file = cli._project_file(args.project, False)
    log_dir = cli._check_log_dir(args.log_dir) if args.log_dir else None
    port_file = cli._check_output_file(args.port_file, "--port-file") if args.port_file else None
    token_file = cli._check_output_file(args.token_file, "--token-file") if args.token_file else None
    if not 0 <= args.hook_port <= 65535:
        raise UsageError(f"--hook-port {args.hook_port}: must be 0-65535")
    address = None
    if args.http:
        try:
            address = parse_address(args.http)
        except ValueError as exc:
            raise UsageError(f"--http {exc}") from None
    wire = None if address else _claim_stdio()  # before anything can print
    try:
        return _serve(
            config_file, project_file, log_dir, port_file, token_file, args.hook_port, address, wire
        )
    finally:
        if wire is not None:
            from manual_slop.mcp.transports import close_quietly

            close_quietly(*wire)


def _claim_stdio() -> tuple[int, int]:
    """The client's wire (duplicates of fd 0 and 1); fd 0 becomes /dev/null, fd 1 stderr."""
    wire_in, wire_out = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)
    return wire_in, wire_out


def _serve(
    config_file: Path,
    project_file: Path | None,
    log_dir: Path | None,
    port_file: Path | None,
    token_file: Path | None,
    hook_port: int,
    address: tuple[str, int] | None,
    wire: tuple[int, int] | None,
) -> int:
    from manual_slop import cli
    from manual_slop.ai import ai_client
    from manual_slop.controller import AppController, LaunchOptions
    from manual_slop.gc_policy import GcPolicy
    from manual_slop.headless import HeadlessTicker
    from manual_slop.hooks.errors import HookStartError
    from manual_slop.mcp.server import build_server
    from manual_slop.mcp.transports import HttpMcpServer, McpStartError, http_binding_refusal, serve_stdio

    logging.basicConfig(level=logging.WARNING, format=f"{PROG}: %(levelname)s: %(message)s")
    options = LaunchOptions(headless=True, hook_port=hook_port, port_file=port_file, token_file=token_file)
    controller = AppController(config_file, project_file, log_dir, options=options, backend=ai_client)
    refusal = cli.hook_binding_refusal(controller)
    if refusal is None and address is not None:
        auth = controller.hook_auth
        refusal = http_binding_refusal(address[0], auth.token, auth.configured)
    if refusal is not None:
        controller.shutdown()
        say(f"error: {refusal}")
        return 2
    server = build_server(controller)
    hook_server = http = None
    stdio_thread = None
    code = 0
    with two_stage_interrupts(lambda signum: controller.request_stop_from_signal(), "exiting at once"):
        try:
            hook_server = cli._start_hook_server(controller)
            if address is not None:
                http = HttpMcpServer(
                    server, address[0], address[1], controller.hook_auth.token,
                    allowed_hosts=tuple(controller.setting("hook.allowed_hosts") or ()),
                ).start()  # fmt: skip
                say(f"MCP server listening on {http.url}")
            else:
                assert wire is not None
                stdio_thread = threading.Thread(
                    target=_stdio_until_closed, args=(controller, server, wire, serve_stdio), name="mcp-stdio"
                )
                stdio_thread.start()
                say("MCP server on stdio")
            HeadlessTicker(controller, gc_policy=GcPolicy()).run()
        except (HookStartError, McpStartError) as exc:
            say(f"error: {exc}")
            code = 2
        finally:
            if http is not None:
                http.stop()
            if hook_server is not None:
                cli._stop_hook_server(hook_server, port_file, token_file)
            controller.shutdown()
            ai_client.cleanup(timeout=1.0)
            if stdio_thread is not None:
                stdio_thread.join(1.0)  # ends with stdin; a client that keeps it open is not waited for
    return code


def _stdio_until_closed(
    controller: AppController, server: object, wire: tuple[int, int], serve: object
) -> None:
    try:
        serve(server, *wire)  # type: ignore[operator]
    except Exception:
        log.exception("MCP stdio transport failed")
    finally:
        controller.request_stop()  # the client is gone: so is this server
