"""The built-in tools, assembled in one place.

Names and parameters are a contract with the model; docs/guide_tools.md lists them and a
test keeps the two in step. Order here is the order providers see them in.
"""

from __future__ import annotations

from manual_slop.tools.edits import edit_tools
from manual_slop.tools.files import file_tools
from manual_slop.tools.git import git_tools
from manual_slop.tools.memory import memory_tools
from manual_slop.tools.outline import outline_tools
from manual_slop.tools.python_ast import python_tools
from manual_slop.tools.python_classes import class_tools
from manual_slop.tools.python_decls import declaration_tools
from manual_slop.tools.shell import SHELL_TIMEOUT_S, shell_tools
from manual_slop.tools.skeleton import skeleton_tools
from manual_slop.tools.skills import skill_tools
from manual_slop.tools.summary import summary_tools
from manual_slop.tools.tool import Tool, deferred_schema_checks
from manual_slop.tools.ui_performance import ui_performance_tools
from manual_slop.tools.web import WebSettings, web_tools

__all__ = ["builtin_tools"]


def builtin_tools(
    *,
    shell_timeout_s: float = SHELL_TIMEOUT_S,
    web: WebSettings | None = None,
    with_powershell: bool | None = None,
) -> list[Tool]:
    """Every built-in tool. ``with_powershell`` forces ``run_powershell`` on or off (default:
    registered when PowerShell is installed). Their schemas are checked on first use
    (tests/unit/tools check them all), which keeps jsonschema out of the start-up."""
    with deferred_schema_checks():
        return _all_builtin(shell_timeout_s, web, with_powershell)


def _all_builtin(shell_timeout_s: float, web: WebSettings | None, with_powershell: bool | None) -> list[Tool]:
    return [
        *file_tools(),
        *edit_tools(),
        *python_tools(),
        *declaration_tools(),
        *class_tools(),
        *outline_tools(),
        *skeleton_tools(),
        *summary_tools(),
        *ui_performance_tools(),
        *git_tools(),
        *memory_tools(),
        *skill_tools(),
        *web_tools(web),
        *shell_tools(shell_timeout_s, with_powershell=with_powershell),
    ]
