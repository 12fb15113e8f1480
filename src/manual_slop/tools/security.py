"""Which paths may be read or written on the model's behalf: the one path policy.

Every read the app does for the model goes through a :class:`PathPolicy`: the tools, context
aggregation and its refresh, summaries, presets, the MMA workers' context, the Gemini
CLI's read-only tools. Three layers:

1. **The allowlist is rebuilt before each send** from the project's base dir and its
   tracked files (:meth:`PathPolicy.for_project`); a tracked file outside the base dir
   is allowed by name.
2. **The decision** (:meth:`PathPolicy.check`): first the files that never reach a model,
   whoever names them (:meth:`PathPolicy.refusal`) — the name rules of
   :data:`SECRET_FILE_RULES` (credentials, the app's config, discussion histories, ``.env``
   files, private keys, password stores, any copy of ``credentials.toml`` and the copies the
   app makes of files it could not load), the
   app's own config, credentials and history files by identity (any name or hard link),
   the session logs folder and the Hook API's token folder — then the explicit allowlist,
   then containment in a base dir; anything else is denied. Writes are checked by the same
   rules, and additionally may not go inside a ``.git`` folder or replace the open project
   file (it holds the allow-list rules of the Execution Clutch). Context aggregation, whose
   files the user chose, applies the first part only.
3. **Every path is resolved first**: relative to the base dir, ``~`` expanded, ``..``
   and symlinks followed (:func:`os.path.realpath`). A path with a NUL byte, control or
   invisible characters, a component that only *looks* like ``..`` or a separator
   (unicode look-alikes), more than 4,096 bytes or a component over 255 bytes, or one
   that ends in a symlink loop cannot be resolved reliably and is denied. Names are
   compared as a human reads them (:func:`name_skeleton`: case-folded, accents and
   look-alike letters folded), and both the name given and the name the path resolves
   to are checked, so a symlink or a case variant does not get around a rule.

A denial raises :class:`~manual_slop.tools.errors.AccessDenied`; the registry turns it into
a result whose content starts with ``ACCESS DENIED:`` and says why, naming the rule.
"""

from __future__ import annotations

import fnmatch
import glob
import os
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from manual_slop.tools.errors import AccessDenied

__all__ = [
    "MAX_PATH_BYTES",
    "SECRET_FILE_RULES",
    "PathPolicy",
    "SecretFileRule",
    "name_skeleton",
    "secret_file_rule",
]

MAX_PATH_BYTES = 4096
MAX_COMPONENT_BYTES = 255
MAX_TRACKED_FILES = 200_000

# Letters from other scripts that render like Latin ones (Cyrillic, Greek, a few symbols),
# enough to spell the blacklisted names; NFKD already folds full-width and compatibility forms.
_CONFUSABLES = str.maketrans(
    "\u0430\u0441\u0435\u04bb\u0456\u0458\u04cf\u043e"
    "\u0440\u0455\u0445\u0443\u0501\u051b\u051d\u0261"
    "\u03b1\u03b5\u03b9\u03ba\u03bd\u03bf\u03c1\u03c4"
    "\u03c5\u03c7\u0131\u2113\u201a\u2024\u2027\ua4f8",
    "acehijlopsxydqwgaeikvoptuxil,...",
)

# Characters NFKC leaves alone that still read as a slash, backslash or dot.
_SEPARATOR_LOOKALIKES = str.maketrans(
    "\u2215\u2044\u29f8\u2571\u29f9\u2572\ua4f8\u2e31\u00b7",
    "////\\\\...",
)


def name_skeleton(name: str) -> str:
    """How a file name reads to a human: NFKD with accents dropped, case-folded, look-alikes
    mapped to Latin, invisible characters removed, Windows stream suffixes and trailing
    dots and spaces dropped."""
    text = unicodedata.normalize("NFKD", name).translate(_CONFUSABLES)
    text = "".join(ch for ch in text if unicodedata.category(ch) not in {"Cf", "Cc", "Mn"})
    text = text.split(":", 1)[0]
    return text.casefold().rstrip(". ")


