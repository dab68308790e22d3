#!/usr/bin/python
# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: recon_report
short_description: Write the reconnaissance report of all nodes as JSON and Markdown
version_added: 1.0.0
description:
  - Writes C(<dest_dir>/<basename>.json) and C(<dest_dir>/<basename>.md) on the host it runs on (the playbook runs it
    once, delegated to the controller) from every node's M(sparkops.inference.node_recon) result and, when given, the
    version drift and model fit verdicts.
  - "The Markdown report has a table of the nodes (host, role, architecture, OS, kernel, driver and CUDA, fabric
    address, interface, state, speed and MTU, RDMA devices, memory total and available, free disk where the model
    goes), a table of versions (a row a component, a column a host, values that differ from the head's marked
    C((differs))), the inference units and containers found on each node, the top memory holders of each node, the
    drift and fit sections, and every node's notes."
  - "The JSON file holds the document: C(schema_version) (V(1)), C(generated_at) (ISO 8601, UTC), C(nodes) (host to
    C(role), C(fabric_ip) and C(recon) as M(sparkops.inference.node_recon) returns it), C(drift) and C(fit) (as given,
    or null); docs/recon.md describes every key."
  - A file is written only when its content changes. C(generated_at) alone does not count as a change; when nothing
    else differs the old files, with their old time, stay, so a second run with the same facts reports no change.
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
options:
  nodes:
    description:
      - Each node by inventory name, a dictionary with C(role) (V(head) or V(worker)), C(fabric_ip) (its
        C(sparkops_fabric_ip)) and C(recon) (the RV(sparkops.inference.node_recon#module:recon) it returned; null or
        missing for a node that could not be described).
    type: dict
    required: true
  dest_dir:
    description:
      - The folder to write the files in; made, with its parents, when missing.
    type: path
    required: true
  basename:
    description:
      - The base name of the files (letters, digits, V(.), V(_) and V(-)).
    type: str
    default: recon
  drift:
    description:
      - The version drift verdict, a dictionary of lists of strings C(problems), C(allowed) and C(unknown), as the
        drift check of the components in RV(sparkops.inference.node_recon#module:recon.versions) gives them.
      - Omitted, the report says drift was not checked.
    type: dict
  fit:
    description:
      - The model fit verdict, free-form; C(fits) (bool), C(problems) and C(warnings) (lists of strings) and
        C(numbers) (a dictionary) are shown when present.
      - Omitted, the report says fit was not checked.
    type: dict
notes:
  - Files are written whole to a temporary file in O(dest_dir), then renamed over the old ones, mode C(0644); they
    hold no secrets.
seealso:
  - module: sparkops.inference.node_recon
author:
  - sparkops.inference developers (@sparkops)
"""

EXAMPLES = r"""
- name: Describe every node
  sparkops.inference.node_recon:
    fabric_ip: "{{ sparkops_fabric_ip }}"
    model_dir: /root/.cache/huggingface/hub
  register: node

- name: Put each node's role, address and description together
  ansible.builtin.set_fact:
    recon_node:
      role: "{{ 'head' if inventory_hostname in groups['spark_head'] else 'worker' }}"
      fabric_ip: "{{ sparkops_fabric_ip }}"
      recon: "{{ node.recon }}"

- name: Write reports/recon.json and reports/recon.md on the controller
  sparkops.inference.recon_report:
    nodes: "{{ dict(ansible_play_hosts | zip(ansible_play_hosts | map('extract', hostvars, 'recon_node'))) }}"
    dest_dir: "{{ playbook_dir }}/../reports"
    drift: {problems: [], allowed: [], unknown: []}
  delegate_to: localhost
  run_once: true
"""

RETURN = r"""
json_path:
  description: The JSON file's path.
  returned: always
  type: str
  sample: /home/me/sparkops/reports/recon.json
markdown_path:
  description: The Markdown file's path.
  returned: always
  type: str
  sample: /home/me/sparkops/reports/recon.md
changed_files:
  description: The paths written (in check mode, that would be written).
  returned: always
  type: list
  elements: str
  sample: [/home/me/sparkops/reports/recon.md]
generated_at:
  description: The document's C(generated_at), the old one when nothing else changed.
  returned: always
  type: str
  sample: "2026-01-31T12:00:00Z"
msg:
  description: What was written.
  returned: always
  type: str
  sample: wrote /home/me/sparkops/reports/recon.json, /home/me/sparkops/reports/recon.md
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.sparkops.inference.plugins.module_utils._recon_report import ReconReportError, build_document, check_basename, plan
from ansible_collections.sparkops.inference.plugins.module_utils._report_files import write_report


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "nodes": {"type": "dict", "required": True},
            "dest_dir": {"type": "path", "required": True},
            "basename": {"type": "str", "default": "recon"},
            "drift": {"type": "dict"},
            "fit": {"type": "dict"},
        },
        supports_check_mode=True,
    )
    p = module.params
    try:
        check_basename(p["basename"])
        document = build_document(p["nodes"], p["drift"], p["fit"])
    except ReconReportError as exc:
        module.fail_json(msg=str(exc))
    result = write_report(module, document, plan)[1]
    module.exit_json(**result)


if __name__ == "__main__":
    main()
