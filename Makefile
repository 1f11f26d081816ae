# promptc — two commands on a fresh machine: `make build`, then `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp
TESTSTAMP := $(VENV)/.test-installed-stamp
# -qq: pip's own progress and the build backend's notices stay out of `make build`; errors still show
PIP    := $(BIN)/python -m pip install -qq --disable-pip-version-check

.PHONY: build test check lint bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# Reinstall when the project's metadata changes; the editable install picks up code edits itself.
# `make build` installs promptc and what it needs to run; the test toolchain comes with `make test`.
$(STAMP): pyproject.toml setup.cfg | $(BIN)/python
	@$(PIP) --upgrade pip
	@$(PIP) -e .
	@touch $(STAMP)

# mypy cannot follow the editable install: `promptc` is the `compiler/` folder, which setuptools maps
# with an import hook, and static tools read only folders on the path (mypy says `import-not-found`
# for `promptc.runtime`). A `promptc-stubs` link to the source in site-packages is a PEP 561 stub
# package: mypy reads the real, typed modules through it, Python's import ignores it.
MYPYLINK := $(VENV)/.mypy-link-stamp
$(MYPYLINK): $(STAMP)
	@$(BIN)/python -c "import os, sysconfig; link = os.path.join(sysconfig.get_paths()['purelib'], 'promptc-stubs'); \
	os.path.lexists(link) and os.remove(link); os.symlink(os.path.abspath('compiler'), link, target_is_directory=True)"
	@touch $(MYPYLINK)

$(TESTSTAMP): $(STAMP) $(MYPYLINK)
	@$(PIP) -e '.[test]'
	@touch $(TESTSTAMP)

# The committed build, and the files generated from the compiler's own definitions: the JavaScript
# runtime's constants and the editor grammar (tests fail when either is stale).
build: $(STAMP) $(MYPYLINK)
	$(BIN)/promptc build prompts_src -o build
	$(BIN)/python runtime-js/gen_constants.py
	$(BIN)/python editors/vscode/gen_grammar.py

# Two workers: the suite stays under a minute on a two-core machine. `.ci/run` adds the fuller
# randomised profile (PROMPTC_TEST_PROFILE=ci).
# `--dist worksteal`: a worker that runs out of tests takes some of the other's queue, so the two
# finish together instead of one waiting on the other's last slow tests.
test: $(TESTSTAMP)
	@# bytecode caches on: a shell with PYTHONDONTWRITEBYTECODE set would recompile every module (and
	@# re-rewrite every test's asserts) in each of the many promptc processes the tests start
	env -u PYTHONDONTWRITEBYTECODE $(BIN)/python -m pytest -n 2 --dist worksteal

check: $(TESTSTAMP)
	$(BIN)/promptc check prompts_src -o build --locked
	$(BIN)/ruff check compiler tests bench
	$(BIN)/ruff format --check compiler tests bench
	$(BIN)/python -m mypy compiler

lint: check

# Every target of issue 26 in one run and one table (about 7 minutes on two cores; docs/performance.md,
# "Reproduce"). `make bench BENCH_ARGS=--quick` runs every row small, in about 30 s.
BENCH_ARGS ?=
bench: $(TESTSTAMP)
	@$(PIP) -e '.[test,bench]'
	$(BIN)/python bench/run.py $(BENCH_ARGS)

clean:
	rm -rf $(VENV) .promptc-cache .pytest_cache
