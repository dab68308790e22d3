#!/usr/bin/env bash
# The execution environment's build context: `ansible-builder create` (no image is built: CI reaches no registry),
# then tools/check_ee.py checks the context against ee/, collections/requirements.yml, .collections and galaxy.yml.
set -euo pipefail
cd "$(dirname "$0")/.."
context=$(mktemp -d)
trap 'rm -rf "$context"' EXIT
ansible-builder create -f ee/execution-environment.yml -c "$context" -v 1
python tools/check_ee.py --context "$context"
