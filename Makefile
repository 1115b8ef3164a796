# firstfault: the commands a new user runs. `make demo` and `make test` install what they need first.
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: install demo test audit fuzz lint score bench bench-pipeline bench-history clean

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

# The pinned runtime dependencies against PyPI's vulnerability data (docs/operations.md, "Dependencies")
audit:
	$(PY) deploy/audit.py deploy/requirements.lock

# Every fuzz target at 10,000+ inputs (CI runs the atheris targets at 10,000 and the hypothesis ones at a few
# hundred: docs/fuzzing.md). ATHERIS_RUNS and EXAMPLES raise them; FF_FUZZ_SEED picks libFuzzer's seed.
ATHERIS_RUNS ?= 100000
EXAMPLES ?= 10000
FUZZ_TESTS := tests/unit/test_wire_fuzz.py tests/unit/test_shard_fuzz.py tests/catalog/test_loader_fuzz.py \
	tests/notifiers/test_render_fuzz.py tests/fuzz/test_found.py
fuzz: install
	FF_ATHERIS_RUNS=$(ATHERIS_RUNS) FF_ATHERIS_SECONDS=3600 $(BIN)/python -m tests.fuzz.runner $(TARGETS)
	FF_FUZZ_WIRE=$(EXAMPLES) FF_FUZZ_SHARD=$(EXAMPLES) FF_FUZZ_CATALOG=$(EXAMPLES) FF_FUZZ=$(EXAMPLES) \
	  FF_FUZZ_TERMINAL=$$(( $(EXAMPLES) / 10 )) $(BIN)/python -m pytest -q -p no:randomly -o timeout=3600 --durations=12 $(FUZZ_TESTS)

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
