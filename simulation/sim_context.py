"""sim_context: curate what the model sees — files and globs, view modes, token estimates,
a preset saved and loaded, MD Only.

Every check reads the compiled context the way the Context panel shows it
(``context_preview``, ``context_files``, ``context_tokens``) after pressing Refresh,
or the files the app wrote (MD Only's Markdown, the saved project file).
"""

from __future__ import annotations

import math
import tomllib
from pathlib import Path
from typing import Any

from simulation.sim_base import BaseSimulation

__all__ = ["ContextSimulation"]

APP = '''"""The demo application."""

import json


def load(path: str) -> dict:
    """Read the settings."""
    with open(path) as fh:
        return json.load(fh)


class Greeter:
    """Says hello."""

    def greet(self, name: str) -> str:
        message = f"Hello, {name}!"
        return message
'''
HELPERS = '"""Small helpers."""\n\n\ndef double(x: int) -> int:\n    return 2 * x\n'
GENERATED = "# generated: never edit\nVALUE = 1\n"
GUIDE = "# Guide\n\nIntro text.\n\n## Install\n\nRun make.\n\n## Use\n\nRun the app.\n"
TODO = "1. buy milk\n2. fix the parser\n3. ship 1.0\n4. rest\n"
SETTINGS = 'name = "demo"\napi_key = "sk-do-not-show-123"\nretries = 3\n'
PRESET = "review"
VIEWED_NONE = "src/util/helpers.py"  # the file the run shows in view mode "none"


def big_module(functions: int = 400) -> str:
    """A Python file well over the auto strategy's full-text threshold (4,000 tokens)."""
    parts = ['"""A large generated module."""\n']
    for n in range(functions):
        parts.append(
            f'\n\ndef step_{n}(value: int) -> int:\n    """Step {n}."""\n    total = value + {n}\n'
            f"    for _ in range(3):\n        total = total * 2 - {n}\n    return total\n"
        )
    return "".join(parts)


