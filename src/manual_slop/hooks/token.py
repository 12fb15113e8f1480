"""The Hook API's bearer token: which one is in effect, where it is written, how clients find it.

**Which token.** :func:`resolve_hook_auth` takes, in order, ``SLOP_HOOK_TOKEN``, then
``hook.token`` from ``config.toml``, else a fresh random token (32 random bytes,
``os.urandom``, URL-safe base64) made at every start. ``hook.require_token = false`` switches the
check off; the app allows that only on a loopback address and warns at every start.

**Where it is written.** While the server listens, its token is in a per-user runtime file
keyed by port (:func:`runtime_token_path`)::

    $XDG_RUNTIME_DIR/manual_slop/hook-<port>.token     (when XDG_RUNTIME_DIR is set)
    <tempdir>/manual_slop-<uid>/hook-<port>.token      (otherwise)

The folder is ``0700`` and must belong to the user (a folder planted by someone else, or a
symlink, is refused); the file is ``0600`` and written atomically. It is removed when the
server stops. ``--token-file PATH`` writes a second copy where the user asks.

**How clients find it.** :func:`discover_token` (used by ``ApiHookClient``, its command
line, the simulation harness) reads ``SLOP_HOOK_TOKEN``, else the runtime file of the
port; ``scripts/cli_tool_bridge.py`` has a standard-library copy of the same lookup.
"""

from __future__ import annotations

import base64
import contextlib
import os
import stat
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from manual_slop.atomic_io import atomic_write_text
from manual_slop.hooks.errors import HookStartError

__all__ = [
    "TOKEN_BYTES",
    "HookAuth",
    "TokenSource",
    "discover_token",
    "generate_token",
    "read_token_file",
    "remove_token_file",
    "resolve_hook_auth",
    "runtime_dir",
    "runtime_token_path",
    "write_token_file",
]

TOKEN_BYTES = 32


class TokenSource(StrEnum):
    ENV = "env"  # SLOP_HOOK_TOKEN
    CONFIG = "config"  # hook.token
    GENERATED = "generated"  # made at this start
    OFF = "off"  # hook.require_token = false


@dataclass(frozen=True, slots=True)
class HookAuth:
    """The token in effect (``''`` when the check is off) and where it came from."""

    token: str
    source: TokenSource

    @property
    def required(self) -> bool:
        return bool(self.token)

    @property
    def configured(self) -> bool:
        """A token a remote client can know: set by the user, not generated."""
        return self.source in (TokenSource.ENV, TokenSource.CONFIG)


def generate_token() -> str:
    # what secrets.token_urlsafe does, without importing secrets (hmac, hashlib) at start-up
    return base64.urlsafe_b64encode(os.urandom(TOKEN_BYTES)).rstrip(b"=").decode("ascii")


def resolve_hook_auth(environ: Mapping[str, str], configured: str, require_token: bool = True) -> HookAuth:
    """The effective token: ``SLOP_HOOK_TOKEN``, ``hook.token``, else a generated one."""
    from_env = environ.get("SLOP_HOOK_TOKEN", "").strip()
    if from_env:
        return HookAuth(from_env, TokenSource.ENV)
    if configured.strip():
        return HookAuth(configured.strip(), TokenSource.CONFIG)
    if not require_token:
        return HookAuth("", TokenSource.OFF)
    return HookAuth(generate_token(), TokenSource.GENERATED)


# =========================================================================================
# the runtime file
# =========================================================================================
def _user_tag() -> str:
    if hasattr(os, "getuid"):
        return str(os.getuid())
    import getpass

    return getpass.getuser()


def runtime_dir(environ: Mapping[str, str] | None = None) -> Path:
    """The per-user folder of the runtime token files (not created here)."""
    env = os.environ if environ is None else environ
    xdg = env.get("XDG_RUNTIME_DIR", "").strip()
    if xdg and os.path.isabs(xdg):
        return Path(xdg) / "manual_slop"
    return Path(tempfile.gettempdir()) / f"manual_slop-{_user_tag()}"


def runtime_token_path(port: int, environ: Mapping[str, str] | None = None) -> Path:
    return runtime_dir(environ) / f"hook-{int(port)}.token"


def _private_dir(folder: Path) -> None:
    """Create ``folder`` 0700, or check that an existing one is ours, real and private."""
    try:
        folder.mkdir(mode=0o700, parents=False)
    except FileExistsError:
        pass
    except FileNotFoundError:  # XDG_RUNTIME_DIR itself is missing
        folder.mkdir(mode=0o700, parents=True)
    info = os.lstat(folder)
    if stat.S_ISLNK(info.st_mode) or not stat.S_ISDIR(info.st_mode):
        raise HookStartError(
            f"{folder} is not a plain folder; remove it so the Hook API token can be kept private"
        )
    if sys.platform == "win32":
        return
    if info.st_uid != os.getuid():
        raise HookStartError(
            f"{folder} belongs to another user (uid {info.st_uid}); remove it so the Hook API token can be "
            "kept private"
        )
    if stat.S_IMODE(info.st_mode) & 0o077:
        os.chmod(folder, 0o700)


def write_token_file(path: Path, token: str, *, private_folder: bool = False) -> Path:
    """Write ``token`` to ``path`` atomically, readable by the user only (mode 0600)."""
    path = Path(path)
    if private_folder:
        _private_dir(path.parent)
    try:
        # atomic (a client never reads half a token), not durable: it means nothing after a crash
        atomic_write_text(path, token + "\n", mode=0o600, durable=False)
    except OSError as exc:
        raise HookStartError(f"cannot write the Hook API token to {path} ({exc.strerror or exc})") from exc
    return path


def read_token_file(path: Path) -> str | None:
    """The token in ``path`` (None when the file is missing or unreadable)."""
    try:
        text = Path(path).read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return text or None


def remove_token_file(path: Path, token: str) -> None:
    """Remove ``path`` if it still holds ``token`` (another app may have taken the port since)."""
    if read_token_file(path) == token:
        with contextlib.suppress(OSError):
            Path(path).unlink()


def discover_token(port: int | None, environ: Mapping[str, str] | None = None) -> str:
    """What a client on this machine should send: ``SLOP_HOOK_TOKEN``, else the runtime file of
    ``port``, else ``''``."""
    env = os.environ if environ is None else environ
    from_env = env.get("SLOP_HOOK_TOKEN", "").strip()
    if from_env:
        return from_env
    if port is None:
        return ""
    return read_token_file(runtime_token_path(port, env)) or ""
