"""Argument plumbing shared by ``sloppy`` and its commands: the usage error, the parser
that raises it, the check of a ``.toml`` path, and the one way to talk on stderr."""

from __future__ import annotations

import argparse
import logging
import os
import stat
import sys
from collections.abc import Callable
from pathlib import Path

from manual_slop.config import TomlFile
from manual_slop.schema import Schema

__all__ = ["PROG", "ArgParser", "RedactingFilter", "UsageError", "check_toml_file", "log_to_stderr", "say"]

PROG = "sloppy"
MAX_TOML_BYTES = 16_000_000  # far above any real settings file; /dev/zero is not one


class UsageError(Exception):
    """Bad command-line input; reported in one line, exit code 2."""


class ArgParser(argparse.ArgumentParser):
    """An argument parser whose errors are :class:`UsageError` (argparse would exit itself)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(message)


def check_toml_file(path: Path, flag: str, schema: Schema | None = None) -> Path:
    """A .toml file we will read if it exists and write on exit: it or its folder must be
    usable, and an existing one must not belong to another program (``schema``)."""
    path = path.expanduser()
    if path.suffix.lower() != ".toml" and not path.is_dir():
        raise UsageError(
            f"{flag} {path}: expected a .toml file, got {path.suffix or 'a name without extension'}; "
            "the app neither reads nor changes it"
        )
    if path.exists() and not path.is_dir():
        info = path.stat()  # (follows a symlink) a FIFO or a device would block or never end
        if not stat.S_ISREG(info.st_mode):
            raise UsageError(f"{flag} {path}: not a regular file (a pipe, device or socket)")
        if info.st_size > MAX_TOML_BYTES:
            raise UsageError(
                f"{flag} {path}: {info.st_size:,} bytes; a settings file is at most {MAX_TOML_BYTES:,}"
            )
    if path.exists() and schema is not None and not path.is_dir():
        foreign = TomlFile(path, schema).foreign_tables()
        if foreign:
            raise UsageError(
                f"{flag} {path}: not a Manual Slop file (it has [{'], ['.join(foreign[:4])}]); "
                "the app leaves it as it is"
            )
    if path.exists():
        if path.is_dir():
            raise UsageError(f"{flag} {path}: is a directory, expected a TOML file")
        try:
            with path.open("rb"):
                pass
        except OSError as exc:
            raise UsageError(f"{flag} {path}: cannot be read ({exc.strerror})") from None
        return path
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        raise UsageError(f"{flag} {path}: folder {parent} does not exist")
    if not os.access(parent, os.W_OK):
        raise UsageError(f"{flag} {path}: folder {parent} is not writable, so the file cannot be created")
    return path


def say(message: str) -> None:
    """One line on stderr, prefixed with the program's name."""
    print(f"{PROG}: {message}", file=sys.stderr, flush=True)


class RedactingFilter(logging.Filter):
    """Passes every record's message through the app's redactor (a log line is an output path)."""

    def __init__(self, redact: Callable[[str], str]) -> None:
        super().__init__()
        self._redact = redact

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg = self._redact(record.getMessage())
        record.args = None
        return True


def log_to_stderr(redact: Callable[[str], str]) -> None:
    """Libraries' warnings and errors as ``sloppy: LEVEL: message`` on stderr, redacted."""
    logging.basicConfig(level=logging.WARNING, format=f"{PROG}: %(levelname)s: %(message)s")
    for handler in logging.getLogger().handlers:
        handler.addFilter(RedactingFilter(redact))
