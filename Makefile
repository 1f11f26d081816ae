# promptc — two commands on a fresh machine: `make build`, then `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp

.PHONY: build test check lint bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# Reinstall when the project's metadata changes; the editable install picks up code edits itself.
$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	@touch $(STAMP)

build: $(STAMP)
	$(BIN)/promptc build prompts_src -o build

# Two workers: the suite stays under a minute on a two-core machine. `.ci/run` adds the fuller
# randomised profile (PROMPTC_TEST_PROFILE=ci).
test: $(STAMP)
	$(BIN)/python -m pytest -n 2

check: $(STAMP)
	$(BIN)/promptc check prompts_src -o build --locked
	$(BIN)/ruff check compiler tests bench
	$(BIN)/ruff format --check compiler tests bench

lint: check

bench: $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[test,bench]'
	$(BIN)/python bench/run.py
	$(BIN)/python bench/pathological.py

clean:
	rm -rf $(VENV) .promptc-cache .pytest_cache
