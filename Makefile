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

# Node.js: jsii (the runtime of aws-cdk-lib, cdk8s and cdk-nag) prints a red banner at every
# start on a release past its support: Node 20 since 2026-10-30 (end-of-life 2026-04-30 plus
# jsii's six months), Node 22 from 2027-10-30, Node 24 from 2028-10-30 (jsii 1.142.0's table
# of releases; https://aws.github.io/jsii/user-guides/lib-user). On 22 or 24 there is no banner
# and nothing is set. This repository is tested on Node 20: there make says so once and
# silences the banner it would otherwise print once per Python process. Older releases are
# refused (package.json "engines": >=20).
NODE_MAJOR ?= $(shell node -p 'process.versions.node.split(".")[0]' 2>/dev/null)
NODE_TESTED := 20
ifeq ($(NODE_MAJOR),)
$(error mlcc: node is not on PATH; install Node.js 22 or 24 (README, Quick start))
else ifeq ($(shell test $(NODE_MAJOR) -lt $(NODE_TESTED) && echo old),old)
$(error mlcc: Node.js $(NODE_MAJOR) is too old: the CDK app needs Node.js 20 or later (22 or 24 recommended; README, Quick start))
else ifeq ($(NODE_MAJOR),$(NODE_TESTED))
# A note, not a warning: $(warning) would prefix it with the Makefile's name and line.
$(shell printf '%s\n' "mlcc: note: Node.js 20 is past its end of life (2026-04-30) and jsii's support (2026-10-30); it is what this repository is tested on, so make silences jsii's end-of-life banner (JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION=20). Node.js 22 or 24 runs without it." >&2)
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION := $(NODE_TESTED)
endif
export CDK_DISABLE_CLI_TELEMETRY := true
# Bytecode caches (git-ignored __pycache__) stay on even where the environment turns them off:
# pytest keeps its assertion-rewritten test modules there and every `mlcc` a test runs skips
# compiling (about 5 s of each warm `make test`).
unexport PYTHONDONTWRITEBYTECODE

.PHONY: bootstrap stream-bootstrap scan-bootstrap test-debs synth deploy test lint docs bench regen clean node-env

bootstrap: $(VENV)/.installed node_modules/.installed

# The streaming-load test's torch and Run:ai streamer (pyproject's stream-test extra, about
# 800 MiB): make test installs them into .venv, make synth never does.
stream-bootstrap: $(VENV)/.stream-installed

scan-bootstrap: $(SCAN_VENV)/.installed

$(VENV)/.installed: requirements.lock pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --disable-pip-version-check -q -r requirements.lock
	$(BIN)/pip install --disable-pip-version-check -q --no-deps --no-build-isolation -e .
	touch $@

# -c requirements.lock: the extra never moves a version the library's lock pins.
$(VENV)/.stream-installed: requirements-stream-test.lock $(VENV)/.installed
	$(BIN)/pip install --disable-pip-version-check -q -r requirements-stream-test.lock -c requirements.lock
	touch $@

$(SCAN_VENV)/.installed: requirements-scan.lock
	test -x $(SCAN_VENV)/bin/python || $(PYTHON) -m venv $(SCAN_VENV)
	$(SCAN_VENV)/bin/pip install --disable-pip-version-check -q -r requirements-scan.lock
	touch $@

# Debian packages whose real programs the tests run, as package:command pairs: promtool (from
# prometheus) parses and evaluates every rendered PromQL query (tests/core/serving/test_promql.py); chromium
# opens the built docs site headless (tests/project/test_docs_site.py). Installed where the command is
# missing (CI: a fresh Debian machine, as root); where apt cannot install them, make says so and
# the tests that need them fail or skip, naming the package.
TEST_DEBS := prometheus:promtool chromium:chromium
test-debs:
	@missing=""; for pair in $(TEST_DEBS); do command -v "$${pair##*:}" >/dev/null || missing="$$missing $${pair%%:*}"; done; \
	if [ -n "$$missing" ]; then \
	  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing >/dev/null; } \
	  || echo "mlcc: note: could not install$$missing from apt; the tests that run them skip" >&2; \
	fi

node_modules/.installed: package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	touch $@

