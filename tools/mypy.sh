#!/usr/bin/env bash
# Type-check the plugins as the package Ansible imports them (ansible_collections.sparkops.inference).
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
cd .collections
mypy --config-file "$repo/.mypy.ini" ansible_collections/sparkops/inference/plugins
cd "$repo/tests/lab"
MYPYPATH="$repo/tools" mypy --config-file "$repo/.mypy.ini" sparklab spark_lab.py
cd "$repo"
# The benches import the collection (.collections) and the lab's sparklab (tests/lab) as they put them on sys.path.
MYPYPATH=.collections:tests/lab:bench:tools mypy --config-file .mypy.ini tools/test_stages.py tools/check_argspecs.py tools/check_ee.py tools/check_galaxy_deps.py tools/check_awx_templates.py tools/awx_survey_rules.py bench/ray_formation.py bench/snapshot_verify.py bench/model_distribution.py bench/serve_readiness.py bench/benchmarks_doc.py
