"""A small project on disk with one file of every kind the aggregator treats differently."""

from __future__ import annotations

import json
from pathlib import Path

APP_PY = '''"""The app module."""

import os
from pathlib import Path

LIMIT = 10


class Greeter:
    """Says hello."""

    def __init__(self, name: str) -> None:
        self.name = name

    def greet(self, loud: bool = False) -> str:
        """Return the greeting."""
        text = f"hello {self.name}"
        return text.upper() if loud else text


def main() -> None:
    print(Greeter(os.environ.get("USER", "you")).greet())
'''

SECRETS_PY = '''"""Settings with secrets."""

API_KEY = "sk-live-123456"
password = "hunter2"
HOST = "example.org"
'''

GUIDE_MD = """# Guide

Intro text.

## Install

```sh
# not a heading
pip install thing
```

## Use

### Details

Done.
"""

SETTINGS_TOML = """name = "demo"

[server]
host = "localhost"
port = 8080

[[plugins]]
name = "a"
"""

PNG_BYTES = (
    b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89"
    b"\x00\x00\x00\rIDATx\x9cc\xf8\x0f\x00\x00\x01\x01\x00\x05\x18\xd8N\x00\x00\x00\x00IEND\xaeB`\x82"
)


def big_python(functions: int = 120) -> str:
    parts = ['"""A big generated module."""\n\nimport math\n']
    for i in range(functions):
        parts.append(
            f"\ndef func_{i}(x: int, y: int = {i}) -> int:\n"
            f'    """Compute value {i}."""\n'
            f"    total = 0\n"
            f"    for k in range(x):\n"
            f"        total += math.floor(k * y / (k + 1))\n"
            f"    return total + {i}\n"
        )
    return "".join(parts)


def build_project(root: Path) -> Path:
    """Write the fixture project under ``root`` and return it."""
    (root / "src").mkdir(parents=True)
    (root / "docs").mkdir()
    (root / "src" / "app.py").write_text(APP_PY)
    (root / "src" / "big.py").write_text(big_python())
    (root / "src" / "secrets.py").write_text(SECRETS_PY)
    (root / "src" / "broken.py").write_text("def broken(:\n    pass\n")
    (root / "src" / "__pycache__").mkdir()
    (root / "src" / "__pycache__" / "app.cpython-311.pyc").write_bytes(b"\0\0junk")
    (root / "docs" / "guide.md").write_text(GUIDE_MD)
    (root / "docs" / "big.md").write_text(
        "".join(f"## Section {i}\n\n" + "words " * 200 + "\n\n" for i in range(40))
    )
    (root / "settings.toml").write_text(SETTINGS_TOML)
    (root / "data.json").write_text(json.dumps({"items": [{"id": 1, "tags": ["a"]}], "count": 1}, indent=2))
    (root / "notes.txt").write_text("".join(f"note line {i}\n" for i in range(50)))
    (root / "shot.png").write_bytes(PNG_BYTES)
    (root / "blob.dat").write_bytes(b"\x00\x01\x02binary")
    return root


ALL_FILES = ["src/**/*.py", "docs/*.md", "settings.toml", "data.json", "notes.txt", "blob.dat"]