class ContextSimulation(BaseSimulation):
    name = "context"
    title = "add files and globs, switch view modes, token estimates, save and load a preset"

    def setup(self) -> None:
        with self.step("write the project: code, docs, notes, settings, a generated folder"):
            self.write_file("src/app.py", APP)
            self.write_file("src/util/helpers.py", HELPERS)
            self.write_file("src/build/gen.py", GENERATED)
            self.write_file("docs/guide.md", GUIDE)
            self.write_file("notes/todo.txt", TODO)
            self.write_file("settings.toml", SETTINGS)
            self.write_file("big/generated.py", big_module())
            self.set_field("context_strategy", "full")
            # views are kept by relative path: an attached app remembers an earlier run's choices
            for path in ("src/app.py", "docs/guide.md", "notes/todo.txt", "settings.toml", VIEWED_NONE):
                self.user.click("btn_set_view_mode", {"path": path, "mode": "full"})

    # -- helpers ---------------------------------------------------------------------------
    def refresh(self) -> tuple[str, list[dict[str, Any]], int]:
        """Press Refresh; the preview, the per-file table and the token estimate."""
        self.user.click("btn_refresh_context")
        self.client.wait_for_event("context_compiled", lambda p: p.get("purpose") == "preview", 30)
        state = self.client.state()
        self.user.read(state["context_preview"])
        return state["context_preview"], state["context_files"], state["context_tokens"]

    def paths(self, files: list[dict[str, Any]]) -> list[str]:
        return [f["path"] for f in files]

    # -- the workflow ----------------------------------------------------------------------
    def run(self) -> None:
        with self.step("add a glob and exclude the generated folder"):
            self.set_field("project_files", ["src/**/*.py"])
            _, files, _ = self.refresh()
            self.expect_equal(
                self.paths(files),
                ["src/app.py", "src/build/gen.py", "src/util/helpers.py"],
                "src/**/*.py finds files at every depth",
            )
            self.set_field("files_exclude", ["build"])
            _, files, _ = self.refresh()
            self.expect_equal(
                self.paths(files), ["src/app.py", "src/util/helpers.py"], "the exclude drops src/build/"
            )
        with self.step("add single files, a glob and a file that does not exist"):
            self.set_field(
                "project_files",
                ["src/**/*.py", "docs/guide.md", "notes/*.txt", "settings.toml", "missing.md"],
            )
            preview, files, tokens = self.refresh()
            self.expect_equal(
                self.paths(files),
                [
                    "docs/guide.md",
                    "missing.md",
                    "notes/todo.txt",
                    "settings.toml",
                    "src/app.py",
                    "src/util/helpers.py",
                ],
                "the Files table lists every tracked file, sorted",
            )
            kinds = {f["path"]: f["kind"] for f in files}
            self.expect_equal(
                kinds["missing.md"], "missing", "a named file that does not exist is shown missing"
            )
            self.check("### `src/app.py` (full)" in preview and APP in preview, "src/app.py is sent in full")
            self.check(TODO in preview and GUIDE in preview, "the notes and the guide are sent in full")
            self.expect_equal(tokens, math.ceil(len(preview) / 4), "the token estimate is characters / 4")
            self.full_tokens = tokens
        with self.step("switch view modes: skeleton, outline, custom slice, masked, none"):
            for view in (
                {"path": "src/app.py", "mode": "skeleton"},
                {"path": "docs/guide.md", "mode": "outline"},
                {"path": "notes/todo.txt", "mode": "custom", "slices": [[2, 3]], "annotation": "urgent"},
                {"path": "settings.toml", "mode": "masked"},
                {"path": "src/util/helpers.py", "mode": "none"},
            ):
                self.user.click("btn_set_view_mode", view)
            views = self.client.get_value("file_views")
            self.expect_equal(views["src/app.py"]["mode"], "skeleton", "file_views records each choice")
            preview, files, tokens = self.refresh()
            modes = {f["path"]: f["effective_mode"] for f in files}
            self.expect_equal(
                [modes[p] for p in ("src/app.py", "docs/guide.md", "notes/todo.txt", "settings.toml")],
                ["skeleton", "outline", "custom", "masked"],
                "each file is sent in the view chosen for it",
            )
            self.check(
                "def greet(self, name: str) -> str:" in preview and "message = f" not in preview,
                "skeleton: signatures kept, bodies gone",
            )
            self.check(
                "Install  [L5]" in preview and "Run make." not in preview,
                "outline: headings with lines, no text",
            )
            self.check(
                "2. fix the parser\n3. ship 1.0" in preview
                and "buy milk" not in preview
                and "urgent" in preview,
                "custom: exactly lines 2-3, under the annotation",
            )
            self.check(
                "[masked]" in preview and "sk-do-not-show-123" not in preview and 'name = "demo"' in preview,
                "masked: the key line hidden, the rest shown",
            )
            self.check("double" not in preview and "src/util/helpers.py" in preview, "none: the path only")
            self.check(
                tokens < self.full_tokens, "the token estimate dropped", f"{tokens} vs {self.full_tokens}"
            )
            self.expect_equal(tokens, math.ceil(len(preview) / 4), "the token estimate matches the preview")
            self.curated = preview
        with self.step("the auto strategy shrinks a large file to its skeleton"):
            self.set_field(
                "project_files",
                ["src/**/*.py", "docs/guide.md", "notes/*.txt", "settings.toml", "big/generated.py"],
            )
            self.set_field("context_strategy", "auto")
            preview, files, _ = self.refresh()
            big = next(f for f in files if f["path"] == "big/generated.py")
            self.expect_equal(big["effective_mode"], "skeleton", "auto: the large file is sent as a skeleton")
            self.check("### `big/generated.py` (skeleton, auto)" in preview, "its heading says why")
            self.set_field("context_strategy", "full")
            self.set_field(
                "project_files",
                ["src/**/*.py", "docs/guide.md", "notes/*.txt", "settings.toml", "missing.md"],
            )
        with self.step(f"save the curated set as preset {PRESET!r}"):
            self.user.click("btn_save_preset", PRESET)
            self.check(PRESET in self.client.get_value("context_presets"), "the preset is listed")
            self.cleanup_preset = True
        with self.step("change the files and views, then load the preset back"):
            self.user.click("btn_set_view_mode", {"path": "src/app.py", "mode": "full"})
            self.set_field("project_files", ["docs/guide.md"])
            _, files, _ = self.refresh()
            self.expect_equal(self.paths(files), ["docs/guide.md"], "the context changed")
            self.user.click("btn_load_preset", PRESET)
            self.expect_equal(
                self.client.get_value("project_files"),
                ["src/**/*.py", "docs/guide.md", "notes/*.txt", "settings.toml", "missing.md"],
                "the preset restored the tracked files",
            )
            preview, _, _ = self.refresh()
            self.expect_equal(preview, self.curated, "the preset restored the same context, byte for byte")
        with self.step("MD Only writes the context to the output folder"):
            self.user.click("btn_md_only")
            written = self.client.wait_for_event("md_written", timeout=30)["payload"]["path"]
            path = Path(written)
            self.check(path.is_file(), "MD Only wrote a file", written)
            self.check(
                path.parent == (self.workspace / "md_gen").resolve(), "under output_dir (md_gen/)", written
            )
            self.check(self.curated in path.read_text(encoding="utf-8"), "it holds the compiled context")
            self.expect_equal(self.client.get_value("last_md_path"), written, "last_md_path shows where")

    def verify(self) -> None:
        if self.app is None:
            self.note("attached: the project file is not saved (it is the attached app's own project)")
            self.user.click("btn_delete_preset", PRESET)
            return
        with self.step("Save writes the preset and the views to the project file"):
            self.user.click("btn_save")
            project = tomllib.loads(Path(self.client.get_value("project_file")).read_text(encoding="utf-8"))
            preset = project["context"]["presets"][PRESET]
            self.check(
                "src/**/*.py" in preset.get("files", []),
                "the preset's files are in the project file",
                str(preset),
            )
            self.expect_equal(
                project["context"]["views"]["notes/todo.txt"]["slices"], [[2, 3]], "the custom slice is saved"
            )
