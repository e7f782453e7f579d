# Two commands from a fresh clone:
#   make ask    set everything up, then: search ask "who scored the winner"
#   make test   set everything up, then run the test suite
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
Q      ?= who scored the winner

.PHONY: setup ask test lint chromium bench clean-index

# torch is pinned and installed first: 2.13.0 is the CPU build on this machine's
# disk; letting sentence-transformers pull a bare `torch` would fetch a multi-GB
# CUDA build.
$(BIN)/search: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet torch==2.13.0
	$(BIN)/pip install --quiet -e ".[serve,dev,milvus,ray]"
	# Byte-compile the package now: CPython 3.11 can raise "AST constructor recursion depth
	# mismatch" when threads compile modules for the first time at once (a server's first
	# concurrent queries on a fresh checkout; tests/test_reindex.py hit it once in CI).
	$(BIN)/python -m compileall -q search
	touch $(BIN)/search

setup: $(BIN)/search

ask: setup
	$(BIN)/search ask "$(Q)"

# The browser tests of the web page need Debian's chromium: installed here when it is
# missing and we are root; otherwise the one command to run is printed and the run stops
# (never a silent skip).
chromium:
	@command -v chromium >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ]; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	  else \
	    echo "the web page tests need Chromium: sudo apt-get install -y chromium" >&2; exit 1; \
	  fi; }

test: setup chromium
	$(BIN)/python -m pytest -q

lint: setup
	$(BIN)/ruff check search tests scripts
	$(BIN)/ruff format --check search tests scripts
	$(BIN)/mypy search

clean-index:
	rm -rf index/CURRENT index/gen-* index/.lock