@dataclass(frozen=True, slots=True)
class SecretFileRule:
    """Files that never reach a model, by name (patterns match :func:`name_skeleton` of the name)."""

    name: str
    patterns: tuple[str, ...]
    reason: str

    def matches(self, skeleton: str) -> bool:
        return any(fnmatch.fnmatchcase(skeleton, pattern) for pattern in self.patterns)


# The copies the app itself makes of a file it could not load (atomic_io.move_aside, config.py).
_APP_COPIES = (".corrupt-*", ".invalid-*")


def _with_copies(*names: str) -> tuple[str, ...]:
    return tuple(name + suffix for name in names for suffix in ("", *_APP_COPIES))


SECRET_FILE_RULES: tuple[SecretFileRule, ...] = (
    SecretFileRule("credentials", ("credentials.toml", "credentials.toml.*"), "it holds API keys"),
    SecretFileRule(
        "app config",
        _with_copies("config.toml"),
        "it is the app's settings file (it can hold the hook token)",
    ),
    SecretFileRule(
        "history", _with_copies("history.toml", "*_history.toml"), "it is a discussion history file"
    ),
    SecretFileRule("env file", (".env", ".env.*", "*.env", ".envrc"), "environment files hold secrets"),
    SecretFileRule(
        "key file",
        ("*.pem", "*.key", "*.p12", "*.pfx", "id_rsa*", "id_dsa*", "id_ecdsa*", "id_ed25519*"),
        "it is a private key file",
    ),
    SecretFileRule(
        "password store",
        (".netrc", "_netrc", ".git-credentials", ".pgpass", ".pypirc", ".npmrc"),
        "it stores passwords or tokens",
    ),
)


def secret_file_rule(name: str) -> SecretFileRule | None:
    """The rule that refuses a file called ``name``, or None."""
    skeleton = name_skeleton(name)
    return next((rule for rule in SECRET_FILE_RULES if rule.matches(skeleton)), None)


@dataclass(frozen=True, slots=True)
class _Identity:
    dev: int
    ino: int


def _identity(path: str) -> _Identity | None:
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return _Identity(st.st_dev, st.st_ino)


def _has_link(path: str) -> bool:
    current = path
    while True:
        if os.path.islink(current):
            return True
        parent = os.path.dirname(current)
        if parent == current:
            return False
        current = parent


def _is_within(path: str, root: str) -> bool:
    if path == root:
        return True
    prefix = root if root.endswith(os.sep) else root + os.sep
    return path.startswith(prefix)


