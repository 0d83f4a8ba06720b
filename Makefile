# The README's two commands:
#   make demo   a local Kafka, a worker and a generated crawl; prints decisions and host signals
#   make test   every test, including the integration tests against a real Kafka broker
# and for changes:
#   make lint   ruff check (neardup_core, streams, tests, bench) and mypy (neardup_core, streams)
#   make docs   the documentation site from docs/ into site/ (MkDocs, strict: a broken link or anchor fails)
#   make docs-reference   docs/cli.md again from the command parser (a test fails when it is stale)
# Each creates .venv (python3 -m venv) if it is missing and reinstalls the project into it (with the
# test, dev, docs and scrapy extras) whenever pyproject.toml changes. Nothing else needs installing by hand: the
# broker's jars are fetched with Maven on first use (Java 17 and Maven must be on PATH).
#
#   make test PYTEST_ARGS="tests/unit -x"     choose what pytest runs (default: tests)
#   make kafka-start [KAFKA_PORT=9092] [KAFKA_DIR=...]   a broker for your own experiments
#   make kafka-stop  [KAFKA_PORT=9092] [KAFKA_DIR=...]

PYTHON ?= python3
VENV ?= .venv
PYTEST_ARGS ?= tests
KAFKA_PORT ?= 9092
KAFKA_DIR ?=

PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
PIP_FLAGS := --disable-pip-version-check --progress-bar off
KAFKA_WHERE := --port $(KAFKA_PORT) $(if $(KAFKA_DIR),--dir $(KAFKA_DIR))

.PHONY: test lint docs docs-reference demo venv kafka-jars kafka-start kafka-stop kafka-status

test: $(STAMP) kafka-jars
	$(PY) -m pytest -ra $(PYTEST_ARGS)

# both run, so one go shows every finding; fails when either finds something
lint: $(STAMP)
	status=0; \
	$(VENV)/bin/ruff check neardup_core streams tests bench || status=1; \
	$(VENV)/bin/mypy neardup_core streams || status=1; \
	exit $$status

docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --site-dir site

docs-reference: $(STAMP)
	$(PY) -m streams.cli.reference > docs/cli.md.new && mv docs/cli.md.new docs/cli.md

demo: $(STAMP) kafka-jars
	$(VENV)/bin/neardup demo

venv: $(STAMP)

$(PY):
	$(PYTHON) -m venv $(VENV)

$(STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install $(PIP_FLAGS) -e '.[test,dev,docs,scrapy]'
	touch $@

# Fetches the broker's jars into ~/.cache/neardup (a no-op once cached) here rather than inside the first
# integration test. Not fatal: without Java/Maven the broker fixture reports the problem itself.
kafka-jars:
	-@deploy/local-kafka fetch

kafka-start:
	deploy/local-kafka start $(KAFKA_WHERE)

kafka-stop:
	deploy/local-kafka stop $(KAFKA_WHERE)

kafka-status:
	deploy/local-kafka status $(KAFKA_WHERE)
