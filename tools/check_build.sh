#!/usr/bin/env bash
# `ansible-galaxy collection build` makes an artifact without lab files, caches or venvs, and the
# installed artifact resolves its own playbooks and plugins by FQCN.
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
ansible-galaxy collection build --output-path "$work/dist" .
artifact=$(ls "$work"/dist/sparkops-inference-*.tar.gz)
tar -tzf "$artifact" | sed 's#^\./##' | sort > "$work/contents"
echo "check-build: $(wc -l < "$work/contents") entries in $(basename "$artifact")"

forbidden='^(\.lab|\.venv|\.collections|\.ansible|\.cache|\.git|\.ci|\.pytest_cache|\.mypy_cache|\.ruff_cache|tests|molecule|tools|requirements|dist|bench)(/|$)|__pycache__|\.pyc$|^inventories/lab(/|$)|\.tar\.gz$'
if grep -E "$forbidden" "$work/contents"; then
  echo "check-build: the artifact carries the files above (lab, caches, venvs or test material)" >&2
  exit 1
fi
for required in MANIFEST.json FILES.json README.md meta/runtime.yml playbooks/site.yml plugins/modules/cluster_contract.py \
                plugins/action/cluster_contract.py plugins/module_utils/_cluster_contract.py inventories/sparks/hosts.yml; do
  grep -qx "$required" "$work/contents" || { echo "check-build: $required is missing from the artifact" >&2; exit 1; }
done

ansible-galaxy collection install --offline --force --no-deps -p "$work/collections" "$artifact" >/dev/null
ANSIBLE_COLLECTIONS_PATH="$work/collections:$PWD/.collections" ansible-playbook sparkops.inference.site -i inventories/sparks --syntax-check
ANSIBLE_COLLECTIONS_PATH="$work/collections" ansible-doc -t module sparkops.inference.cluster_contract | head -3
