"""R2 paths (issue #22): an adversarial path battery against every file-reading surface.

:func:`battery` builds a project with secret files (credentials, the app's config, histories,
``.env`` files, keys, password stores, the app's own copies), symlinks and hard links to them and
out of the project, symlink loops, and a matching set of legitimate files of the same shapes, and
returns the paths as data: ``..``, absolute, ``./`` and ``//`` forms, NUL bytes, very long names
and paths, Unicode look-alikes and NFC/NFD forms, case variants, Windows separators and drive
letters. Every secret file holds :data:`SECRET`, every file outside the project :data:`OUTSIDE`,
every legitimate file :data:`LEGIT` and its own name.

The surfaces and what each must do:

- the read-only tools (every non-mutating tool with a ``path`` parameter, found in the
  registry, so a new one is covered): refuse every secret, outside or malformed path
  (``ACCESS DENIED``), never refuse a legitimate one; and the tools that walk a folder
  (grep, search_files, get_tree, list_directory) never show a secret's content;
- context aggregation (``state.project_files`` -> compile), its refresh after a tool round,
  the MCP server's ``slop://context/<path>`` resources (``McpHost`` in-process) and the project
  index: these read the files the *user* chose, so only the secret files are refused there (a
  file outside the project is the user's choice); no secret content in any output, every
  legitimate file shown.

The fast variant samples: read_file on every path and one more tool in turn on every other,
every third path through MCP, and the index checked by the decision it applies (``policy.refusal``); the long
variant runs every tool on every path and indexes for real (chromadb and the embedder).
"""

from __future__ import annotations

import dataclasses
import os
import threading
import time
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any
from urllib.parse import quote

import anyio
from mcp import types
from mcp.shared.exceptions import MCPError

from manual_slop.mcp.server import CONTEXT_URI, McpHost
from manual_slop.tools import ToolCall, ToolStatus, build_execution_context, default_registry
from manual_slop.tools.registry import ToolRegistry
from manual_slop.tools.security import PathPolicy
from manual_slop.tools.tool import ExecutionContext, Tool
from tests.reliability.conftest import LONG

SECRET = "SECRET-CANARY"
OUTSIDE = "OUTSIDE-CANARY"
LEGIT = "LEGIT-MARK"
FORBIDDEN_TEXT = (SECRET, OUTSIDE)

SECRET_FILES = (
    "credentials.toml", "config.toml", "history.toml", "proj_history.toml", ".env", ".env.local",
    "prod.env", ".envrc", "id_rsa", "id_ed25519.pub", "server.pem", "tls.key", "cert.p12", "cert.pfx",
    ".netrc", "_netrc", ".git-credentials", ".pgpass", ".pypirc", ".npmrc", "credentials.toml.bak",
    "config.toml.corrupt-1", "history.toml.invalid-2",
    # case variants
    "CREDENTIALS.TOML", "Config.Toml", ".ENV", "ID_RSA", "Server.PEM", ".NetRC",
    # look-alikes and normalisation forms
    "\u0441redentials.toml",  # Cyrillic es
    "c\u043enfig.toml",  # Cyrillic o
    unicodedata.normalize("NFC", "cr\u00e9dentials.toml"),
    unicodedata.normalize("NFD", "cr\u00e9dentials.toml"),
    "\uff43\uff4f\uff4e\uff46\uff49\uff47.toml",  # full-width
    "config.toml.",  # a trailing dot, as Windows drops it
    "config.toml:stream",  # an NTFS stream suffix
    ".\u0435nv",  # Cyrillic ie
    # in sub-folders
    "sub/credentials.toml", "deep/a/b/.env", "sub/id_rsa",
)  # fmt: skip
LEGIT_FILES = (
    "a.txt", "README.md", "readme.md", "main.py", "sub/b.txt", "sub/c.py", "deep/a/b/c.txt",
    # names near the refused ones
    "credentials.txt", "credentials.md", "CREDENTIALS.md", "config.yaml", "Config.yaml", "my_config.toml",
    "config.toml.txt", "history.md", "env.py", "environment.txt", "key.txt", "keys.py", "pem_notes.txt",
    "netrc.md", "id.txt", "pyproject.toml", "data.json",
    # Unicode, both normalisation forms, odd characters, a drive-letter-like folder
    unicodedata.normalize("NFC", "caf\u00e9.txt"), unicodedata.normalize("NFD", "caf\u00e9.txt"),
    "\u0434\u0430\u043d\u043d\u044b\u0435.txt", "\u65e5\u672c\u8a9e.md", "\U0001f600.txt", "with space.txt",
    "...txt", "-dash.txt", "#hash.txt", "a:b.txt", "C:/x.txt",
    # long: a 250-byte name, a path of about 3,000 bytes
    "n" * 246 + ".txt", "/".join(["p" * 200] * 15) + "/f.txt",
)  # fmt: skip
# inside links to legitimate files (same shapes as the secret ones below)
LEGIT_LINKS = {"link_in.txt": "a.txt", "sub/link_up.txt": "../main.py"}
LEGIT_DIR_LINKS = {"dirlink_in": "sub"}
LEGIT_HARD = {"hard_in.txt": "a.txt"}
# out through a folder link and back in with '..': inside as the kernel reads it (the tools); the
# context's file list reads '..' as text (normpath), so there it names a file that does not exist
KERNEL_DOTDOT = "link then .."


