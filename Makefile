# firstfault: the commands a new user runs. `make demo` and `make test` install what they need first.
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: install demo test lint score bench bench-pipeline bench-history clean

$(BIN)/firstfault: pyproject.toml setup.py $(wildcard catalog/_linescan*.[ch])
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev]'
	@touch $@

install: $(BIN)/firstfault

demo: install
	$(BIN)/firstfault diagnose examples/oom-killed-rank37

test: install
	$(BIN)/ruff check .
	$(BIN)/mypy schemas catalog correlator config sources scan simulate ingest store pipeline runtime collect workers notifiers api firstfault
	$(BIN)/lint-imports
	$(BIN)/python -m pytest -q -n auto --durations=25

score: install
	$(BIN)/python ../shared/corpus/score.py ../shared/corpus/real/labels.jsonl --exe $(BIN)/firstfault -v

bench: install
	$(BIN)/python -m bench.matcher

bench-pipeline: install
	$(BIN)/python -m bench.pipeline

bench-history: install
	$(BIN)/python -m bench.history

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .mypy_cache .ruff_cache
