# Two commands set up a fresh machine: `make demo` (the main job) and `make test` (the tests).
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
STAMP := $(VENV)/.installed

.PHONY: demo test install lint bench clean

$(STAMP): pyproject.toml constraints/cpu.txt
	$(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q torch==2.13.0 -c constraints/cpu.txt
	$(PIP) install -q -c constraints/cpu.txt -e ".[dev,train]"
	touch $(STAMP)

## The hot modules compiled by mypyc: the suite scorer's per-trajectory code (about 20% less CPU on a big
## suite) and the dataset validator's per-row fast path; optional: a failed build prints why and the pure
## module (the same code) is used. Rebuilt when a module changes.
SCORER := build/scorer-compiled.stamp
$(SCORER): $(STAMP) agent_rl_sandbox/tools/_suite_hot.py agent_rl_sandbox/tools/datasets/_fast_hot.py scripts/compile_scorer.py
	-$(PY) scripts/compile_scorer.py
	@mkdir -p build && touch $@

install: $(STAMP) $(SCORER)

## The main job: start the MCP server over stdio and play a good and a careless agent on a built-in task.
demo: $(STAMP)
	HF_HUB_OFFLINE=1 $(VENV)/bin/agent-rl-sandbox demo

## The whole test suite, on up to 4 pytest-xdist workers (one per CPU: 2 on a 2-core machine).
## `$(PY) -m pytest tests/...` without -n runs in one process, for a single file or a debugger.
test: $(STAMP) $(SCORER)
	HF_HUB_OFFLINE=1 $(PY) -m pytest -n auto --maxprocesses=4

## Style, formatting, the import layers (pyproject [tool.importlinter]) and types on schemas/ and tools/.
lint: $(STAMP)
	$(VENV)/bin/ruff check agent_rl_sandbox tests bench
	$(VENV)/bin/ruff format --check agent_rl_sandbox tests bench
	$(VENV)/bin/lint-imports
	$(VENV)/bin/mypy

clean:
	rm -rf $(VENV) .pytest_cache build agent_rl_sandbox/tools/_suite_hot_c*.so