@dataclasses.dataclass(frozen=True, slots=True)
class Case:
    path: str
    kind: str  # secret | outside | malformed | legit
    shape: str
    marker: str = ""  # a legitimate file's own text, which its readers must show


@dataclasses.dataclass(slots=True)
class Battery:
    base: Path
    cases: list[Case]
    secret_files: list[Path]

    def of(self, *kinds: str) -> list[Case]:
        return [c for c in self.cases if c.kind in kinds]


def shapes(rel: str, base: Path) -> list[tuple[str, str]]:
    """The same file named five ways."""
    return [
        (rel, "relative"),
        (f"./{rel}", "dot"),
        (f"sub/../{rel}", "dotdot inside"),
        (str(base / rel), "absolute"),
        (f"./sub/.././/{rel}", "dot, dotdot and //"),
    ]


def battery(app_dir: Path, app_files: Iterable[Path], log_dir: Path) -> Battery:
    """Build the tree under ``app_dir`` and return the paths to try (data, no surface involved)."""
    base = app_dir / "proj"
    outside = app_dir / "outside"
    (outside / "dir").mkdir(parents=True)
    (outside / "plain.txt").write_text(f"{OUTSIDE} plain\n")
    (outside / "dir" / "deep.txt").write_text(f"{OUTSIDE} deep\n")
    cases: list[Case] = []
    secrets: list[Path] = []
    for rel in SECRET_FILES:
        target = base / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(f"{SECRET} {rel}\n")
        secrets.append(target)
        cases += [Case(p, "secret", shape) for p, shape in shapes(rel, base)]
    for rel in LEGIT_FILES:
        target = base / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(f"{LEGIT} {rel}\n")
        cases += [Case(p, "legit", shape, f"{LEGIT} {rel}") for p, shape in shapes(rel, base)]
    # links: to legitimate files inside, to secrets, out of the project, loops
    app = {f.name: f for f in app_files}
    links = {
        **LEGIT_LINKS,
        **LEGIT_DIR_LINKS,
        "link_cred.txt": "credentials.toml",
        "link_env.txt": ".env",
        "sub/link_key.txt": "../id_rsa",
        "link_appcfg.txt": str(app["config.toml"]),
        "link_appcred.txt": str(app["credentials.toml"]),
        "link_apphist.txt": str(app["proj_history.toml"]),
        "link_out.txt": str(outside / "plain.txt"),
        "dirlink": str(outside),
        "link_etc": "/etc",
        "loop_a": "loop_b",
        "loop_b": "loop_a",
        "selfloop": "selfloop",
        "sub/chain.txt": "../link_cred.txt",  # a link to a link to a secret
    }
    for rel, target in links.items():
        (base / rel).symlink_to(target)
    hard = {**LEGIT_HARD, "hard_appcfg.txt": app["config.toml"], "hard_appcred.txt": app["credentials.toml"]}
    hard["hard_apphist.txt"] = app["proj_history.toml"]
    for rel, target in hard.items():
        os.link(base / target if isinstance(target, str) else target, base / rel)
    for rel, target in {**LEGIT_LINKS, **LEGIT_HARD}.items():
        marker = f"{LEGIT} {target.removeprefix('../')}"
        cases += [Case(p, "legit", "link inside", marker) for p, _ in shapes(rel, base)]
    cases += [
        Case(p, "legit", "dir link inside", f"{LEGIT} sub/b.txt") for p, _ in shapes("dirlink_in/b.txt", base)
    ]
    # out through a link and back in with '..': the kernel's reading, which lands inside
    cases += [
        Case(p, "legit", KERNEL_DOTDOT, f"{LEGIT} a.txt")
        for p in ("dirlink/../proj/a.txt", "./dirlink/..//proj/a.txt")
    ]
    secret_links = [
        "link_cred.txt",
        "link_env.txt",
        "sub/link_key.txt",
        "link_appcfg.txt",
        "link_appcred.txt",
    ]
    secret_links += [
        "link_apphist.txt",
        "sub/chain.txt",
        "hard_appcfg.txt",
        "hard_appcred.txt",
        "hard_apphist.txt",
    ]
    for rel in secret_links:
        cases += [Case(p, "secret", "link or hard link to a secret") for p, _ in shapes(rel, base)]
    # the app's own files by their own paths, and the logs folder
    log_dir.mkdir(parents=True, exist_ok=True)
    (log_dir / "session.txt").write_text(f"{SECRET} log\n")
    for f in app.values():
        cases += [
            Case(str(f), "secret", "app file, absolute"),
            Case(f"../{f.name}", "secret", "app file, .."),
        ]
    cases.append(Case(str(log_dir / "session.txt"), "secret", "logs folder, absolute"))
    cases += [Case(f"../logs/{p}", "secret", "logs folder") for p in ("session.txt", "./session.txt")]
    # out of the project
    for p in (
        "../outside/plain.txt", str(outside / "plain.txt"), "sub/../../outside/plain.txt",
        "../outside/dir/deep.txt", "./../outside/plain.txt", "link_out.txt", "./link_out.txt",
        "sub/../link_out.txt", "dirlink/plain.txt", "dirlink/dir/deep.txt", "/etc/passwd", "/etc/hostname",
        "/proc/self/environ", "link_etc/passwd", "~/.bashrc", "~/../../etc/passwd", "/", "..", "../..",
        "dirlink", "/tmp",
    ):  # fmt: skip
        cases.append(Case(p, "outside", "outside"))
    # malformed: NUL, loops, too long, look-alike separators, Windows forms
    for p in (
        "a.txt\x00", "a.txt\x00.png", "\x00", "credentials.toml\x00.txt", "sub/\x00/../a.txt",
        "loop_a", "loop_a/x.txt", "selfloop", "./selfloop", "sub/../loop_b",
        "x" * 256, "sub/" + "y" * 300 + ".txt", "/".join(["d" * 200] * 21), "a/" * 2100 + "a.txt",
        "\u2024\u2024/outside/plain.txt", "\uff0e\uff0e/outside/plain.txt", "..\u2215outside\u2215plain.txt",
        "\u2025/outside/plain.txt", "..\u29f8outside\u29f8plain.txt", "..\uff0foutside\uff0fplain.txt",
        "a.txt\u200b", "config.toml\u200b", "cre\u200bdentials.toml", "a\u202e.txt", "a.txt\n", "a\r.txt",
        "..\\outside\\plain.txt", "sub\\..\\credentials.toml", "C:\\Windows\\win.ini", "C:\\proj\\a.txt",
        "\\\\server\\share\\credentials.toml", "C:/Users/me/credentials.toml", "D:/.env", "c:/x/ID_RSA",
        "", " ", "   ",
    ):  # fmt: skip
        cases.append(Case(p, "malformed", "malformed"))
    return Battery(base, cases, secrets)


