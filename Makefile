# Two commands on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PIP := $(BIN)/python -m pip
PIP_FLAGS := --quiet --disable-pip-version-check --require-hashes --no-deps

.PHONY: venv dev demo test lint typecheck pytest bench lock clean vsix extension-test

venv: $(VENV)/.runtime-installed

dev: $(VENV)/.dev-installed

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)

# Installs exactly the locked, hash-checked set, then the project itself without touching the network.
$(VENV)/.runtime-installed: requirements.lock pyproject.toml | $(VENV)/bin/python
	$(PIP) install $(PIP_FLAGS) -r requirements.lock
	$(PIP) install --quiet --no-deps --no-build-isolation -e .
	touch $@

$(VENV)/.dev-installed: requirements-dev.lock pyproject.toml | $(VENV)/bin/python
	$(PIP) install $(PIP_FLAGS) -r requirements-dev.lock
	$(PIP) install --quiet --no-deps --no-build-isolation -e .
	touch $@ $(VENV)/.runtime-installed

demo: venv
	$(BIN)/spade demo

lint: dev
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: dev
	$(BIN)/mypy --strict spade_lsp client/spade_lsp_client server/spade_lsp_server

# The whole suite, benchmarks included (they assert the issue's floors). pytest's exit code 5
# ("no tests collected") is not a failure of the code under test, so it passes with a note.
pytest: dev
	@$(BIN)/pytest -q tests; code=$$?; \
	if [ $$code -eq 5 ]; then echo "pytest: no tests were collected"; exit 0; fi; exit $$code

test: lint typecheck extension-test vsix pytest

# The VS Code extension (extension/, TypeScript): its locked dependencies, its unit tests, and the .vsix that
# the end-to-end test installs into VS Code (code-server). Needs Node >= 20 and npm.
NPM_FLAGS := --no-audit --no-fund --loglevel=error
extension/node_modules/.installed: extension/package.json extension/package-lock.json
	cd extension && npm ci $(NPM_FLAGS)
	touch $@

extension-test: extension/node_modules/.installed dev
	cd extension && npm run --silent typecheck && SPADE_TEST_PYTHON=$(abspath $(BIN)/python) npm test --silent

vsix: extension/node_modules/.installed
	cd extension && npm run --silent package
	@echo "built extension/dist/spade-lsp.vsix"

bench: dev
	$(BIN)/pytest -q -s tests/benchmarks -m benchmark

# Regenerates both lock files (needs uv: `pip install uv`); commit the result.
lock:
	uv pip compile pyproject.toml build-requirements.in --generate-hashes --python-version 3.11 \
	  --python-platform x86_64-unknown-linux-gnu -o requirements.lock -q
	uv pip compile pyproject.toml build-requirements.in --extra dev --generate-hashes --python-version 3.11 \
	  --python-platform x86_64-unknown-linux-gnu -o requirements-dev.lock -q

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache extension/node_modules extension/dist extension/out artifacts
