# sparkops.inference: the two commands for a fresh machine are `make demo` and `make test`.
SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c
export PATH := $(CURDIR)/.venv/bin:$(PATH)
export ANSIBLE_COLLECTIONS_PATH := $(CURDIR)/.collections
export ANSIBLE_FORCE_COLOR := false
export PY_COLORS := 0

NODES ?= 2
LAB := .venv/bin/python tests/lab/spark_lab.py

.PHONY: help setup lab-image lab-up lab-down lab-status demo test lint unit sanity molecule bench

help:
	@echo "make demo        lab up ($(NODES) nodes; NODES=N to change), site.yml on inventories/lab, what runs where"
	@echo "make test        every check: lint, sanity, unit tests, build, Molecule scenarios; ends 'N passed, N failed'"
	@echo "make setup       host packages, podman settings, .venv and .collections (idempotent; the others run it)"
	@echo "make lab-up      start the spark lab and write inventories/lab/hosts.yml;  make lab-down  remove it"
	@echo "make docs        each role README's variables table from its meta/argument_specs.yml (make test checks it)"
	@echo "make lint | unit | sanity | molecule   one group of test stages"
	@echo "make bench       every bench of bench/ (docs/benchmarks.md; over an hour, labs of its own); NO_LAB=1 only those"
	@echo "                 needing no lab, BENCH='a b' only those, WRITE=1 each writes its section of docs/benchmarks.md"

setup:
	@bash tools/setup_host.sh
	@bash tools/setup_venv.sh 2> >(grep -v '^WARNING: Location' >&2)

lab-image: setup
	@$(LAB) image

lab-up: setup
	@$(LAB) up --nodes $(NODES)

lab-down: setup
	@$(LAB) down

lab-status: setup
	@$(LAB) status

demo: lab-up
	ansible-playbook site.yml -i inventories/lab
	ansible-playbook playbooks/status.yml -i inventories/lab
	@$(LAB) endpoint --nodes $(NODES)

test: setup
	@python tools/test_stages.py

lint: setup
	@python tools/test_stages.py --only ruff --only mypy --only yamllint --only ansible-lint

unit: setup
	@python tools/test_stages.py --only unit-ansible --only unit

sanity: setup
	@python tools/test_stages.py --only ansible-test-sanity

molecule: setup
	@python tools/test_stages.py --labs

# bench/run_all.py: each bench as docs/benchmarks.md runs it (those needing no lab first; serve_readiness, readiness
# and reboot, last on the demo lab, brought up and removed for it).
bench: setup
	@python bench/run_all.py $(if $(NO_LAB),--no-lab) $(if $(WRITE),--write) $(foreach b,$(BENCH),--only $(b))

# tools/role_docs.py: the variables table of each role's README.md, rendered from its meta/argument_specs.yml; the
# role-docs stage of `make test` fails when one is out of date.
.PHONY: docs
docs: setup
	@python tools/role_docs.py
