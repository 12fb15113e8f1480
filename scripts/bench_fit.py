#!/usr/bin/env python3
"""What fitting a send's context to the model's window costs, and what a grammar costs the
local model — each measured beside its baseline in the same run.

1. **compile** of this repository's own project (``manual_slop.toml``: ``src/**/*.py``, the
   docs) with the project's 100,000-token budget: what a send did before it knew the model.
2. **fit to the local model's 8,192 tokens**, counted by SmolLM2's own tokenizer (llama.cpp
   ``/tokenize`` on the loaded model): the compiles it takes and their time, ÷ (1).
3. **fit to a 128,000-token hosted window** (estimated count), ÷ (1).
4. **generation on SmolLM2**: 64 tokens of a plain answer, with and without the turn grammar
   (free text or one tool block, 24 tools), alternating, median of ``--rounds``; tokens/s ratio.

Warm file cache for all; best of ``--rounds`` for the compiles.

Run: ``.venv/bin/python scripts/bench_fit.py [--rounds N]``
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from manual_slop.ai.grammar import turn_grammar  # noqa: E402
from manual_slop.ai.providers import ProviderConfig  # noqa: E402
from manual_slop.ai.providers.local import LocalProvider  # noqa: E402
from manual_slop.ai.windows import RequestBudget  # noqa: E402
from manual_slop.config import PROJECT_SCHEMA, TomlFile  # noqa: E402
from manual_slop.context.aggregate import ContextRequest, compile_context  # noqa: E402
from manual_slop.context.file_cache import FileCache  # noqa: E402
from manual_slop.context.fit import fit_context  # noqa: E402
from manual_slop.tools.registry import default_registry  # noqa: E402


def project_request() -> ContextRequest:
    data = TomlFile(ROOT / "manual_slop.toml", PROJECT_SCHEMA).load().data
    files, context = data["files"], data["context"]
    return ContextRequest(
        base_dir=str(ROOT),
        paths=tuple(files["paths"]),
        exclude=tuple(files["exclude"]),
        strategy=context["strategy"],
        token_budget=context["token_budget"],
        full_threshold=context["full_threshold"],
        system_prompt=data["project"]["system_prompt"],
    )


def best(rounds: int, work) -> tuple[float, object]:
    times, result = [], None
    for _ in range(rounds):
        started = time.perf_counter()
        result = work()
        times.append(time.perf_counter() - started)
    return min(times), result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    request = project_request()
    cache = FileCache()
    compile_context(request, cache)  # warm the page cache and the view cache alike for both sides

    plain_s, plain = best(args.rounds, lambda: compile_context(request, cache))
    local = LocalProvider(ProviderConfig("local", "SmolLM2-135M-Instruct"))
    local.count_tokens("warm up")  # loads the model once, outside the timings
    reserved = 1_817  # a first send's instructions, compact tools, message and answer room
    small = RequestBudget("local", "SmolLM2", 8_192, reserved, local.count_tokens, exact=True)
    small_s, (fitted, report) = best(
        args.rounds, lambda: fit_context(request, small, lambda r: compile_context(r, cache))
    )
    hosted = RequestBudget("deepseek", "deepseek-chat", 128_000, 12_000, lambda t: (len(t) + 3) // 4)
    hosted_s, (_, hosted_report) = best(
        args.rounds, lambda: fit_context(request, hosted, lambda r: compile_context(r, cache))
    )
    count_s, tokens = best(args.rounds, lambda: local.count_tokens(plain.markdown))

    print(f"project: {len(plain.files.items)} files, {len(plain.markdown):,} characters compiled")
    print(f"{'measure':58} {'time':>9} {'ratio':>7}")
    print(f"{'compile with the project budget (before: no model known)':58} {plain_s * 1000:8.1f}ms {1:7.2f}")
    label = f"fit to 8,192 tokens, SmolLM2's tokenizer ({report.rounds} compiles)"
    print(f"{label:58} {small_s * 1000:8.1f}ms {small_s / plain_s:7.2f}")
    label = f"fit to 128,000 tokens, estimated ({hosted_report.rounds} compile)"
    print(f"{label:58} {hosted_s * 1000:8.1f}ms {hosted_s / plain_s:7.2f}")
    label = f"tokenize the whole compiled project ({tokens:,} tokens)"
    print(f"{label:58} {count_s * 1000:8.1f}ms {count_s / plain_s:7.2f}")
    print(
        f"fit: {report.tokens:,} of {report.available:,} tokens; {len(report.gave_way)} shortened, "
        f"{len(report.dropped)} left out; estimate/real = {len(fitted.markdown) / 4 / report.tokens:.2f}"
    )

    engine = local.engine()
    grammar = turn_grammar(default_registry().declarations("openai"))
    question = [{"role": "user", "content": "Write two sentences about rivers."}]
    rates: dict[str, list[float]] = {"plain": [], "grammar": []}
    for _ in range(args.rounds):
        for name in ("plain", "grammar"):
            body = {"messages": question, "max_tokens": 64, "temperature": 0.0, "n_predict": 64}
            if name == "grammar":
                body["grammar"] = grammar
            started = time.perf_counter()
            out = engine.handle_chat_completions(body)
            elapsed = time.perf_counter() - started
            rates[name].append(out["usage"]["completion_tokens"] / elapsed)
    plain_rate, grammar_rate = (statistics.median(rates[k]) for k in ("plain", "grammar"))
    print(
        f"SmolLM2 64 tokens, median of {args.rounds}: plain {plain_rate:.1f} tok/s, with the turn "
        f"grammar {grammar_rate:.1f} tok/s (ratio {grammar_rate / plain_rate:.2f})"
    )
    local.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
