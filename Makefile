# One-command set-up: `make demo` runs the main job (wordcount on the local target),
# `make test` runs the test suite. Both create the virtual environment when missing.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test check durations lint lambda-site checkov awscli apt-tools chromium test-aws-all test-gcp-all conformance corpus-stats campaign campaign-plans conformance-plans explore mutants module-docs bench clean

# recipe lines silenced and pip's output on stderr: `make demo` prints only the JSON on stdout
$(STAMP): pyproject.toml setup.py
	@echo "installing unumctl and its dependencies into $(VENV) (once; a few minutes)" >&2
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV) >&2
	@$(BIN)/python -m pip install -q --upgrade pip >&2
	@$(BIN)/python -m pip install -q -e '.[test,aws,gcp]' >&2
	@touch $(STAMP)

demo: $(STAMP)
	@$(BIN)/unumctl invoke examples/wordcount --data examples/wordcount/input.json

test: $(STAMP) lint apt-tools checkov awscli lambda-site
	UNUMCTL_REQUIRE_AWSCLI=1 $(BIN)/python -m pytest -q --durations=15

# the fast tier (docs/testing.md): the lint gates and every test not marked `slow` (no
# moto_server, GCP emulators, terraform, browser, campaign or subprocess platform), the inner loop
check: $(STAMP) lint lambda-site
	$(BIN)/python -m pytest -q -m "not slow" --durations=10

# the whole suite as `make test` runs it, with a JUnit report, and the durations record of
# docs/testing.md written from it (tools/suite_durations.py); pytest's exit status is kept
durations: $(STAMP) lint apt-tools checkov awscli lambda-site
	UNUMCTL_REQUIRE_AWSCLI=1 $(BIN)/python -m pytest -q --junitxml=.pytest-report.xml; status=$$?; \
	$(BIN)/python tools/suite_durations.py .pytest-report.xml --replace --note "$$(nproc) cores, load $$(cut -d' ' -f1-3 /proc/loadavg) at the end"; \
	exit $$status

# the lint and type gates, configured in pyproject.toml ([tool.ruff], [tool.mypy]): `ruff check`
# (never `ruff format`) and mypy on runtime/ and unumctl/; each fails on any finding
lint: $(STAMP)
	$(BIN)/ruff check runtime unumctl
	$(BIN)/mypy

# the runtime's requirements (runtime/requirements.txt) installed for Lambda into the cache
# ~/.cache/unumctl/lambda-site (or $UNUMCTL_CACHE) for every runtime/architecture the tests
# package, through unumctl's own packager: pip needs PyPI, which no test may reach (the egress
# guard, docs/testing.md). Quick when already filled.
lambda-site: $(STAMP)
	$(BIN)/python tools/lambda_site.py

# checkov on the rendered AWS and GCP Terraform of every example, compared with
# terraform/checkov-accepted.yaml (docs/security.md); checkov lives in its own venv.
# A tool venv .venv-<tool> is made from its pinned tools/<tool>-requirements.txt.
.venv-%/.installed: tools/%-requirements.txt
	test -x .venv-$*/bin/python || $(PYTHON) -m venv .venv-$*
	.venv-$*/bin/python -m pip install -q -r $<
	touch $@

CHECKOV_VENV := .venv-checkov
CHECKOV_STAMP := $(CHECKOV_VENV)/.installed

checkov: $(STAMP) $(CHECKOV_STAMP)
	$(BIN)/python tools/checkov_check.py --checkov $(CHECKOV_VENV)/bin/checkov

# the AWS CLI v1 for tests/unumctl/serve/test_serve.py (`aws stepfunctions --endpoint-url` against `unumctl
# serve`), in its own venv so that the project's boto3/botocore stay as they are; under `make
# test` the test fails (UNUMCTL_REQUIRE_AWSCLI=1) instead of skipping when it is missing.
AWSCLI_VENV := .venv-awscli
AWSCLI_STAMP := $(AWSCLI_VENV)/.installed

awscli: $(AWSCLI_STAMP)

