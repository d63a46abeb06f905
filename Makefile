# Every target bootstraps .venv and node_modules from the lock files (idempotent, stamp files),
# then does its job. Nothing else needs installing on a fresh machine.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
CDK := node_modules/.bin/cdk
# The scanners (checkov) live in their own venv: their pins must not move the library's.
SCAN_VENV := .venv-scan
CDK_FLAGS := --no-notices --no-path-metadata --no-version-reporting

export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION := 20
export CDK_DISABLE_CLI_TELEMETRY := true
# Bytecode caches (git-ignored __pycache__) stay on even where the environment turns them off:
# pytest keeps its assertion-rewritten test modules there and every `mlcc` a test runs skips
# compiling (about 5 s of each warm `make test`).
unexport PYTHONDONTWRITEBYTECODE

.PHONY: bootstrap scan-bootstrap synth test lint bench clean

bootstrap: $(VENV)/.installed node_modules/.installed

scan-bootstrap: $(SCAN_VENV)/.installed

$(VENV)/.installed: requirements.lock pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --disable-pip-version-check -q -r requirements.lock
	$(BIN)/pip install --disable-pip-version-check -q --no-deps --no-build-isolation -e .
	touch $@

$(SCAN_VENV)/.installed: requirements-scan.lock
	test -x $(SCAN_VENV)/bin/python || $(PYTHON) -m venv $(SCAN_VENV)
	$(SCAN_VENV)/bin/pip install --disable-pip-version-check -q -r requirements-scan.lock
	touch $@

node_modules/.installed: package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	touch $@

# The main job: every CDK stack to cdk.out/ (offline, no AWS credentials) and every
# reference chart to dist/. FAST=1: the edit loop's synth, without CDK's built-in
# CloudFormation template validation (cdk synth --no-validation; README, "Fast synth").
synth: bootstrap
	$(CDK) synth $(CDK_FLAGS) $(if $(FAST),--no-validation) --quiet
	$(BIN)/mlcc dashboard -o dist/grafana-dashboard.json
	@ls cdk.out/*.template.json dist/*.k8s.yaml 2>/dev/null || true

lint: bootstrap
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

# -n auto: one pytest worker per core (pytest-xdist); the CDK synths run in node beside them.
test: bootstrap scan-bootstrap lint
	$(BIN)/pytest -n auto

# QUICK=1: the short run (benchmarks/run.py --quick), a few minutes.
bench: bootstrap
	$(BIN)/python benchmarks/run.py $(if $(QUICK),--quick)

clean:
	rm -rf cdk.out dist .pytest_cache .mypy_cache .ruff_cache
