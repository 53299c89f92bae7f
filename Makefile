# gpuaccept: what an operator types. See README.md.
#   make accept      accept this node: tool environment, commissioning playbook on inventories/local, verdict;
#                    its last line says accepted (0), rejected (1), cannot judge (3) or bad input (4), and make
#                    exits 0 after it (docs/exit-status.md; scripts/accept.sh itself exits with the status)
#   make test        the test suite (what CI runs): installs what it needs first (scripts/deps.sh, scripts/venv.sh)
#   make test-quick  for the edit-test loop: ruff, the judge's tests and the recorded runs judged again (under 3 min;
#                    scripts/test-quick.sh); needs the tool environment `make test` made. CI runs all of `make test`
#   make deps        only the Debian packages the tests need (scripts/deps.sh; --check lists the missing ones)
#   make wheelhouse  on a connected machine: every wheel `accept` and `test` need, for air-gapped sites
#   make bundle      on a connected machine: the air-gapped bundle (docs/airgapped.md); BUNDLE=dir (default bundle)
#   make lock        on a connected machine: regenerate requirements/*.txt with every wheel's sha256 from requirements/*.in
# Offline: WHEELHOUSE=/path/to/wheelhouse make accept   (pip --no-index --find-links)
PYTHON ?= python3
VENV ?= .venv
WHEELHOUSE ?=
SUITE ?= commission
INVENTORY ?= inventories/local
ANSIBLE_ARGS ?=
export PYTHON VENV WHEELHOUSE

.PHONY: accept test test-quick deps wheelhouse bundle lock venv clean
accept:  # the status is in the last line: make's own "Error" line would follow it otherwise
	@scripts/accept.sh $(SUITE) $(INVENTORY) $(ANSIBLE_ARGS) || true

test:
	@scripts/test.sh

test-quick:
	@scripts/test-quick.sh

deps:
	@scripts/deps.sh

wheelhouse:
	@scripts/wheelhouse.sh $(or $(WHEELHOUSE),wheelhouse)

bundle:
	@scripts/bundle.sh $(or $(BUNDLE),bundle)

lock:
	@scripts/lock.sh

venv:
	@scripts/venv.sh

clean:
	rm -rf build
