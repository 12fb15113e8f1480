"""The File View panel's state: one project file shown read-only, scrolled to a line range.

``btn_open_file`` ``{path, line?, end_line?}`` checks the path against the one path policy
at once (a refused file is never shown, and the error says why), reads it in the background,
passes it through the redactor, and brings the File View panel forward. Memory search
results link here. The state is ``state.file_view``: ``path``, ``text``, ``line``,
``end_line``, ``truncated``, ``status`` (``loading``/``done``/``error``) and ``error``.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from manual_slop.automation import ActionCall, InvalidValue, ParamSpec, check_params, params_doc
from manual_slop.schema import Field
from manual_slop.tools.textio import is_binary

if TYPE_CHECKING:
    from manual_slop.controller import AppController
    from manual_slop.tools.security import PathPolicy

__all__ = ["MAX_VIEW_BYTES", "PANEL_TITLE", "read_for_view", "register"]

PANEL_TITLE = "File View"
MAX_VIEW_BYTES = 2_000_000  # a bigger file shows its beginning and says it was cut
MAX_LINE = 1_000_000_000

OPEN_PARAMS: ParamSpec = {
    "path": (Field(str, "", "a file path, relative to the base dir or absolute"), True),
    "line": (Field(int, 1, "first line to show (1-based)", minimum=1, maximum=MAX_LINE), False),
    "end_line": (Field(int, 1, "last line of the range to mark", minimum=1, maximum=MAX_LINE), False),
}


def read_for_view(path: Path, policy: PathPolicy, redact: Callable[[str], str]) -> tuple[str, bool]:
    """The file's text for display (redacted) and whether it was cut.

    The policy was asked before; it is asked again about the file actually opened, since a
    folder on the way may have been swapped for a symlink meanwhile. Opening never waits (a
    pipe is refused, not read), and only regular files are shown; binary ones are refused."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ValueError(f"{path.name} is not a regular file; the File View shows files only")
        allowed, why = policy.is_allowed(_opened_path(fd, path))
        if not allowed:
            raise ValueError(why)
        data = handle.read(MAX_VIEW_BYTES + 1)
    if is_binary(data):
        raise ValueError(f"{path.name} is a binary file; the File View shows text only")
    truncated = len(data) > MAX_VIEW_BYTES
    text = data[:MAX_VIEW_BYTES].decode("utf-8", errors="replace")
    return redact(text), truncated


def _opened_path(fd: int, path: Path) -> str:
    """Where the open file really is (Linux knows it exactly; elsewhere the path as resolved now)."""
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return os.path.realpath(path)


def register(ctrl: AppController) -> None:
    state = ctrl.state

    def show(view: dict[str, Any]) -> None:
        state.file_view = view
        ctrl.tab_bars.select("panels", PANEL_TITLE)  # shown and brought forward, as select_tab does

    def open_file(call: ActionCall) -> None:
        params = check_params("btn_open_file", OPEN_PARAMS, call.user_data)
        base = ctrl.base_dir()
        policy = ctrl.path_policy(base, state.project_files, state.files_exclude)
        raw = params["path"].strip()
        if not raw:
            raise InvalidValue("btn_open_file: the path is empty")
        shown = raw if len(raw) <= 120 else raw[:120] + "…"
        allowed, resolved = policy.is_allowed(raw if Path(raw).is_absolute() else base / raw)
        if not allowed:  # the policy's reason usually names the path already
            raise InvalidValue(resolved if resolved.startswith(shown[:40]) else f"{shown}: {resolved}")
        target = Path(resolved)
        if not target.is_file():
            raise InvalidValue(f"{shown}: not a file")
        line = params.get("line", 1)
        view = {
            "path": policy.display(target),
            "text": "",
            "line": line,
            "end_line": max(line, params.get("end_line", line)),
            "truncated": False,
            "status": "loading",
            "error": None,
        }
        show(view)

        def done(result: tuple[str, bool]) -> None:
            if state.file_view is view:  # not replaced by a newer open meanwhile
                show({**view, "text": result[0], "truncated": result[1], "status": "done"})

        def failed(exc: BaseException) -> None:
            if state.file_view is view:
                show({**view, "status": "error", "error": str(exc)})

        ctrl.run_in_background(lambda: read_for_view(target, policy, ctrl.redactor.redact), done, failed)

    ctrl.actions.register(
        "btn_open_file",
        open_file,
        params_doc(OPEN_PARAMS, "Show a project file read-only in the File View, at a line range"),
        Field(dict, {}),
    )
    ctrl.fields.register(
        "file_view",
        Field(dict, {}, "The File View: path, text, line, end_line, truncated, status, error (read-only)"),
        lambda: dict(state.file_view),
    )
