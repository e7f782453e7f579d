# Two commands from a fresh clone:
#   make ask    set everything up, then: search ask "who scored the winner"
#   make test   set everything up, then run the test suite
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
Q      ?= who scored the winner

.PHONY: setup ask test lint bench clean-index

# torch is pinned and installed first: 2.13.0 is the CPU build on this machine's
# disk; letting sentence-transformers pull a bare `torch` would fetch a multi-GB
# CUDA build.
$(BIN)/search: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet torch==2.13.0
	$(BIN)/pip install --quiet -e ".[serve,dev,milvus,ray]"
	touch $(BIN)/search

setup: $(BIN)/search

ask: setup
	$(BIN)/search ask "$(Q)"

test: setup
	$(BIN)/python -m pytest -q

lint: setup
	$(BIN)/ruff check search tests scripts
	$(BIN)/ruff format --check search tests scripts

clean-index:
	rm -rf index/CURRENT index/gen-* index/.lock
