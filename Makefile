# `make demo` and `make test` work on a fresh clone: each creates .venv and installs the
# package (editable) into it when missing.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python

.PHONY: demo test test-all test-gpu fuzz bench clean

$(VENV)/.installed: pyproject.toml setup.py
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e .
	touch $@

$(VENV)/.installed-test: $(VENV)/.installed
	$(PY) -m pip install -q -e '.[test]'
	touch $@

$(VENV)/.installed-bench: $(VENV)/.installed
	$(PY) -m pip install -q -e '.[bench]'
	touch $@

# The library's prebuilt GEMM kernels (`python -m cdnajit warm`: docs/libraries.md, "BLAS"), made again
# when the compiler's sources change (they are keyed by them): f32 for the demo, f32 and f64 for the
# benchmarks (W12). A warm removes the kernels of other sources, so each stamp names its dtypes.
COMPILER_SOURCES := $(shell find ir passes lowering libs codegen runtime -name '*.py')
$(VENV)/.warmed-f32: $(VENV)/.installed $(COMPILER_SOURCES)
	$(PY) -m cdnajit warm --dtypes f32
	touch $@

$(VENV)/.warmed-f32-f64: $(VENV)/.installed $(COMPILER_SOURCES)
	$(PY) -m cdnajit warm --dtypes f32,f64
	touch $@

demo: $(VENV)/.installed $(VENV)/.warmed-f32
	$(PY) examples/gelu_layer.py

test: $(VENV)/.installed-test
	$(PY) -m pytest -m "not slow and not gpu" -n 2

test-all: $(VENV)/.installed-test
	$(PY) -m pytest -m "not gpu" -n 2

# `make test-gpu` on a machine with an NVIDIA GPU and compute-sanitizer: the corpus and random
# programs on the GPU against the CPU, and the corpus under racecheck, synccheck and memcheck
# (tests/gpu; CDNAJIT_GPU_PROGRAMS=N sets how many random programs, 300 by default).
test-gpu: $(VENV)/.installed-test
	$(PY) -m pytest -m gpu -n 0 tests/gpu

# `make fuzz N=10000 SEED=3` checks N random programs (tests/differential/fuzzing) in a private
# compile cache and prints a shrunk repro of each failure, then the counts by kind; JOBS=2 splits
# them between two processes (each prints its part's counts).
N ?= 1000
SEED ?= 0
JOBS ?= 1
fuzz: $(VENV)/.installed-test
	cache=$$(mktemp -d) && cd tests/differential && pids= && \
	for part in $$(seq 0 $$(($(JOBS) - 1))); do \
		CDNAJIT_CACHE_DIR=$$cache ../../$(PY) -m fuzzing --n $(N) --seed $(SEED) --part $$part/$(JOBS) & pids="$$pids $$!"; \
	done; \
	status=0; for pid in $$pids; do wait $$pid || status=1; done; rm -rf $$cache; exit $$status

# `make bench BENCH_ARGS="--quick --only W1,W4"` passes options to the runner.
bench: $(VENV)/.installed-bench $(VENV)/.warmed-f32-f64
	$(PY) benchmarks/run.py $(BENCH_ARGS)

clean:
	rm -rf $(VENV) .pytest_cache