# Debian's chromium for tests/unumctl/observe/test_trace.py (the trace page in a real headless
# browser): installed with apt-get when missing and we are root (or have sudo without a
# password); when that fails the test skips and says why.
# Debian's graphviz for tests/unumctl/test_graph.py (Graphviz draws `unumctl graph --format dot`
# output), the same way
APT_TOOLS := chromium:chromium:tests/unumctl/observe/test_trace.py graphviz:dot:tests/unumctl/test_graph.py

apt-tools:
	@for spec in $(APT_TOOLS); do \
	  pkg=$${spec%%:*}; rest=$${spec#*:}; cmd=$${rest%%:*}; test=$${rest#*:}; \
	  command -v $$cmd >/dev/null 2>&1 || { \
	    SUDO=; [ "$$(id -u)" = 0 ] || SUDO="sudo -n"; \
	    command -v apt-get >/dev/null 2>&1 && \
	    { $$SUDO apt-get install -y -q $$pkg >/dev/null 2>&1 || \
	      { $$SUDO apt-get update -q >/dev/null 2>&1 && $$SUDO apt-get install -y -q $$pkg >/dev/null 2>&1; }; } || \
	    echo "make: could not install $$pkg (a test in $$test will skip)"; }; \
	done

chromium: apt-tools

test-aws-all: $(STAMP) lambda-site
	$(BIN)/python -m pytest -q tests/aws --aws-all-examples

test-gcp-all: $(STAMP) lambda-site
	$(BIN)/python -m pytest -q tests/gcp --gcp-all-examples

conformance: $(STAMP)
	$(BIN)/python tools/asl_conformance.py ../shared/asl-conformance
	$(BIN)/python tools/asl_conformance.py ../shared/asl-conformance-jsonata

# both corpora with every fusible compiled Task chain fused (issue 25, docs/fusion.md)
conformance-plans: $(STAMP)
	$(BIN)/python tools/asl_conformance.py ../shared/asl-conformance --fuse
	$(BIN)/python tools/asl_conformance.py ../shared/asl-conformance-jsonata --fuse

# the public state-machine corpus (index tests/asl_corpus/corpus.json, definitions in
# ~/.cache/unumctl/asl-corpus or $UNUM_ASL_CORPUS): how many compile and run, the refusals by
# reason; exit 1 when an outcome differs from corpus.json or a definition is missing (its README)
corpus-stats: $(STAMP)
	$(BIN)/python tools/asl_corpus_stats.py

campaign: $(STAMP)
	$(BIN)/python tools/fault_campaign.py --runs 200

# the campaign with the plans unumctl tune chose (docs/fusion.md) applied to their examples
campaign-plans: $(STAMP)
	$(BIN)/python tools/fault_campaign.py --runs 200 --plans tools/campaign_plans --examples iot-pipeline,text-processing,wordcount,iot-pipeline-sfn,text-processing-sfn

explore: $(STAMP)
	$(BIN)/python tools/explore.py --budget 1500 --seconds 45
	$(BIN)/python -m tools.explorer.workflows.window --budget 1000

# the engine mutants of tools/explorer/mutants against the explorer and their test files
# (docs/explorer.md "Mutants"); exit 1 when a user-visible mutant is not caught
mutants: $(STAMP)
	$(BIN)/python tools/explore.py --mutants --budget 300 --seconds 30 --mutant-tests

# README input/output tables of terraform/modules/* from their .tf files (tests/unumctl/render/test_modules.py
# fails when they are out of date)
module-docs: $(STAMP)
	$(BIN)/python tools/tf_module_docs.py

# the local benchmarks, their numbers printed and written to bench/results/latest.json; then
# `python bench/compare.py` checks them against bench/baseline.json (by hand, not in make test)
bench: $(STAMP)
	$(BIN)/python bench/run_all.py --out bench/results/latest.json

clean:
	rm -rf $(VENV) $(CHECKOV_VENV) $(AWSCLI_VENV) examples/*/.unum
