"""``sloppy replay RUN.jsonl``: run a recorded run again through today's tool loop and say whether
the live code still sends the same requests and makes the same tool calls.

The recorded responses answer the requests and the recorded results answer the tool calls, so
nothing is sent to a provider and no tool runs (see :mod:`manual_slop.governance.replay`). It
prints ``replayed N requests, M tool calls: identical``, or where the run diverged with a unified
diff of the differing part; ``--json`` prints one object instead. Exit codes: 0 identical,
1 diverged, 2 the log cannot be read (the message names the line).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from manual_slop.commands.args import PROG, ArgParser, UsageError, say
from manual_slop.governance.replay import EXIT_UNREADABLE, replay
from manual_slop.governance.run_files import RunLogError

__all__ = ["build_parser", "run"]


def build_parser() -> argparse.ArgumentParser:
    parser = ArgParser(
        prog=f"{PROG} replay",
        description="Replay a recorded run (logs/sessions/<session>/runs/<run-id>.jsonl) against its "
        "recorded answers and show where today's code sends something else.",
        allow_abbrev=False,
    )
    parser.add_argument("run_log", type=Path, metavar="RUN.jsonl", help="the run log to replay")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    return parser


def run(args: argparse.Namespace) -> int:
    path: Path = args.run_log
    if not path.is_file():
        raise UsageError(f"RUN.jsonl: {path} is not a file")
    try:
        result = replay(path)
    except RunLogError as exc:
        say(f"error: cannot replay: {exc}")
        return EXIT_UNREADABLE
    if args.json:
        print(json.dumps(result.to_dict(), ensure_ascii=False, indent=2))
    else:
        print(result.summary())
    return result.exit_code