# -- the tools ---------------------------------------------------------------------------------
FILL: dict[str, Any] = {
    "name": "g",
    "start_line": 1,
    "end_line": 3,
    "regex": f"{LEGIT}|CANARY",
    "pattern": "*",
}


def readers(registry: ToolRegistry) -> list[Tool]:
    """Every tool that reads a path for the model (found, not listed: a new one is covered)."""
    return [t for t in registry.list() if not t.mutating and "path" in t.path_params]


def call_args(tool: Tool, path: str) -> dict[str, Any]:
    required = tool.parameters.get("required", [])
    return {"path": path, **{k: FILL[k] for k in required if k != "path"}}


def tool_violations(
    registry: ToolRegistry, ctx: ExecutionContext, cases: list[Case], every_tool: bool
) -> tuple[list[str], Counter[str]]:
    """Run the battery through the reading tools; the broken promises, and counts."""
    tools = readers(registry)
    read_file = registry.get("read_file")
    problems: list[str] = []
    counts: Counter[str] = Counter()
    for n, case in enumerate(cases):
        # fast: read_file on every path, and every other path one more tool in turn
        chosen = tools if every_tool else [read_file, *([tools[n // 2 % len(tools)]] if n % 2 else [])]
        for tool in {t.name: t for t in chosen}.values():
            result = registry.execute(
                ToolCall(f"r2-{n}-{tool.name}", tool.name, call_args(tool, case.path)), ctx
            )
            counts["tool calls"] += 1
            leaked = [t for t in FORBIDDEN_TEXT if t in result.content]
            if leaked:
                problems.append(f"{tool.name}({case.path!r}) [{case.shape}] showed {leaked}")
            if case.kind == "legit":
                if result.status is ToolStatus.DENIED:
                    problems.append(
                        f"{tool.name}({case.path!r}) [{case.shape}] falsely refused: {result.content}"
                    )
                elif tool is read_file and case.marker not in result.content:
                    problems.append(f"read_file({case.path!r}) [{case.shape}] lacks {case.marker!r}")
            elif (
                result.status is not ToolStatus.DENIED and result.metadata.get("error_kind") != "invalid_args"
            ):
                problems.append(
                    f"{tool.name}({case.path!r}) [{case.kind}, {case.shape}] not refused: {result.status}"
                )
            else:
                counts["refused"] += 1
    return problems, counts


def walk_violations(registry: ToolRegistry, ctx: ExecutionContext) -> list[str]:
    """The tools that walk folders never show a secret's content (and do show the legitimate files)."""
    problems: list[str] = []
    for name, args in (
        ("grep", {"path": ".", "regex": f"{LEGIT}|CANARY"}),
        ("grep", {"path": "sub", "regex": "CANARY"}),
        ("grep", {"path": "dirlink_in", "regex": "CANARY|LEGIT"}),
        ("search_files", {"path": ".", "pattern": "*"}),
        ("get_tree", {"path": "."}),
        ("list_directory", {"path": "."}),
        ("list_directory", {"path": "sub"}),
    ):
        result = registry.execute(ToolCall(f"walk-{name}", name, args), ctx)
        leaked = [t for t in FORBIDDEN_TEXT if t in result.content]
        if leaked:
            problems.append(f"{name}({args}) showed {leaked}")
        if name == "grep" and args["path"] == "." and f"{LEGIT} a.txt" not in result.content:
            problems.append(f"grep over the project missed a.txt: {result.content[:300]}")
    return problems


# -- context, refresh, MCP, index ----------------------------------------------------------------
def context_violations(ctrl: Any, bat: Battery) -> tuple[list[str], Any]:
    """Every case in the context at once: no secret shown, every legitimate file shown."""
    problems: list[str] = []
    state = ctrl.state
    # the user's choice: outside files are allowed here (and "/" would walk the disk), so not tried
    state.project_files = [c.path for c in bat.of("secret", "legit", "malformed") if "\x00" not in c.path]
    state.context_strategy = "full"
    state.context_token_budget = 10_000_000
    compiled = ctrl.context.compile(ctrl.context.request(), purpose="r2")
    if SECRET in compiled.markdown:
        leaked = [i.name for i in compiled.file_items if i.content and SECRET in i.content]
        problems.append(f"the compiled context shows secrets: {leaked[:10]}")
    for case in bat.of("legit"):
        if case.shape != KERNEL_DOTDOT and case.marker not in compiled.markdown:
            problems.append(f"context lacks {case.marker!r} ({case.path!r}, {case.shape})")
    nul = [c.path for c in bat.cases if "\x00" in c.path]
    state.project_files = nul  # alone: a NUL pattern must be reported, not break the compile
    try:
        broken = ctrl.context.compile(ctrl.context.request(), purpose="r2")
    except Exception as exc:
        problems.append(f"NUL patterns broke the compile: {exc!r}")
    else:
        if SECRET in broken.markdown:
            problems.append("a NUL pattern showed a secret")
    return problems, compiled


def refresh_violations(ctrl: Any, bat: Battery, compiled: Any) -> list[str]:
    """After a tool round: every legitimate file edited, some swapped for links to secrets."""
    refresher = compiled.refresher(ctrl.context.cache)
    time.sleep(0.01)  # a new mtime
    legit = sorted({bat.base / c.marker.split(" ", 1)[1] for c in bat.of("legit")})
    for path in legit:
        path.write_text(path.read_text() + f"{LEGIT} changed\n")
    swapped = [bat.base / rel for rel in ("readme.md", "sub/b.txt", "credentials.txt", "deep/a/b/c.txt")]
    for path, secret in zip(swapped, bat.secret_files, strict=False):
        path.unlink()
        path.symlink_to(secret)  # the file the model saw now points at a secret
    block = refresher.check()
    problems = (
        [f"the refresh block shows a secret: {block[block.find(SECRET) - 200 :][:400]}"]
        if SECRET in block
        else []
    )
    if f"{LEGIT} changed" not in block:
        problems.append("the refresh block shows none of the edited files")
    return problems


def mcp_violations(ctrl: Any, bat: Battery) -> tuple[list[str], Counter[str]]:
    """``slop://context/<path>`` for every case in the context, read through McpHost in-process
    (its reads of the project go to the main thread, which this thread keeps serving)."""
    cases = [c for c in bat.of("secret", "legit", "malformed") if "\x00" not in c.path]
    cases = cases if LONG else cases[::3]  # fast: every third path
    ctrl.state.project_files = [c.path for c in cases]
    host = McpHost(ctrl)
    texts: dict[str, str] = {}
    errors: dict[str, str] = {}

    async def read_all() -> None:
        for case in cases:
            uri = CONTEXT_URI + quote(case.path)
            try:
                result = await host.read_resource(None, types.ReadResourceRequestParams(uri=uri))
                texts[case.path] = "".join(getattr(c, "text", "") for c in result.contents)
            except MCPError as exc:
                errors[case.path] = str(exc)

    failure: list[BaseException] = []

    def run() -> None:
        try:
            anyio.run(read_all)
        except BaseException as exc:
            failure.append(exc)

    worker = threading.Thread(target=run, name="r2-mcp", daemon=True)
    worker.start()
    deadline = time.monotonic() + 120
    while worker.is_alive():
        assert time.monotonic() < deadline, "the MCP reads did not finish"
        ctrl.run_frame()
        worker.join(0.001)
    problems = [f"the MCP reads raised {failure[0]!r}"] if failure else []
    counts: Counter[str] = Counter(resources=len(cases), errors=len(errors))
    for case in cases:
        text = texts.get(case.path, "")
        if SECRET in text:
            problems.append(f"slop://context/{case.path!r} [{case.shape}] showed a secret")
        if case.kind == "legit" and case.shape != KERNEL_DOTDOT and case.marker not in text:
            problems.append(
                f"slop://context/{case.path!r} [{case.shape}] lacks its file: {errors.get(case.path)}"
            )
        counts["refused" if case.kind == "secret" and SECRET not in text else "shown"] += 1
    return problems, counts


def index_violations(policy: PathPolicy, bat: Battery, cache_dir: Path) -> list[str]:
    """The project index refuses the secrets (the decision the app passes it: ``policy.refusal``);
    the long variant indexes for real and looks for the secrets' text in the index."""
    files = [c.path for c in bat.of("secret", "legit") if "\x00" not in c.path]
    problems = [
        f"the index would read secret {c.path!r} [{c.shape}]"
        for c in bat.of("secret")
        if not policy.refusal(c.path)
    ]
    problems += [
        f"the index refuses {c.path!r} [{c.shape}]: {policy.refusal(c.path)}"
        for c in bat.of("legit")
        if policy.refusal(c.path)
    ]
    if not LONG:
        return problems
    from manual_slop.memory.index import ProjectIndex

    with ProjectIndex(cache_dir, refuse=policy.refusal) as index:
        report = index.index(files, base_dir=bat.base)
        stored = [p.text for p in index.query(f"{SECRET} credentials key", top_k=50)]
    problems += [f"the index holds a secret's text: {t[:80]!r}" for t in stored if SECRET in t]
    base = Path(os.path.normpath(bat.base))
    for case in bat.of("secret", "legit"):
        absolute = Path(os.path.normpath(base / case.path))  # the index's own key: relative when inside
        key = absolute.relative_to(base).as_posix() if absolute.is_relative_to(base) else absolute.as_posix()
        if case.kind == "secret" and key not in report.skipped:
            problems.append(f"the index did not skip {case.path!r} [{case.shape}]")
        elif case.kind == "legit" and case.shape != KERNEL_DOTDOT and key in report.skipped:
            problems.append(f"the index skipped {case.path!r} [{case.shape}]: {report.skipped[key]}")
    return problems


# -- the suite -----------------------------------------------------------------------------------
def make_app(make_controller: Callable[..., Any], app_dir: Path) -> tuple[Any, Battery]:
    for name in ("config.toml", "credentials.toml", "proj_history.toml"):
        (app_dir / name).write_text(f"# {SECRET} app {name}\n")
    (app_dir / "proj").mkdir()
    (app_dir / "proj.toml").write_text('[files]\nbase_dir = "proj"\n')
    ctrl = make_controller(project_file=app_dir / "proj.toml")
    paths = ctrl.paths
    assert paths.history_file == app_dir / "proj_history.toml"
    app_files = [paths.config_file, paths.credentials_file, paths.history_file]
    return ctrl, battery(app_dir, app_files, paths.log_dir)


def test_r2_every_reading_surface_refuses_the_forbidden_and_reads_the_legitimate(
    make_controller: Callable[..., Any], app_dir: Path, tmp_path: Path, summary: Callable[[str], None]
) -> None:
    ctrl, bat = make_app(make_controller, app_dir)
    forbidden, legit = bat.of("secret", "outside", "malformed"), bat.of("legit")
    assert len(forbidden) >= 200 and len(legit) >= 200, (len(forbidden), len(legit))
    registry = default_registry(with_powershell=False)
    ctx = dataclasses.replace(build_execution_context(ctrl), on_tool_call=None)
    problems, counts = tool_violations(registry, ctx, bat.cases, every_tool=LONG)
    problems += walk_violations(registry, ctx)
    policy = ctrl.path_policy(bat.base)
    problems += index_violations(policy, bat, tmp_path / "index-cache")
    mcp_problems, mcp_counts = mcp_violations(ctrl, bat)
    problems += mcp_problems
    context_problems, compiled = context_violations(ctrl, bat)
    problems += context_problems
    problems += refresh_violations(ctrl, bat, compiled)
    summary(
        f"R2 paths: {len(forbidden)} forbidden + {len(legit)} legitimate paths, {len(readers(registry))} "
        f"reading tools, {counts['tool calls']} tool calls ({counts['refused']} refused), "
        f"{mcp_counts['resources']} MCP reads ({mcp_counts['refused']} secrets refused), "
        f"context, refresh and index checked, {len(problems)} violations"
    )
    assert problems == [], f"{len(problems)} violations:\n" + "\n".join(problems[:40])


class _Unresolving(PathPolicy):
    """The planted defect: a policy that does not follow symlinks (``abspath`` for ``realpath``)."""

    def resolve(self, path: object) -> str:
        super().resolve(path)  # every other check still runs
        text = os.path.expanduser(str(path))
        joined = text if os.path.isabs(text) else os.path.join(self.base_dirs[0], text)
        return os.path.normcase(os.path.abspath(joined))


def test_r2_the_checker_catches_a_policy_that_does_not_resolve_symlinks(
    make_controller: Callable[..., Any], app_dir: Path
) -> None:
    ctrl, bat = make_app(make_controller, app_dir)
    ctx = build_execution_context(ctrl)
    broken = dataclasses.replace(
        ctx, policy=_Unresolving([bat.base], protected_files=[ctrl.paths.config_file]), on_tool_call=None
    )
    links = [c for c in bat.cases if c.path in ("link_out.txt", "dirlink/plain.txt", "link_cred.txt")]
    problems, _ = tool_violations(default_registry(), broken, links, every_tool=False)
    assert any("link_out.txt" in p and "showed" in p for p in problems), problems
    assert any("dirlink/plain.txt" in p and "not refused" in p for p in problems), problems
