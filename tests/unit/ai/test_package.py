"""The ai package's public surface, and that importing it costs no provider SDK."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import manual_slop.ai as ai
from manual_slop.ai.providers import PROVIDER_CLASSES, provider_class
from manual_slop.config import PROVIDER_NAMES

ROOT = Path(__file__).resolve().parents[3]
HEAVY = ("anthropic", "google.genai", "xllamacpp")


def test_public_names_are_sorted_and_exported() -> None:
    assert ai.__all__ == sorted(ai.__all__, key=lambda n: (not n.isupper(), n))
    for name in ai.__all__:
        assert hasattr(ai, name), name


def test_every_configurable_provider_has_a_class_with_its_name() -> None:
    assert set(PROVIDER_CLASSES) == set(PROVIDER_NAMES)
    for name in PROVIDER_NAMES:
        assert provider_class(name).name == name


def test_importing_the_client_and_sending_with_one_provider_imports_no_other_sdk() -> None:
    script = textwrap.dedent(
        f"""
        import json, sys
        sys.path.insert(0, {str(ROOT)!r})
        import manual_slop.ai as ai
        after_import = [m for m in {HEAVY!r} if m in sys.modules]
        from tests.fakes import OpenAIFake, Reply
        with OpenAIFake([Reply("hi")]) as fake:
            client = ai.AIClient()
            client.set_provider("deepseek")
            client.configure(base_url=fake.base_url, api_key="k")
            answer = client.send("", "hello")
        after_send = [m for m in {HEAVY!r} if m in sys.modules]
        print(json.dumps({{"answer": answer, "after_import": after_import, "after_send": after_send}}))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, cwd=ROOT
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result == {"answer": "hi", "after_import": [], "after_send": []}
