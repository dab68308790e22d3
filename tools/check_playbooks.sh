#!/usr/bin/env bash
# Every playbook parses against the real-hardware example inventory, and tag-scoped runs are possible.
set -euo pipefail
cd "$(dirname "$0")/.."
for playbook in site.yml playbooks/status.yml playbooks/benchmark.yml playbooks/recon.yml playbooks/teardown.yml awx/configure.yml; do
  ansible-playbook -i inventories/sparks "$playbook" --syntax-check
done
tags=$(ansible-playbook -i inventories/sparks site.yml --list-tags)
echo "$tags"
# The preflight must run on every tag-scoped rerun.
grep -q 'TAGS: \[always\]' <<<"$tags" || { echo "check-playbooks: the preflight plays are not tagged 'always'" >&2; exit 1; }
# The example inventory satisfies the contract (the check runs on the controller: no connection).
ansible spark-head -i inventories/sparks -m sparkops.inference.cluster_contract -o
# ...and a broken one is refused, naming the variables.
if out=$(ansible spark-head -i inventories/sparks -m sparkops.inference.cluster_contract -e sparkops_gpus_per_node=2 2>&1); then
  echo "check-playbooks: the contract accepted TP x PP != nodes x GPUs per node" >&2; exit 1
fi
grep -q 'sparkops_gpus_per_node (2)' <<<"$out" || { echo "check-playbooks: the refusal does not name the variable: $out" >&2; exit 1; }
