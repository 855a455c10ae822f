# torch2ms: two entry points on a fresh machine — `make demo` and `make test`.
PYTHON ?= python3.11
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(VENV)/bin/pip
STAMP  := $(VENV)/.installed-stamp
# pytest-xdist workers: CI has 2 cores.
WORKERS ?= 2

BENCH_STAMP := $(VENV)/.bench-stamp
# The real-code kit (../shared/realcode): public PyTorch code, converted and compared model by model.
REALCODE ?= ../shared/realcode

.PHONY: venv demo test test-full test-fast lint mypy-baseline bench fuzz fuzz-train realcode i18n clean

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV) || python3 -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q -e '.[frameworks,test,lint]'
	@touch $(STAMP)

venv: $(STAMP)

demo: $(STAMP)
	@bash examples/demo.sh

# Each differential / compare-train matrix runs its covering slice here (every value of every axis, fixed
# seed: tests/matrix_support.py); `make test-full` runs every case. --dist loadgroup keeps the KB
# differential's GRAPH_MODE batches on one worker each (one compile a batch). Cost per file: bench/test_time.md.
test: $(STAMP)
	$(PY) -m pytest -n $(WORKERS) --dist loadgroup -q -p no:cacheprovider --durations=15 --timeout=1500

test-full: $(STAMP)
	TORCH2MS_FULL_MATRIX=1 $(PY) -m pytest -n $(WORKERS) --dist loadgroup -q -p no:cacheprovider --timeout=1500

# Static tests only (no framework imports): quick feedback while editing.
test-fast: $(STAMP)
	$(PY) -m pytest -q -p no:cacheprovider -m "not differential and not slow"

# ruff (lint + format) on the project's code; mypy on src/ against mypy-baseline.txt: new errors fail,
# and so do fixed ones until `make mypy-baseline` records them (the baseline only shrinks).
lint: $(STAMP)
	$(VENV)/bin/ruff check src tests bench
	$(VENV)/bin/ruff format --check src tests bench
	$(VENV)/bin/mypy | $(VENV)/bin/mypy-baseline filter --no-colors --hide-stats

mypy-baseline: $(STAMP)
	$(VENV)/bin/mypy | $(VENV)/bin/mypy-baseline sync

$(BENCH_STAMP): $(STAMP) pyproject.toml
	$(PIP) install -q -e '.[frameworks,test,lint,bench]'
	@touch $(BENCH_STAMP)

bench: $(BENCH_STAMP)
	$(PY) bench/run.py

# The convert fuzzer's long run (make test runs 240 cases with a fixed seed): FUZZ_CASES files from
# FUZZ_SEED, failures grouped by property and cause, failing cases kept in build/fuzz/.
FUZZ_CASES ?= 3000
FUZZ_SEED ?= 1
fuzz: $(STAMP)
	$(PY) tests/fuzz/fuzz_convert.py --cases $(FUZZ_CASES) --seed $(FUZZ_SEED) -j $(WORKERS) --keep build/fuzz

# The training-idiom campaign (issue 22; make test runs a fixed-seed slice): FUZZ_TRAIN_CASES generated
# training scripts, one idiom varied at a time, each converted and compared with compare-train (SAME);
# failures grouped by idiom and cause (known classes by name), failing cases kept in build/fuzz-train/.
FUZZ_TRAIN_CASES ?= 500
FUZZ_TRAIN_SEED ?= 1
FUZZ_TRAIN_JOBS ?= $(WORKERS)
fuzz-train: $(STAMP)
	nice $(PY) tests/fuzz/fuzz_train.py --cases $(FUZZ_TRAIN_CASES) --seed $(FUZZ_TRAIN_SEED) -j $(FUZZ_TRAIN_JOBS) \
		--keep build/fuzz-train --json build/fuzz-train/results.json

# Messages: extract every _()/ngettext()/N_() of src/ with Babel, merge them into the Chinese catalog
# (new ones come in untranslated: tests/test_i18n.py fails until they are translated), compile the .mo.
LOCALES := src/torch2ms/locale
i18n: $(STAMP)
	@mkdir -p build
	$(VENV)/bin/pybabel extract -F babel.cfg --no-location --sort-output -c TRANSLATORS: --project torch2ms -o build/torch2ms.pot src
	$(VENV)/bin/pybabel update -i build/torch2ms.pot -d $(LOCALES) -D torch2ms --no-fuzzy-matching --ignore-obsolete
	$(VENV)/bin/pybabel compile -d $(LOCALES) -D torch2ms --statistics

# The whole kit: every corpus repository converted, every model compared in PyNative and GRAPH_MODE
# (10-25 min on 2 cores). Its report: the headline on the last line, summary.md and results.json in OUT.
realcode: $(STAMP)
	@test -f $(REALCODE)/eval_realcode.py || { echo "the real-code kit is not at $(REALCODE) (REALCODE=...)"; exit 2; }
	@# what the kit's training scripts import besides the frameworks (else each counts as MISSING_DEP)
	@test ! -f $(REALCODE)/requirements-scripts.txt || $(PIP) install -q -r $(REALCODE)/requirements-scripts.txt 'numpy<2'
	$(PY) $(REALCODE)/eval_realcode.py --project . --jobs $(WORKERS) $(if $(OUT),--out $(OUT),) \
		--weights-cmd '{converter} weights {pth} -o {ckpt} --project {converted_root}'  # renames by the layer map

clean:
	rm -rf $(VENV) build src/*.egg-info
