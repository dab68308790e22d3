# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
name: metrics_file_sd
short_description: Prometheus file_sd target lists for a Spark cluster
version_added: 1.0.0
author:
  - sparkops.inference developers (@sparkops)
description:
  - Returns the target lists of Prometheus' file-based service discovery, by job - C(sparkops-vllm) (vLLM's
    C(/metrics) on the head's API port) and C(sparkops-node) (a node exporter on every node) - each target labelled
    with its inventory name (C(sparkops_node)) and its part (C(sparkops_role), C(head) or C(worker)).
  - Write each list as C(<job>.json) where Prometheus reads its C(file_sd_configs).
  - Fails, naming the variable (and the host), on an address that is neither an IP address nor a DNS name, or a port
    out of range.
options:
  _input:
    description:
      - The cluster's nodes, a dict of inventory name to the address Prometheus reaches the node at.
      - An empty address stands for the inventory name. An IPv6 address is written in brackets.
    type: dict
    required: true
  head:
    description: The head's inventory name (its API serves C(/metrics)).
    type: str
    required: true
  vllm_port:
    description: The vLLM API port.
    type: int
    required: true
  node_exporter_port:
    description: The node exporter's port.
    type: int
    default: 9100
  scrape_nodes:
    description: Whether to list the node exporters (the C(sparkops-node) job).
    type: bool
    default: true
  address_var:
    description: The host variable the addresses came from, named in errors.
    type: str
    default: ansible_host
"""

EXAMPLES = r"""
- name: Write the scrape targets
  ansible.builtin.copy:
    content: "{{ item.value | to_nice_json }}\n"
    dest: "/etc/prometheus/file_sd/{{ item.key }}.json"
    mode: "0644"
  loop: >-
    {{ {'spark-head': '10.0.0.21', 'spark-worker1': '10.0.0.22'}
       | sparkops.inference.metrics_file_sd(head='spark-head', vllm_port=8000) | dict2items }}
"""

RETURN = r"""
_value:
  description: Job name to its list of target groups (C(targets), C(labels)), as file_sd reads them.
  type: dict
  sample:
    sparkops-vllm:
      - targets: ["10.0.0.21:8000"]
        labels: {sparkops_node: spark-head, sparkops_role: head}
    sparkops-node:
      - targets: ["10.0.0.21:9100"]
        labels: {sparkops_node: spark-head, sparkops_role: head}
      - targets: ["10.0.0.22:9100"]
        labels: {sparkops_node: spark-worker1, sparkops_role: worker}
"""

import typing as t
from collections.abc import Callable

from ansible.errors import AnsibleFilterError


def metrics_file_sd_filter(
    nodes: t.Any,
    head: t.Any,
    vllm_port: t.Any,
    node_exporter_port: t.Any = 9100,
    scrape_nodes: t.Any = True,
    address_var: t.Any = "ansible_host",
) -> dict[str, list[dict[str, t.Any]]]:
    # Imported when called, not at the top (docs/architecture.md, tests/unit/plugins/filter/test_filter_module_imports.py).
    from ansible_collections.sparkops.inference.plugins.plugin_utils._metrics_config import MetricsConfigError, file_sd

    if not isinstance(scrape_nodes, bool):
        raise AnsibleFilterError(f"sparkops.inference.metrics_file_sd: metrics_node_exporter_scrape must be true or false, got {scrape_nodes!r}")
    names = {"nodes": str(address_var), "vllm_port": "metrics_vllm_port", "node_exporter_port": "metrics_node_exporter_port"}
    try:
        return file_sd(nodes, head, vllm_port, node_exporter_port, scrape_nodes=scrape_nodes, names=names)
    except MetricsConfigError as exc:
        raise AnsibleFilterError(f"sparkops.inference.metrics_file_sd: {exc}") from None


class FilterModule:
    """sparkops.inference Prometheus targets filter."""

    def filters(self) -> dict[str, Callable[..., t.Any]]:
        return {"metrics_file_sd": metrics_file_sd_filter}
