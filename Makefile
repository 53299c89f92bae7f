# gpuaccept: what an operator types. See README.md.
#   make accept      accept this node: tool environment, commissioning playbook on inventories/local, verdict
#   make test        the test suite (what CI runs)
#   make wheelhouse  on a connected machine: every wheel `accept` and `test` need, for air-gapped sites
# Offline: WHEELHOUSE=/path/to/wheelhouse make accept   (pip --no-index --find-links)
PYTHON ?= python3
VENV ?= .venv
WHEELHOUSE ?=
SUITE ?= commission
INVENTORY ?= inventories/local
ANSIBLE_ARGS ?=
export PYTHON VENV WHEELHOUSE

.PHONY: accept test wheelhouse venv clean
accept:
	@scripts/accept.sh $(SUITE) $(INVENTORY) $(ANSIBLE_ARGS)

test:
	@scripts/test.sh

wheelhouse:
	@scripts/wheelhouse.sh $(or $(WHEELHOUSE),wheelhouse)

venv:
	@scripts/venv.sh

clean:
	rm -rf build
