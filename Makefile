# The two commands of the README: `make demo` and `make test`.
# Both create .venv/ from requirements.lock on first use.

PYTHON ?= python3.11
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
SDC    := $(BIN)/sdc
DBT    := $(BIN)/dbt
# The demo warehouse is its own dbt project (demo/) that uses this package by local path; dbt reads its
# profiles.yml from there; no state in the home directory.
DEMO   := demo
export DBT_SEND_ANONYMOUS_USAGE_STATS := False
# MkDocs 1.x prints a notice about a 2.0 on every build
export NO_MKDOCS_2_WARNING := 1

# The demo's perturbation table (documented in README.md; tests check the committed seed against it).
PTABLE_ARGS := --D 5 --V 3 --js 2 --pstay 0.5
# The demo's magnitude ptable: rows 1 and 5 as tau-Argus's test ptable ptab_savings_all, and a small-cells part
# for the separation point (demo/dbt_project.yml: var sdc_magnitude_params)
NUMS_PTABLE_ARGS := --table nums --D 5 --V 1 --step 2
NUMS_SMALL_ARGS  := --table nums --D 5 --V 1 --step 5 --icat 1,3,5 --optim 4,1,1 --type small_cells

.PHONY: demo test test-quick bench venv lock clean browser docs

venv: $(STAMP)

$(STAMP): requirements.lock pyproject.toml
	@command -v $(PYTHON) >/dev/null || { echo "error: $(PYTHON) not found (set PYTHON=...)" >&2; exit 2; }
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check -r requirements.lock
	$(BIN)/pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e .
	touch $@

# Demo record keys are keyed by id with this published demo secret, so everyone gets the same numbers.
# Production keys come from a secret kept out of the repository (or from key mode random).
demo: export SDC_KEY_SECRET := sdc-demo-secret-not-for-production
demo: export DBT_PROFILES_DIR := $(CURDIR)/$(DEMO)
demo: export SDC_DUCKDB_PATH := $(CURDIR)/warehouse/sdc.duckdb
demo: $(STAMP)
	@mkdir -p warehouse/demo
	$(SDC) ptable $(PTABLE_ARGS) --out $(DEMO)/seeds/sdc_ptable.csv --plot warehouse/sdc_ptable.png
	$(SDC) ptable $(NUMS_PTABLE_ARGS) --out $(DEMO)/seeds/sdc_nums_ptable.csv
	$(SDC) ptable $(NUMS_SMALL_ARGS) --add-to $(DEMO)/seeds/sdc_nums_ptable.csv --out $(DEMO)/seeds/sdc_nums_ptable.csv
	$(SDC) demo generate --out warehouse/demo/students.parquet --enterprises warehouse/demo/enterprises.parquet
	$(SDC) load --db warehouse/sdc.duckdb --input warehouse/demo/students.parquet --table students \
		--id id --key-mode keyed --allow-demo-secret --config python/sdc/demo/facts.yml
	$(SDC) load --db warehouse/sdc.duckdb --input warehouse/demo/enterprises.parquet --table enterprises \
		--id id --key-mode keyed --allow-demo-secret
	cd $(DEMO) && ../$(DBT) deps --quiet && ../$(DBT) build --quiet
	$(SDC) microaggregate --db warehouse/sdc.duckdb --table raw.students --column einkommen --k 3 \
		--method optimal --id id --out-table microdata.students
	$(SDC) publish --db warehouse/sdc.duckdb --project-dir $(DEMO) --out warehouse/publication.duckdb --parquet warehouse/publication
	$(SDC) report --publication warehouse/publication.duckdb --ledger warehouse/sdc_ledger.duckdb --out warehouse/release_report.html
	$(SDC) demo report --db warehouse/sdc.duckdb

# One pytest worker per core (pytest-xdist), a test module per worker at a time: its module fixtures (a dbt build,
# a Spark Connect server) are made once. tests/conftest.py starts the longest modules first.
PYTEST_PARALLEL := -n auto --dist loadfile --no-loadscope-reorder

test: $(STAMP) browser
	$(BIN)/python -m pytest -q $(PYTEST_PARALLEL) --durations=25

# The release report's test opens it in Debian's Chromium: installed here when missing (as root, as CI runs).
browser:
	@command -v chromium >/dev/null || { [ "$$(id -u)" = 0 ] && apt-get update -qq \
		&& DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; } \
		|| { echo "error: the browser tests need Chromium: apt-get install chromium (as root)" >&2; exit 2; }

# The DuckDB suite alone: no PostgreSQL server, no JVM.
test-quick: $(STAMP)
	$(BIN)/python -m pytest -q $(PYTEST_PARALLEL) -m "not postgres and not spark"

# The documentation site: the reference pages generated from the code (docs/reference/, not committed), then
# MkDocs in strict mode, which fails on a broken link, a missing page or a page left out of the nav.
docs: $(STAMP)
	$(BIN)/python docs/gen_reference.py docs/reference
	$(BIN)/mkdocs build --strict --site-dir site

bench: $(STAMP)
	$(BIN)/python bench/ptable_bench.py

# Re-resolve the pinned versions (needs the package index).
lock:
	rm -rf /tmp/sdc-lock-venv && $(PYTHON) -m venv /tmp/sdc-lock-venv
	/tmp/sdc-lock-venv/bin/pip install --quiet "setuptools==80.9.0" "dbt-core~=1.11.0" "dbt-duckdb~=1.11.0" "dbt-postgres~=1.11.0" "dbt-spark[session]~=1.11.0" "pyspark[connect]" "duckdb~=2.0" numpy scipy highspy matplotlib pyyaml pandas pyarrow sqlglot pytest pytest-xdist hypothesis "mkdocs~=1.6" "mkdocs-material~=9.8"
	{ head -2 requirements.lock; /tmp/sdc-lock-venv/bin/pip freeze; echo "setuptools==80.9.0"; } > requirements.lock.new && mv requirements.lock.new requirements.lock

clean:
	rm -rf $(VENV) site target logs warehouse .pytest_cache $(DEMO)/target $(DEMO)/logs $(DEMO)/dbt_packages
