#!/usr/bin/python
# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: status_report
short_description: Write the status report of a running cluster as JSON and Markdown
version_added: 1.0.0
description:
  - Writes C(<dest_dir>/<basename>.json) and C(<dest_dir>/<basename>.md) on the host it runs on (the status playbook
    runs it once, delegated to the controller) from what the playbook read on each node and on the head.
  - "The Markdown report, for people, has a summary (endpoint, liveness probe, units, model, Ray), a table of the
    nodes (role, management and fabric addresses, units active, model snapshot), a table of versions (a value that
    differs from the head's marked C((differs))), a table of units per node (state, enabled, since when, restarts,
    main PID, result), the Ray cluster (nodes, GPUs), the model's commit on each node and its verification, the
    endpoint's readiness with the sample completion and its latency, the liveness probe (installed, its timer, the
    last probe and its age, failed probes in a row, restarts in the last hour, and a loud line when it stopped
    acting), the last health events (journal entries at priority warning or worse, newest first) and every node's
    notes."
  - "The JSON file, for tools, holds C(schema_version) (V(1)), C(generated_at) (ISO 8601, UTC), C(nodes), C(ray),
    C(endpoint), C(liveness), C(model) (C(repo), C(revision), the head's C(commit), C(same_on_every_node),
    C(complete_on_every_node)) and C(health_events) (every node's, merged, newest first); docs/status.md describes
    every key."
  - A file is written only when its content changes. C(generated_at) alone does not count as a change. The sample
    completion's text and latency usually differ from one run to the next, so a report with an endpoint usually
    changes each run; everything else is sorted (hosts, units, Ray nodes, events) so that only what changed on the
    cluster changes the files.
extends_documentation_fragment:
  - sparkops.inference._attributes
attributes:
  check_mode:
    support: full
    details:
      - In check mode nothing is written; C(changed) says whether a file would be.
  diff_mode:
    support: full
    details:
      - The diff is the Markdown report's, before and after.
  idempotent:
    support: full
    details:
      - With the same options; the status playbook's endpoint probe gives new ones each run.
options:
  nodes:
    description:
      - "Each node by inventory name, a dictionary with: C(role) (V(head), V(worker), or null when unknown);
        C(fabric_ip) (its C(sparkops_fabric_ip)); C(management_address) (its C(ansible_host)); C(versions) (the
        RV(sparkops.inference.node_recon#module:recon.versions) it returned, or null); C(units) (the result of
        M(sparkops.inference.unit_status): C(units), C(health_events) and C(notes); null when not read);
        C(model) (C(commit), C(complete), C(checked_at), C(mode) and C(problems) of
        M(sparkops.inference.hf_snapshot), or null when not checked); C(kernel_workarounds) (the content of the
        vllm_serve role's record C(/etc/sparkops/vllm-kernel-workarounds.json), base64 as M(ansible.builtin.slurp)
        returns it, or null when absent: the GB10 workarounds applied and skipped, and why); C(errors) (a list of
        strings, what could not be read on the node and why)."
      - A missing key is null; a node that is null has every key null.
    type: dict
    required: true
  ray:
    description:
      - "The Ray cluster as M(sparkops.inference.ray_cluster_info) saw it: C(address), C(ready), C(ray_version),
        C(alive_nodes), C(total_gpus), C(nodes) (each C(ip), C(hostname), C(alive), C(state), C(is_head), C(gpus)),
        C(missing) and C(error) (why it could not be asked or did not answer)."
      - Omitted or null, the report says Ray was not asked.
      - Ignored with O(backend=mp).
    type: dict
  backend:
    description:
      - "The cluster's vLLM backend, the cluster plan's C(backend) (C(vllm_serve_backend)): with V(mp) there is no Ray
        cluster, and the report says so instead of reporting Ray as not asked."
      - Omitted or null, the report does not say.
    type: str
    choices: [mp, ray]
  endpoint:
    description:
      - "The endpoint's probe (M(sparkops.inference.openai_endpoint)): C(url), C(model), C(ready), C(state),
        C(latency_s), C(sample) (the answer's text, cut to 200 characters), C(sample_source) (V(content) or
        V(reasoning): a reasoning model may answer with its reasoning only, which is healthy), C(finish_reason),
        C(completion_tokens) and C(error) (why it is not ready)."
      - Omitted or null, the report says the endpoint was not asked.
    type: dict
  liveness:
    description:
      - "The vllm_serve role's liveness probe on the head (C(sparkops-vllm-liveness.timer)): C(settings) and C(state),
        the content of its settings file (C(/etc/sparkops/vllm-liveness.json)) and of its state file
        (C(/var/lib/sparkops/vllm-liveness.json)), base64-encoded as M(ansible.builtin.slurp) returns it, each null
        when the file is absent; C(settings_error) and C(state_error), why a file that is there could not be read
        (null otherwise)."
      - "The timer's and its service's states are those of the head's C(units) in O(nodes)."
      - No settings file and no timer on the head, the report says the probe is not installed. A file that is not
        base64-encoded JSON of the right shape is reported unreadable, with why; a key of the wrong type in it is
        reported unknown (null).
      - Omitted or null, the report says the probe was not asked.
    type: dict
  model:
    description:
      - The model the cluster serves, C(repo) (C(sparkops_model_repo)) and C(revision) (C(sparkops_model_revision)).
    type: dict
  dest_dir:
    description:
      - The folder to write the files in; made, with its parents, when missing.
    type: path
    required: true
  basename:
    description:
      - The base name of the files (letters, digits, V(.), V(_) and V(-)).
    type: str
    default: status
notes:
  - Files are written whole to a temporary file in O(dest_dir), then renamed over the old ones, mode C(0644). They
    hold no secrets (no API key; the sample completion's text is in them).
seealso:
  - module: sparkops.inference.unit_status
  - module: sparkops.inference.recon_report
  - module: sparkops.inference.openai_endpoint
  - module: sparkops.inference.ray_cluster_info
author:
  - sparkops.inference developers (@sparkops)
"""

EXAMPLES = r"""
- name: Write reports/status.json and reports/status.md on the controller
  sparkops.inference.status_report:
    nodes:
      spark-head:
        role: head
        fabric_ip: 192.168.200.11
        management_address: 10.0.0.11
        versions: "{{ hostvars['spark-head'].recon.recon.versions }}"
        units: "{{ hostvars['spark-head'].units }}"
        model: {commit: "{{ hostvars['spark-head'].snapshot.commit }}", complete: true, checked_at: "2026-01-31T12:00:00Z", mode: quick}
      spark-worker1:
        role: worker
        fabric_ip: 192.168.200.12
        management_address: 10.0.0.12
        units: "{{ hostvars['spark-worker1'].units }}"
    ray: {address: "192.168.200.11:6379", ready: true, alive_nodes: 2, total_gpus: 2.0}
    endpoint: {url: "http://127.0.0.1:8000", model: qwen3.5-122b, ready: true, latency_s: 0.84, sample: Hello!}
    liveness:
      settings: "{{ liveness_settings.content | default(none) }}"  # slurp of /etc/sparkops/vllm-liveness.json on the head
      state: "{{ liveness_state.content | default(none) }}"  # slurp of /var/lib/sparkops/vllm-liveness.json on the head
    model: {repo: Qwen/Qwen3.5-122B-A10B-FP8, revision: main}
    dest_dir: "{{ playbook_dir }}/../reports"
  delegate_to: localhost
  run_once: true
"""

RETURN = r"""
json_path:
  description: The JSON file's path.
  returned: always
  type: str
  sample: /home/me/sparkops/reports/status.json
markdown_path:
  description: The Markdown file's path.
  returned: always
  type: str
  sample: /home/me/sparkops/reports/status.md
changed_files:
  description: The paths written (in check mode, that would be written).
  returned: always
  type: list
  elements: str
  sample: [/home/me/sparkops/reports/status.json, /home/me/sparkops/reports/status.md]
generated_at:
  description: The document's C(generated_at), the old one when nothing else changed.
  returned: always
  type: str
  sample: "2026-01-31T12:00:00Z"
summary:
  description: The Markdown report's summary lines (endpoint, liveness probe, units, model, Ray), without Markdown emphasis.
  returned: always
  type: list
  elements: str
  sample: ["Endpoint: ready (0.84 s)", "Liveness: last probe ok 12s ago", "Units: 4 of 4 active, 1 run by its timer",
           "Model: 0123456789ab, same on every node", "Ray: 2 node(s) alive, 2 GPU(s)"]
msg:
  description: What was written.
  returned: always
  type: str
  sample: wrote /home/me/sparkops/reports/status.json, /home/me/sparkops/reports/status.md
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.sparkops.inference.plugins.module_utils._report_files import write_report
from ansible_collections.sparkops.inference.plugins.module_utils._status_report import (
    StatusReportError,
    build_document,
    check_basename,
    headline,
    plan,
)


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "nodes": {"type": "dict", "required": True},
            "ray": {"type": "dict"},
            "backend": {"type": "str", "choices": ["mp", "ray"]},
            "endpoint": {"type": "dict"},
            "liveness": {"type": "dict"},
            "model": {"type": "dict"},
            "dest_dir": {"type": "path", "required": True},
            "basename": {"type": "str", "default": "status"},
        },
        supports_check_mode=True,
    )
    p = module.params
    try:
        check_basename(p["basename"])
        document = build_document(p["nodes"], p["ray"], p["endpoint"], p["model"], liveness=p["liveness"], backend=p["backend"])
    except StatusReportError as exc:
        module.fail_json(msg=str(exc))
    files, result = write_report(module, document, plan)
    result["summary"] = [line.removeprefix("- ").replace("**", "").replace("`", "") for line in headline(files.document)]
    module.exit_json(**result)


if __name__ == "__main__":
    main()
