#!/usr/bin/env bash
# Type-check every Python program of the collection but the tests' own code (tests/unit, molecule/*/tests):
# the plugins, the lab, its stand-ins, the benches, the tools, and the extensionless programs (the scripts the roles
# install on the nodes, the lab's stand-in commands; ruff.toml's extend-include lists the same files).
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
config=$repo/.mypy.ini
# The plugins as the package Ansible imports them (ansible_collections.sparkops.inference).
cd .collections
mypy --config-file "$config" ansible_collections/sparkops/inference/plugins
cd "$repo/tests/lab"
MYPYPATH="$repo/tools" mypy --config-file "$config" sparklab spark_lab.py
cd "$repo"
# The benches import the collection (.collections) and the lab's sparklab (tests/lab) as they put them on sys.path.
MYPYPATH=.collections:tests/lab:bench:tools mypy --config-file "$config" bench/*.py tools/*.py tests/gpu/*.py
# Each extensionless program is a __main__ of its own: one mypy run each (they share mypy's cache). The role scripts
# import the collection's module utils (installed beside them on the nodes).
python tools/python_files.py --check
mapfile -t programs < <(python tools/python_files.py --extensionless)
for program in "${programs[@]}"; do
  MYPYPATH=.collections mypy --config-file "$config" "$program"
done