class PathPolicy:
    """Allowed base dirs and files, blocked dirs and protected files; decides per path."""

    def __init__(
        self,
        base_dirs: Sequence[str | os.PathLike[str]],
        allowed_files: Iterable[str | os.PathLike[str]] = (),
        *,
        blocked_dirs: Iterable[str | os.PathLike[str] | tuple[str | os.PathLike[str], str]] = (),
        protected_files: Iterable[str | os.PathLike[str]] = (),
        write_protected: Iterable[str | os.PathLike[str]] = (),
    ) -> None:
        """``blocked_dirs``: folders nothing below may be touched, each a path or ``(path, what it
        is)`` (default: "the session logs folder")."""
        if not base_dirs:
            raise ValueError("a path policy needs at least one base dir")
        self._bases = tuple(os.path.normcase(os.path.realpath(os.fspath(b))) for b in base_dirs)
        self._allowed = frozenset(os.path.normcase(os.path.realpath(os.fspath(f))) for f in allowed_files)
        blocked: list[tuple[str, str]] = []
        for entry in blocked_dirs:
            folder, label = entry if isinstance(entry, tuple) else (entry, "the session logs folder")
            blocked.append((os.path.normcase(os.path.realpath(os.fspath(folder))), label))
        self._blocked = tuple(blocked)
        protected = [os.path.normcase(os.path.realpath(os.fspath(p))) for p in protected_files]
        self._protected_paths = frozenset(protected)
        self._protected_ids = frozenset(i for i in map(_identity, protected) if i is not None)
        self._write_protected = frozenset(
            os.path.normcase(os.path.realpath(os.fspath(p))) for p in write_protected
        )

    # -- construction from a project ------------------------------------------------------
    @classmethod
    def for_project(
        cls,
        base_dir: str | os.PathLike[str],
        tracked: Iterable[str] = (),
        exclude: Iterable[str] = (),
        *,
        log_dir: str | os.PathLike[str] | None = None,
        protected_files: Iterable[str | os.PathLike[str]] = (),
        write_protected: Iterable[str | os.PathLike[str]] = (),
        extra_dirs: Iterable[str | os.PathLike[str]] = (),
        private_dirs: Iterable[tuple[str | os.PathLike[str], str]] = (),
    ) -> PathPolicy:
        """The policy of one project: its base dir (plus ``extra_dirs``), its tracked files
        (globs relative to the base dir, minus ``exclude``), the logs folder and
        ``private_dirs`` (``(folder, what it is)``) blocked."""
        base = Path(base_dir)
        files = expand_tracked(base, tracked, exclude)
        blocked: list[str | os.PathLike[str] | tuple[str | os.PathLike[str], str]] = [
            log_dir if log_dir is not None else base / "logs",
            *private_dirs,
        ]
        return cls(
            [base, *extra_dirs],
            files,
            blocked_dirs=blocked,
            protected_files=protected_files,
            write_protected=write_protected,
        )

    @property
    def base_dirs(self) -> tuple[Path, ...]:
        return tuple(Path(b) for b in self._bases)

    @property
    def allowed_files(self) -> frozenset[str]:
        return self._allowed

    # -- resolution ----------------------------------------------------------------------
    def resolve(self, path: object) -> str:
        """The absolute, symlink-free form of ``path`` (relative paths start at the first base
        dir); raises AccessDenied when it cannot be resolved reliably."""
        if isinstance(path, os.PathLike):
            path = os.fspath(path)
        if not isinstance(path, str):
            raise AccessDenied(repr(path), f"a path must be a string, got {type(path).__name__}")
        shown = path if len(path) <= 200 else path[:200] + "..."
        if "\x00" in path:
            raise AccessDenied(shown, "the path contains a NUL byte")
        if not path.strip():
            raise AccessDenied(shown, "the path is empty")
        try:
            encoded = path.encode("utf-8")
        except UnicodeEncodeError:
            raise AccessDenied(shown, "the path is not valid unicode") from None
        if len(encoded) > MAX_PATH_BYTES:
            raise AccessDenied(shown, f"the path is longer than {MAX_PATH_BYTES} bytes")
        for part in path.replace("\\", "/").split("/"):
            self._check_component(shown, part)
        if "\\" in path and os.sep == "/":
            raise AccessDenied(shown, "backslashes are not path separators here; use '/'")
        expanded = os.path.expanduser(path) if path.startswith("~") else path
        joined = expanded if os.path.isabs(expanded) else os.path.join(self._bases[0], expanded)
        try:
            resolved = os.path.realpath(joined)
        except (OSError, ValueError) as exc:
            raise AccessDenied(shown, f"the path cannot be resolved ({exc})") from None
        if _has_link(resolved):  # realpath resolves every link it can: one left means a loop
            raise AccessDenied(shown, "the path goes through a symlink loop")
        if len(resolved.encode("utf-8", "surrogateescape")) > MAX_PATH_BYTES:
            raise AccessDenied(shown, f"the resolved path is longer than {MAX_PATH_BYTES} bytes")
        return os.path.normcase(resolved)

    @staticmethod
    def _check_component(shown: str, part: str) -> None:
        if len(part.encode("utf-8")) > MAX_COMPONENT_BYTES:
            raise AccessDenied(shown, f"a path component is longer than {MAX_COMPONENT_BYTES} bytes")
        if any(unicodedata.category(ch) in {"Cc", "Cf", "Zl", "Zp"} for ch in part):
            raise AccessDenied(shown, "the path contains control or invisible characters")
        folded = unicodedata.normalize("NFKC", part).translate(_SEPARATOR_LOOKALIKES)
        if folded != part and (folded.strip(". ") == "" or "/" in folded or "\\" in folded):
            raise AccessDenied(shown, f"the component {part!r} imitates '..', '.' or a separator")

    # -- the decision ----------------------------------------------------------------------
    def refusal(self, path: object) -> str | None:
        """Why ``path`` may never reach a model (whoever names it), or None: the name rules, the
        app's own files, the blocked folders. Never raises; an unresolvable path is refused."""
        try:
            resolved = self.resolve(path)
        except AccessDenied as exc:
            return exc.reason
        return self._secret_reason(resolved, _shown(path))

    def _secret_reason(self, resolved: str, shown: str) -> str | None:
        for name in (os.path.basename(resolved), os.path.basename(os.path.normpath(shown))):
            rule = secret_file_rule(name) if name else None
            if rule is not None:
                return f"{name}: {rule.reason} (rule: {rule.name}); it is never read for a model"
        if resolved in self._protected_paths or (
            self._protected_ids and _identity(resolved) in self._protected_ids
        ):
            return "this is one of the app's own config, credential or history files"
        for blocked, label in self._blocked:
            if _is_within(resolved, blocked):
                return f"{label} is off limits to tools"
        return None

    def check(self, path: object, *, write: bool = False) -> Path:
        """The resolved path when the tool may use it; raises AccessDenied with the reason."""
        resolved = self.resolve(path)
        shown = _shown(path)
        reason = self._secret_reason(resolved, shown)
        if reason is not None:
            raise AccessDenied(shown, reason)
        if write:
            self._check_write_target(shown, resolved)
        if resolved in self._allowed:
            return Path(resolved)
        if any(_is_within(resolved, base) for base in self._bases):
            return Path(resolved)
        bases = ", ".join(self._bases)
        raise AccessDenied(shown, f"resolves to {resolved}, outside the project (allowed: {bases})")

    def _check_write_target(self, shown: str, resolved: str) -> None:
        if resolved in self._write_protected:
            raise AccessDenied(
                shown, "this is the open project file (it holds the approval rules); edit it in the app"
            )
        for base in self._bases:
            if _is_within(resolved, base):
                relative = resolved[len(base) :].strip(os.sep).split(os.sep)
                if ".git" in (p.casefold() for p in relative):
                    raise AccessDenied(shown, "writing inside a .git folder is not allowed")

    def is_allowed(self, path: object, write: bool = False) -> tuple[bool, str]:
        """``(True, resolved path)`` or ``(False, why not)``; never raises."""
        try:
            return True, str(self.check(path, write=write))
        except AccessDenied as exc:
            return False, exc.reason

    def display(self, resolved: str | os.PathLike[str]) -> str:
        """A resolved path as the user thinks of it: relative to the base dir when inside it."""
        text = os.fspath(resolved)
        base = self._bases[0]
        if _is_within(text, base):
            relative = os.path.relpath(text, base)
            return "." if relative == "." else relative.replace(os.sep, "/")
        return text


def _shown(path: object) -> str:
    text = path if isinstance(path, str) else os.fspath(path)  # type: ignore[arg-type]
    return text if len(text) <= 200 else text[:200] + "..."


def expand_tracked(base: Path, tracked: Iterable[str], exclude: Iterable[str] = ()) -> list[str]:
    """Files named by ``tracked`` globs (relative to ``base``, ``**`` recursive), minus ``exclude``."""
    excluded: set[str] = set()
    for pattern in exclude:
        excluded.update(_glob(base, pattern))
    files: list[str] = []
    for pattern in tracked:
        for match in _glob(base, pattern):
            if match not in excluded and os.path.isfile(match):
                files.append(match)
                if len(files) >= MAX_TRACKED_FILES:
                    return files
    return files


def _glob(base: Path, pattern: str) -> list[str]:
    if not pattern or "\x00" in pattern:
        return []
    expanded = os.path.expanduser(pattern)
    full = expanded if os.path.isabs(expanded) else os.path.join(base, expanded)
    return [os.path.realpath(m) for m in glob.glob(full, recursive=True)]
