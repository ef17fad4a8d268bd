# AutoDoc: `make run` opens the bundled knowledge base, `make test` runs every test.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
SHARED ?= ../shared
RUN_DB := .run/autodoc.db

.PHONY: install run test lint bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

run: install
	@mkdir -p .run
	$(BIN)/autodoc --db $(RUN_DB) --call workspace.add '["autodoc-kb", "doc/kb"]' > /dev/null
	$(BIN)/autodoc --db $(RUN_DB) --call workspace.index '["autodoc-kb"]'
	$(BIN)/autodoc --db $(RUN_DB) --call search.query '["autodoc-kb", "why did we pick an embedded relational store", {"limit": 3}]'

test: install
	$(BIN)/ruff check .
	$(BIN)/python -m pytest -q

lint: install
	$(BIN)/ruff check .

bench: install
	$(BIN)/python -m tests.bench.retrieval --shared $(SHARED) --out doc/benchmarks/kb-retrieval.md

clean:
	rm -rf $(VENV) .run .pytest_cache .ruff_cache
