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

.PHONY: install sandbox-tools java-tools browser-tools lint docs test test-unit test-others test-integration synth demo bench bench-full agent-report serve clean

install: $(STAMP) sandbox-tools java-tools browser-tools

# The local test builds' sandbox (infra/agentledger/local/sandbox.py): bubblewrap and pasta (Debian's passt),
# installed with apt when missing and this is root; otherwise what to do is said, and serve
# refuses to run builds until it is done (or is given --unsafe-local-builds).
sandbox-tools:
	@if command -v bwrap >/dev/null && command -v pasta >/dev/null; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  echo "installing the build sandbox's tools (bubblewrap, passt)..."; \
	  { DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap passt >/dev/null \
	    || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap passt >/dev/null; }; } \
	    || echo "agentledger: could not install bubblewrap and passt; local test builds will not run until they are"; \
	else \
	  echo "agentledger: local test builds need bubblewrap and passt: run 'sudo apt-get install -y bubblewrap passt'" \
	       "(and serve as root), or start serve with --unsafe-local-builds"; \
	fi

# A Java toolchain for the Maven sample's offline suite (tests/samples/shapes_maven): Debian packages
# Maven's plugins, JUnit 5 and JaCoCo into /usr/share/maven-repo, which stands in for Maven Central.
JAVA_PACKAGES := openjdk-17-jdk-headless maven ant libsurefire-java libmaven-compiler-plugin-java \
                 libmaven-resources-plugin-java junit5 libjacoco-java
java-tools:
	@if command -v mvn >/dev/null && command -v ant >/dev/null && [ -f /usr/share/java/org.jacoco.agent.jar ] \
	   && [ -d /usr/share/maven-repo/org/apache/maven/plugins/maven-surefire-plugin ]; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  echo "installing a Java toolchain for the Maven sample (JDK 17, Maven, JaCoCo; a minute or two)..."; \
	  { DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(JAVA_PACKAGES) >/dev/null \
	    || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(JAVA_PACKAGES) >/dev/null; }; } \
	    || echo "agentledger: could not install $(JAVA_PACKAGES); the Maven sample's test will fail until they are"; \
	else \
	  echo "agentledger: the Maven sample's test needs: sudo apt-get install -y $(JAVA_PACKAGES)"; \
	fi

# A browser for the console's tests (tests/e2e/test_console.py): Debian's chromium, driven by
# Playwright. Playwright's own browser download is never used: it needs more than the registries.
browser-tools:
	@if [ -x /usr/bin/chromium ]; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  echo "installing chromium for the console's browser tests (a minute or two)..."; \
	  { DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null \
	    || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }; } \
	    || echo "agentledger: could not install chromium; the console's browser tests will fail until it is"; \
	else \
	  echo "agentledger: the console's browser tests need: sudo apt-get install -y chromium"; \
	fi

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "agentledger needs Python 3.11 or newer (set PYTHON=...)")'
	@command -v node >/dev/null || { echo "agentledger needs Node.js 18 or newer (the CDK runs on it)"; exit 1; }
	@echo "installing into $(VENV) (first time: a few minutes)..."
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	@test -x $(VENV)/cdk/node_modules/.bin/cdk || npm install --silent --no-fund --no-audit --prefix $(VENV)/cdk aws-cdk@$(CDK_CLI_VERSION)
	@touch $(STAMP)

# ruff (rules in pyproject.toml) over the code and tests, mypy over functions/ and infra/: both at 0 findings.
lint: install
	$(BIN)/ruff check functions infra tests docs
	$(BIN)/mypy

# Every kind of test but the unit tests (test-others) in the foreground, its progress shown; beside
# it, lint, the documentation site and the unit tests (in one process), whose output follows when
# test-others ends. They run niced: test-others is the longest part and keeps both cores busy, and
# they finish in a fraction of its time on what it leaves. Its duration at the end (the install, on
# a fresh clone, not counted).
test: install
	@started=$$(date +%s); checks_log=$$(mktemp); \
	echo "make test: lint, docs and test-unit run beside test-others; their output follows it"; \
	nice -n 15 $(MAKE) --no-print-directory lint docs test-unit UNIT_WORKERS=0 >"$$checks_log" 2>&1 & checks=$$!; \
	$(MAKE) --no-print-directory test-others; others_status=$$?; \
	wait $$checks; checks_status=$$?; \
	echo "---- lint, docs, test-unit ----"; cat "$$checks_log"; rm -f "$$checks_log"; \
	verdict() { [ $$1 = 0 ] && echo passed || echo FAILED; }; \
	status=$$(( others_status || checks_status )); \
	echo "make test: $$(verdict $$status) in $$(( $$(date +%s) - started )) s" \
	     "(lint, docs, test-unit $$(verdict $$checks_status); test-others $$(verdict $$others_status))"; \
	exit $$status

# The documentation site, built strictly into site/: a broken link, a missing page or a setting the
# reference pages (written from the code as the site builds, docs/gen/) cannot describe fails it.
# mkdocs-material and mkdocs-gen-files print notices about MkDocs' own future on every build; they say
# nothing about this site, so they are turned off.
docs: install
	NO_MKDOCS_2_WARNING=1 DISABLE_MKDOCS_2_WARNING=true $(BIN)/python -m mkdocs build --strict

# Integration, infra, reliability and e2e tests: each worker takes whole modules, longest first
# (tests/conftest.py), so what a module's tests share is set up once. Four workers on two cores: most
# of a worker's time is spent waiting for a run or a sandboxed build, not computing.
test-others: install
	$(BIN)/python -m pytest -n 4 --dist loadfile --no-loadscope-reorder -p no:cacheprovider --ignore=tests/unit tests

# Every test under tests/unit, with moto unimportable and the network blocked (tests/offline.py).
UNIT_WORKERS ?= 2
test-unit: install
	$(BIN)/python -m pytest -n $(UNIT_WORKERS) -p tests.offline -p no:cacheprovider tests/unit

# The handlers and the state machine on moto.
test-integration: install
	$(BIN)/python -m pytest -n 2 --dist loadfile --no-loadscope-reorder -p no:cacheprovider tests/integration

synth: install
	$(VENV)/cdk/node_modules/.bin/cdk synth --quiet
	@echo "template: cdk.out/AgentLedgerStack.template.json"

demo: install
	$(BIN)/agentledger demo

serve: install
	$(BIN)/agentledger serve

# Every phase at one commit, at sizes that fit in 20 minutes on two cores; bench-full at the sizes
# the targets name (200 runs at once, 10,000 files), over an hour.
bench: install
	$(BIN)/python -m tests.bench

bench-full: install
	$(BIN)/python -m tests.bench --full

agent-report: install
	$(BIN)/python -m tests.agent_report

clean:
	rm -rf cdk.out .pytest_cache
