"""The adversarial path suite: every hostile path is denied, every legitimate one allowed.

Each case is checked twice — by ``PathPolicy.check`` and end to end through the registry
(``read_file`` and, with an approver that says yes to everything, ``write_file``), so a
denial is proven to reach the model as ``ACCESS DENIED: ...`` and to leave the disk alone.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from manual_slop.tools import (
    AccessDenied,
    ApprovalResult,
    ExecutionContext,
    PathPolicy,
    ToolCall,
    ToolStatus,
    default_registry,
)


def fullwidth(text: str) -> str:
    return "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in text)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Path]]:
    root = tmp_path_factory.mktemp("world")
    base = root / "proj"
    app = root / "app"
    outside = root / "outside"
    for folder in (base / "src", base / "docs", base / "logs" / "sessions" / "s1", base / ".git" / "hooks",
                   app, outside, root / "proj_evil", root / "shared"):  # fmt: skip
        folder.mkdir(parents=True)
    (base / "src" / "main.py").write_text("print(1)\n")
    (base / "credentials.toml").write_text("[x]\napi_key = 'k'\n")
    (base / "config.toml").write_text("[ai]\n")
    (base / "logs" / "sessions" / "s1" / "comms.log").write_text("{}\n")
    (base / "demo.toml").write_text("[project]\n")
    (outside / "secret.txt").write_text("secret\n")
    (root / "proj_evil" / "x.txt").write_text("evil\n")
    (root / "shared" / "notes.md").write_text("# notes\n")
    (app / "config.toml").write_text("[ai]\n")
    (app / "credentials.toml").write_text("[x]\n")
    (app / "demo_history.toml").write_text("[discussions]\n")
    (base / "escape_dir").symlink_to(outside, target_is_directory=True)
    (base / "escape_file").symlink_to(outside / "secret.txt")
    (base / "etc_link").symlink_to("/etc/passwd")
    (base / "hop1").symlink_to(base / "hop2")
    (base / "hop2").symlink_to(outside / "secret.txt")
    (base / "innocent.txt").symlink_to(base / "credentials.toml")
    (base / "logs_link").symlink_to(base / "logs", target_is_directory=True)
    (base / "app_link").symlink_to(app, target_is_directory=True)
    (base / "loop").symlink_to(base / "loop")
    (base / "inner_link").symlink_to(base / "src" / "main.py")
    os.link(app / "credentials.toml", base / "hardlink_notes.txt")
    yield {"root": root, "base": base, "app": app, "outside": outside}


def policy_for(world: dict[str, Path]) -> PathPolicy:
    app = world["app"]
    return PathPolicy.for_project(
        world["base"],
        ["src/*.py", "../shared/notes.md"],
        log_dir=world["base"] / "logs",
        protected_files=[app / "config.toml", app / "credentials.toml", app / "demo_history.toml"],
        write_protected=[world["base"] / "demo.toml"],
    )


# -- the hostile paths ---------------------------------------------------------------------------------
def _hostile() -> list[str]:
    cases: list[str] = []
    targets = ["etc/passwd", "outside/secret.txt", "proj_evil/x.txt", "app/credentials.toml"]
    for depth in range(1, 7):
        for target in targets:
            cases.append("../" * depth + target)
    cases += [
        "..",
        "../",
        "../..",
        "src/../..",
        "src/../../outside/secret.txt",
        "./../outside/secret.txt",
        "docs/../../outside",
        "src/./../../proj_evil/x.txt",
        "src//..//..//outside/secret.txt",
    ]
    cases += [
        "/etc/passwd",
        "/etc/shadow",
        "/root/.ssh/id_rsa",
        "/proc/self/environ",
        "/dev/zero",
        "/",
        "/tmp",
        "//etc/passwd",
        "/./etc/passwd",
        "/etc/../etc/passwd",
        "/usr/bin/env",
        "/var/log/syslog",
    ]
    cases += [
        "escape_dir",
        "escape_dir/secret.txt",
        "escape_dir/new.txt",
        "./escape_dir/../escape_dir/secret.txt",
        "escape_file",
        "etc_link",
        "hop1",
        "hop2",
        "app_link/credentials.toml",
        "app_link",
        "loop",
        "loop/x",
        "src/../escape_file",
    ]
    names = ["credentials.toml", "config.toml", "history.toml", "x_history.toml", "manual_slop_history.toml"]
    for name in names:
        cases += [
            name,
            name.upper(),
            name.title(),
            f"./{name}",
            f"src/../{name}",
            f"src/{name}",
            f"docs/sub/{name}",
            f"{name}.",
            f"{name} ",
            f"{name}::$DATA",
            fullwidth(name),
        ]
    cases += [
        "cr\u0435dentials.toml",
        "\u0441onfig.toml",
        "hist\u043ery.toml",
        "c\u200bredentials.toml",
        "credenti\u0430ls.toml",
        "co\u0308nfig.toml",
        "CREDENTIALS.toml\u200d",
        "innocent.txt",
        "hardlink_notes.txt",
        "CoNfIg.ToMl",
        "x_HISTORY.toml",
        "Demo_History.TOML",
    ]
    cases += [
        "logs",
        "logs/",
        "logs/sessions",
        "logs/sessions/s1/comms.log",
        "./logs/../logs/sessions",
        "logs_link",
        "logs_link/sessions/s1/comms.log",
        "src/../logs/sessions/s1/comms.log",
    ]
    cases += ["~", "~/", "~/.ssh/id_rsa", "~/.bashrc", "~root/.bashrc", "~/../etc/passwd", "~/" + "x.txt"]
    cases += ["src/main.py\x00.txt", "\x00", "credentials.toml\x00", "src/\x00/main.py", "a\x00b"]
    cases += [
        "a" * 300,
        "src/" + "x" * 256,
        "a/" * 2100,
        "../" * 1400 + "etc/passwd",
        "x" * 5000,
        "docs/" + "é" * 200 + ".md",
    ]
    cases += [
        "\u2025/etc/passwd",
        "\uff0e\uff0e/\uff0e\uff0e/etc/passwd",
        "..\u2215..\u2215etc",
        "..\uff0fetc",
        "src/\u202emain.py",
        "src/\u200b../../outside",
        "..\\..\\etc\\passwd",
        "src\\..\\..\\outside",
        "\u2024\u2024/outside",
        "\ufe52\ufe52/etc",
        "src/\nmain.py",
        "src/\x1b[31m.py",
        "src/\t/x",
        "\u2028etc",
        "",
        "   ",
    ]
    return cases


HOSTILE = _hostile()
HOSTILE_WRITES = [".git/config", ".git/hooks/pre-commit", "src/../.git/HEAD", "demo.toml", "./demo.toml"]
LEGIT = [
    "src/main.py", "./src/main.py", "src/./main.py", "src/../src/main.py", "docs", "src", ".", "./",
    "docs/new.md", "a b/c d.txt", "unicode/ünïcödé.py", "日本語.txt", "src/.hidden", "deep/" * 20 + "f.txt",
    "inner_link", "config.toml.bak", "myconfig.toml", "notes_history.md", "history.txt", "credentials.json",
    "logs.txt", "src/logs/app.log", "LOGS/x.txt", "....", "...txt", "a..b.txt", "..hidden", "~notauser/file",
    "caf\u00e9.py", "cafe\u0301.py", "../shared/notes.md", "git/config", "src/.gitignore", "demo.toml.orig",
    "history.toml.md", "x" * 255,
]  # fmt: skip


def test_the_suite_is_large_enough() -> None:
    assert len(HOSTILE) * 2 + len(HOSTILE_WRITES) >= 200
    assert len(set(HOSTILE)) == len(HOSTILE)


@pytest.mark.parametrize("write", [False, True], ids=["read", "write"])
def test_every_hostile_path_is_denied(world: dict[str, Path], write: bool) -> None:
    policy = policy_for(world)
    leaked = []
    for path in HOSTILE + (HOSTILE_WRITES if write else []):
        allowed, reason = policy.is_allowed(path, write=write)
        if allowed or not reason:
            leaked.append(path)
        with pytest.raises(AccessDenied):
            policy.check(path, write=write)
    assert leaked == []


def test_non_strings_are_denied(world: dict[str, Path]) -> None:
    policy = policy_for(world)
    for value in (42, None, b"src/main.py", ["src"], 3.5):
        assert policy.is_allowed(value)[0] is False


@pytest.mark.parametrize("write", [False, True], ids=["read", "write"])
def test_every_legitimate_path_is_allowed(world: dict[str, Path], write: bool) -> None:
    policy = policy_for(world)
    refused = {
        p: policy.is_allowed(p, write=write)[1] for p in LEGIT if not policy.is_allowed(p, write=write)[0]
    }
    assert refused == {}
    assert policy.is_allowed("demo.toml")[0] is True  # the project file is readable, only writes are refused


def tree_digest(root: Path) -> dict[str, str]:
    digest = {}
    for folder, _, files in os.walk(root):
        for name in files:
            path = Path(folder) / name
            if not path.is_symlink():
                digest[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest()
    return digest


def test_hostile_paths_end_to_end_through_the_registry(world: dict[str, Path]) -> None:
    asked: list[str] = []

    def yes(request) -> ApprovalResult:  # the worst case: a human who approves everything
        asked.append(request.call.args["path"])
        return ApprovalResult(True, request.call.args)

    ctx = ExecutionContext(world["base"], policy_for(world), pre_tool_callback=yes)
    registry = default_registry(with_powershell=False)
    before = tree_digest(world["root"])
    for path in HOSTILE:
        for name, args in (("read_file", {"path": path}), ("write_file", {"path": path, "content": "pwned"})):
            result = registry.execute(ToolCall.new(name, args), ctx)
            if path.strip():
                assert result.status is ToolStatus.DENIED, (name, path, result.content)
                assert result.content.startswith("ACCESS DENIED: ")
            else:
                assert result.status is not ToolStatus.SUCCESS  # empty paths fail schema validation first
    for path in HOSTILE_WRITES:
        result = registry.execute(ToolCall.new("write_file", {"path": path, "content": "pwned"}), ctx)
        assert result.status is ToolStatus.DENIED, path
    assert asked == []
    assert tree_digest(world["root"]) == before
    grep = registry.execute(ToolCall.new("grep", {"path": ".", "regex": "secret|api_key"}), ctx)
    assert grep.content.startswith("no matches")  # nothing protected or outside is searched