# The main job: every CDK stack to cdk.out/ (offline, no AWS credentials) and every
# reference chart to dist/. FAST=1: the edit loop's synth, without CDK's built-in
# CloudFormation template validation (cdk synth --no-validation; README, "Fast synth").
# REFERENCE=1: the reference set instead of the default app (examples/reference-context.json,
# each key passed as -c KEY=JSON): what the tests and the stack histories synthesise.
REFERENCE_CONTEXT = $(shell $(PYTHON) -c 'import json; d = json.load(open("examples/reference-context.json")); print(" ".join("-c \x27%s=%s\x27" % (k, v if isinstance(v, str) else json.dumps(v, separators=(",", ":"))) for k, v in d.items()))')

synth: bootstrap
	$(CDK) synth $(CDK_FLAGS) $(if $(FAST),--no-validation) $(if $(REFERENCE),$(REFERENCE_CONTEXT)) --quiet
	$(BIN)/mlcc dashboard -o dist/grafana-dashboard.json
	@ls cdk.out/*.template.json dist/*.k8s.yaml 2>/dev/null || true

# The deploy path: synthesise, check the account with `mlcc preflight` (read-only calls; a
# blocker stops here with exit 1, before any stack starts), then deploy every stack.
# REFERENCE=1 as in synth: the same context for all three.
deploy: synth
	$(BIN)/mlcc preflight $(if $(REFERENCE),$(REFERENCE_CONTEXT))
	$(CDK) deploy --all $(CDK_FLAGS) $(if $(REFERENCE),$(REFERENCE_CONTEXT))

lint: bootstrap
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

# -n auto: one pytest worker per core (pytest-xdist); the CDK synths run in node beside them.
test: bootstrap stream-bootstrap scan-bootstrap test-debs lint
	$(BIN)/pytest -n auto

# The docs site from docs/ into site/ (mkdocs.yml; strict: a broken link, a nav entry without
# its file or a missing Python name fails). The reference pages are generated into the build
# (tools/docs_hooks.py); docs/contributing/docs-site.md says how.
docs: bootstrap
	$(BIN)/mkdocs build --strict --clean

# QUICK=1: the short run (benchmarks/run.py --quick), a few minutes.
bench: bootstrap
	$(BIN)/python benchmarks/run.py $(if $(QUICK),--quick)

# Every file generated from this repository, rewritten in one command (.gitattributes marks
# the generated files). The tool of each:
#   mlcc_constructs/data/deployment-spec.schema.json and spec-flags.json
#                                                tools/spec_schema.py (from the spec dataclasses)
#   mlcc_constructs/data/grafana-dashboard.json  mlcc dashboard (the built-in engines only)
#   benchmarks/cold_start.json                   mlcc plan of examples/reference.yaml
#                                                (benchmarks/cold_start.py)
#   snapshots/test_*/                            syrupy: pytest --snapshot-update of the test
#                                                module of each folder
# Not rewritten here, though generated: the stack histories (snapshots/<stack>/): each step is
# a reviewed declaration, written with tools/stack_step.py after reading its diff, never
# regenerated; the recorded engine facts (mlcc_constructs/data/engine_parsers/,
# tests/engine_parsers/): read from an engine release's wheel (tools/engine_parser_facts.py);
# benchmarks/results.json: make bench, a measurement of the machine it runs on.
SNAPSHOT_TESTS = $(foreach s,$(notdir $(wildcard snapshots/test_*)),$(wildcard tests/*/$(s).py tests/*/*/$(s).py))

regen: bootstrap
	$(BIN)/python tools/spec_schema.py
	MLCC_ENGINE_PATH= $(BIN)/mlcc dashboard -o mlcc_constructs/data/grafana-dashboard.json
	$(BIN)/python -c 'from benchmarks.cold_start import PLAN_OUT, cold_start_plans; cold_start_plans(PLAN_OUT)'
	$(BIN)/pytest -n auto --snapshot-update $(SNAPSHOT_TESTS)

clean:
	rm -rf cdk.out dist site .pytest_cache .mypy_cache .ruff_cache

# What make exports for jsii on this Node release (tests/project/test_first_use.py).
node-env:
	@echo "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION=$${JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION-}"
