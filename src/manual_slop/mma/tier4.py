"""Tier 4: QA summaries and patches for a failed worker attempt.

:func:`run_tier4_qa` asks for a short diagnosis that goes into the worker's next
attempt; :func:`run_tier4_patch_generation` asks for a unified diff (tools off,
text only) that the human may apply through a patch approval dialog.
:func:`apply_patch` applies such a diff exactly — every context line must match,
every path must pass the path check — and all-or-nothing: nothing is written
unless every file of the diff applies.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from manual_slop.atomic_io import atomic_write_text
from manual_slop.mma.client import TierCaller
from manual_slop.mma.errors import PatchError
from manual_slop.mma.prompts import tier4_patch_prompt, tier4_qa_prompt

__all__ = [
    "FilePatch",
    "Hunk",
    "PathCheck",
    "apply_patch",
    "confine_to",
    "extract_diff",
    "parse_unified_diff",
    "policy_check",
    "run_tier4_patch_generation",
    "run_tier4_qa",
]

TIER = "Tier 4"
PathCheck = Callable[[Path], str | None]  # a refusal reason, or None when the path may be written

_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_FENCE = re.compile(r"```(?:diff|patch|udiff)?\s*\n(.*?)```", re.DOTALL)
_PROTECTED_NAMES = ("credentials.toml",)
_PROTECTED_SUFFIXES = ("_history.toml",)


def run_tier4_qa(
    caller: TierCaller,
    error_text: str,
    context: str = "",
    *,
    model: str = "",
    abort: threading.Event | None = None,
) -> str:
    """A short diagnosis of ``error_text`` for the next attempt (tools off)."""
    return caller.call(TIER, context, tier4_qa_prompt(error_text), model=model, abort=abort).strip()


def run_tier4_patch_generation(
    caller: TierCaller,
    error: str,
    file_context: str,
    *,
    model: str = "",
    abort: threading.Event | None = None,
) -> str:
    """A unified diff proposed for ``error`` (the raw answer when it holds no recognisable diff)."""
    answer = caller.call(TIER, file_context, tier4_patch_prompt(error), model=model, abort=abort)
    return extract_diff(answer)


def extract_diff(text: str) -> str:
    """The diff inside a fenced block, or from the first ``---`` / ``diff --git`` line on."""
    fenced = _FENCE.search(text)
    if fenced:
        return fenced.group(1)
    match = re.search(r"^(diff --git |--- )", text, re.MULTILINE)
    return text[match.start() :] if match else text


@dataclass(slots=True)
class Hunk:
    old_start: int
    old_len: int
    new_start: int
    new_len: int
    lines: list[str] = field(default_factory=list)  # each starts with ' ', '-', '+' or '\\'


@dataclass(slots=True)
class FilePatch:
    old_path: str | None  # None: the file is created
    new_path: str | None  # None: the file is deleted
    hunks: list[Hunk] = field(default_factory=list)

    @property
    def path(self) -> str:
        return self.new_path or self.old_path or ""


def _strip_prefix(raw: str) -> str | None:
    name = raw.split("\t")[0].strip()
    if name == "/dev/null":
        return None
    if name.startswith(("a/", "b/")):
        name = name[2:]
    return name


def parse_unified_diff(text: str) -> list[FilePatch]:
    """Files and hunks of a unified diff; PatchError says which line is malformed."""
    lines = text.splitlines()
    patches: list[FilePatch] = []
    index = 0
    while index < len(lines):
        line = lines[index]
        if not line.startswith("--- "):
            index += 1
            continue
        if index + 1 >= len(lines) or not lines[index + 1].startswith("+++ "):
            raise PatchError(f"line {index + 1}: '---' header without a '+++' line after it")
        patch = FilePatch(_strip_prefix(line[4:]), _strip_prefix(lines[index + 1][4:]))
        if patch.old_path is None and patch.new_path is None:
            raise PatchError(f"line {index + 1}: both sides are /dev/null")
        index += 2
        while index < len(lines) and lines[index].startswith("@@"):
            match = _HUNK.match(lines[index])
            if not match:
                raise PatchError(f"line {index + 1}: malformed hunk header {lines[index]!r}")
            old_start, old_len, new_start, new_len = (
                int(match.group(1)),
                int(match.group(2) or 1),
                int(match.group(3)),
                int(match.group(4) or 1),
            )
            hunk = Hunk(old_start, old_len, new_start, new_len)
            index += 1
            seen_old = seen_new = 0
            while index < len(lines) and (
                seen_old < old_len or seen_new < new_len or lines[index].startswith("\\")
            ):
                body = lines[index]
                tag = body[:1] or " "  # an empty line inside a hunk is an empty context line
                if tag not in " -+\\":
                    raise PatchError(f"line {index + 1}: unexpected {body!r} inside a hunk of {patch.path}")
                if tag in " -":
                    seen_old += 1
                if tag in " +":
                    seen_new += 1
                hunk.lines.append(body if body else " ")
                index += 1
            if seen_old != old_len or seen_new != new_len:
                raise PatchError(
                    f"{patch.path}: hunk at -{old_start} promises {old_len}/{new_len} lines, "
                    f"has {seen_old}/{seen_new}"
                )
            patch.hunks.append(hunk)
        if not patch.hunks:
            raise PatchError(f"{patch.path}: no hunks")
        patches.append(patch)
    if not patches:
        raise PatchError("no file changes found (expected '--- a/PATH' / '+++ b/PATH' headers)")
    return patches


def policy_check(policy: Any, *, write: bool = True) -> PathCheck:
    """A path check from the tools' ``PathPolicy`` (``is_allowed(path, write=…)`` → ``(ok, why)``):
    patches obey exactly the rules file tools obey (``write=False``: what a tool may read)."""

    def check(path: Path) -> str | None:
        allowed, reason = policy.is_allowed(path, write=write)
        return None if allowed else reason

    return check


def confine_to(base_dir: Path) -> PathCheck:
    """A path check: inside ``base_dir`` (after resolving symlinks), not credentials, history or .git."""
    root = base_dir.resolve()

    def check(path: Path) -> str | None:
        try:
            resolved = path.resolve()
            resolved.relative_to(root)
        except (OSError, ValueError):
            return f"{path} is outside the project folder {root}"
        rel = resolved.relative_to(root)
        if rel.parts and rel.parts[0] == ".git":
            return f"{rel} is inside .git"
        if resolved.name in _PROTECTED_NAMES or resolved.name.endswith(_PROTECTED_SUFFIXES):
            return f"{rel} is a protected file (keys or discussions)"
        return None

    return check


def _target(base_dir: Path, name: str, check: PathCheck) -> Path:
    pure = PurePosixPath(name)
    if pure.is_absolute() or ".." in pure.parts or not pure.parts:
        raise PatchError(f"{name}: patch paths must be relative to the project root, without '..'")
    path = base_dir / Path(*pure.parts)
    refusal = check(path)
    if refusal:
        raise PatchError(f"{name}: {refusal}")
    return path


def _apply_hunks(name: str, original: list[str], hunks: list[Hunk]) -> list[str]:
    out: list[str] = []
    cursor = 0
    for hunk in hunks:
        old = [line[1:] for line in hunk.lines if line[:1] in " -"]
        new = [line[1:] for line in hunk.lines if line[:1] in " +"]
        expected = max(0, hunk.old_start - 1 if hunk.old_len else hunk.old_start)
        position = _find(original, old, expected, cursor)
        if position is None:
            raise PatchError(f"{name}: hunk at line {hunk.old_start} does not match the file")
        out.extend(original[cursor:position])
        out.extend(new)
        cursor = position + len(old)
    out.extend(original[cursor:])
    return out


def _find(lines: list[str], block: list[str], expected: int, start: int) -> int | None:
    if not block:
        return max(start, min(expected, len(lines)))
    candidates = sorted(range(start, len(lines) - len(block) + 1), key=lambda i: abs(i - expected))
    for index in candidates:
        if lines[index : index + len(block)] == block:
            return index
    return None


def _ends_with_newline(last: Hunk, had_newline: bool) -> bool:
    """Whether the new file ends with a newline, from the ``\\ No newline`` markers of the last hunk."""
    markers = {
        prev[:1] for prev, line in zip(last.lines, last.lines[1:], strict=False) if line.startswith("\\")
    }
    if markers & {" ", "+"}:
        return False
    return True if "-" in markers else had_newline


def apply_patch(diff: str, base_dir: Path, check: PathCheck | None = None) -> list[Path]:
    """Apply ``diff`` under ``base_dir``; returns the paths written or deleted.

    Raises PatchError (and writes nothing) when any file does not apply or a path is refused.
    """
    check = check or confine_to(base_dir)
    plan: list[tuple[Path, str | None]] = []
    for patch in parse_unified_diff(diff):
        target = _target(base_dir, patch.path, check)
        if patch.old_path is None:
            if target.exists():
                raise PatchError(f"{patch.path}: the patch creates it, but it exists")
            text, had_newline = "", True
        else:
            if patch.old_path != patch.new_path and patch.new_path is not None:
                raise PatchError(f"{patch.path}: renames are not supported")
            try:
                text = target.read_text(encoding="utf-8")
            except FileNotFoundError:
                raise PatchError(f"{patch.path}: no such file") from None
            except (OSError, UnicodeDecodeError) as exc:
                raise PatchError(f"{patch.path}: cannot read ({exc})") from exc
            had_newline = text.endswith("\n") or not text
        original = text.split("\n")
        if original and original[-1] == "":
            original.pop()
        result = _apply_hunks(patch.path, original, patch.hunks)
        if patch.new_path is None:
            if result:
                raise PatchError(f"{patch.path}: the deletion does not remove every line")
            plan.append((target, None))
            continue
        newline = _ends_with_newline(patch.hunks[-1], had_newline)
        plan.append((target, "\n".join(result) + ("\n" if newline and result else "")))
    for target, content in plan:
        if content is None:
            target.unlink()
        else:
            atomic_write_text(target, content)
    return [target for target, _ in plan]
