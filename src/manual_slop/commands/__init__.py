"""``sloppy COMMAND ...``: work on a project without the window, the Hook API or the controller.

A command is a module with ``build_parser() -> ArgParser`` and ``run(args) -> int``, listed in
:data:`COMMANDS` and imported only when it runs, so ``sloppy --headless`` never pays for
chromadb. The command name comes first (``sloppy index --project p.toml``); without one,
``sloppy`` starts the app as it always did.

- ``index`` (:mod:`~manual_slop.commands.index`) — build or update the project index;
- ``search`` (:mod:`~manual_slop.commands.search`) — search it (and, with ``--memory``, the
  stored conversations and notes);
- ``replay`` (:mod:`~manual_slop.commands.replay`) — replay a recorded run log against its
  recorded answers and show where today's code diverges (exit 1; 2 for a log it cannot read);
- ``mcp serve`` (:mod:`~manual_slop.commands.mcp`) — the app headless, its tools served to MCP
  clients over stdio or streamable HTTP (the one command here that runs the controller).

Exit codes: 0 done, 1 failed, 2 bad input (one line on stderr), 130/143 interrupted.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from dataclasses import dataclass

from manual_slop.commands.args import UsageError, say

__all__ = ["COMMANDS", "Command", "run_command"]


@dataclass(frozen=True, slots=True)
class Command:
    """A subcommand: its name, a one-line summary for ``sloppy --help``, and its module."""

    name: str
    summary: str
    module: str

    def usage_hint(self) -> str:
        return f"see sloppy {self.name} --help"


COMMANDS: dict[str, Command] = {
    command.name: command
    for command in (
        Command("index", "build or update the project index", "manual_slop.commands.index"),
        Command(
            "search", "search the project index; with --memory, also memory", "manual_slop.commands.search"
        ),
        Command("replay", "replay a recorded run against today's code", "manual_slop.commands.replay"),
        Command("mcp", "serve the app's tools over MCP (stdio or HTTP)", "manual_slop.commands.mcp"),
    )
}


def run_command(name: str, argv: Sequence[str]) -> int:
    """Run command ``name`` with its arguments; the exit code."""
    command = COMMANDS[name]
    module = importlib.import_module(command.module)
    try:
        args = module.build_parser().parse_args(list(argv))
        return int(module.run(args))
    except UsageError as exc:
        say(f"error: {exc} ({command.usage_hint()})")
        return 2
    except KeyboardInterrupt:  # before a command took over Ctrl+C (while it starts up)
        say("interrupted")
        return 130
