# Every target installs what it needs: `make demo` and `make test` work on a fresh clone.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
CDK_CLI_VERSION := 2.1148.1
STAMP := $(VENV)/.installed
# jsii silences its end-of-life banner only when this names the running Node major version.
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION := $(shell node -p "process.versions.node.split('.')[0]" 2>/dev/null)
export AWS_DEFAULT_REGION ?= us-east-1

.PHONY: install test test-unit test-integration synth demo bench agent-report serve clean

install: $(STAMP)

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "agentledger needs Python 3.11 or newer (set PYTHON=...)")'
	@command -v node >/dev/null || { echo "agentledger needs Node.js 18 or newer (the CDK runs on it)"; exit 1; }
	@echo "installing into $(VENV) (first time: a few minutes)..."
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	@test -x $(VENV)/cdk/node_modules/.bin/cdk || npm install --silent --no-fund --no-audit --prefix $(VENV)/cdk aws-cdk@$(CDK_CLI_VERSION)
	@touch $(STAMP)

# The unit tests first, as test-unit runs them; then every other kind.
test: test-unit
	$(BIN)/python -m pytest -n 2 --dist loadgroup -p no:cacheprovider --ignore=tests/unit tests

# Every test under tests/unit, with moto unimportable and the network blocked (tests/offline.py).
test-unit: install
	$(BIN)/python -m pytest -n 2 -p tests.offline -p no:cacheprovider tests/unit

# The handlers and the state machine on moto.
test-integration: install
	$(BIN)/python -m pytest -n 2 --dist loadgroup -p no:cacheprovider tests/integration

synth: install
	$(VENV)/cdk/node_modules/.bin/cdk synth --quiet
	@echo "template: cdk.out/AgentLedgerStack.template.json"

demo: install
	$(BIN)/agentledger demo

serve: install
	$(BIN)/agentledger serve

bench: install
	$(BIN)/python -m tests.bench

agent-report: install
	$(BIN)/python -m tests.agent_report

clean:
	rm -rf cdk.out .pytest_cache
