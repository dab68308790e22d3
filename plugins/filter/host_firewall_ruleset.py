# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
name: host_firewall_ruleset
short_description: The nftables ruleset of a Spark's host firewall
version_added: 1.0.0
author:
  - sparkops.inference developers (@sparkops)
description:
  - Returns an nft file with one table of its own (C(inet sparkops_firewall)), replaced atomically when loaded
    (C(nft -f)), whose input chain admits localhost, answers to what the node opened, everything from the cluster's
    nodes (their fabric addresses), ICMP, DHCP answers, ssh from anyone, the vLLM API port from O(client_networks)
    only, O(open_ports) from anyone, and rejects anything else from another host (Ray's ports, vLLM's rendezvous,
    NCCL's, whatever a container with host networking opens).
  - Fails, naming the variable (and the host), on a value it cannot use - a node address that is not an IP address,
    a network with host bits set, a port out of range, no ssh port, the vLLM port among the ports open to anyone.
options:
  _input:
    description: The cluster's nodes, a dict of host name to fabric address.
    type: dict
    required: true
  serve_port:
    description: The vLLM API port.
    type: int
    required: true
  client_networks:
    description:
      - Networks (C(10.0.0.0/24)) or addresses whose hosts may use the vLLM API; empty, the nodes and localhost only.
      - C(0.0.0.0/0) (and C(::/0)) admits anyone, the API key then the only guard.
    type: list
    elements: str
    default: []
  ssh_ports:
    description: The ssh ports, open to anyone (how Ansible reaches the node). At least one.
    type: list
    elements: int
    default: [22]
  open_ports:
    description: More ports open to anyone, as C(PORT/tcp), C(PORT/udp), C(FIRST-LAST/tcp) or a bare number (TCP).
    type: list
    elements: raw
    default: []
  metrics_networks:
    description:
      - Networks or addresses of the Prometheus servers that scrape the nodes; they reach O(metrics_ports) and the vLLM
        port (its C(/metrics), no API key needed) and nothing else. Empty, no such rule.
    type: list
    elements: str
    default: []
  metrics_ports:
    description: The ports O(metrics_networks) may scrape besides the vLLM port (node exporter's C(9100)).
    type: list
    elements: int
    default: []
  header:
    description: Comment lines at the top of the file.
    type: list
    elements: str
    default: []
  table:
    description: The table's name.
    type: str
    default: sparkops_firewall
"""

EXAMPLES = r"""
- name: Write the firewall's ruleset
  ansible.builtin.copy:
    content: >-
      {{ {'spark-head': '192.168.100.10', 'spark-worker1': '192.168.100.11'}
         | sparkops.inference.host_firewall_ruleset(serve_port=8000, client_networks=['10.20.0.0/24'],
                                                    open_ports=['11000/tcp'], header=['Managed by Ansible']) }}
    dest: /etc/sparkops/firewall.nft
    mode: "0644"
    validate: /usr/sbin/nft --check --file %s
"""

RETURN = r"""
_value:
  description: The nft file's text.
  type: str
"""

import typing as t
from collections.abc import Callable

from ansible.errors import AnsibleFilterError

# What the errors name: the host_firewall role's variables (and the inventory contract's, for the nodes).
NAMES = {
    "nodes": "sparkops_fabric_ip",
    "client_networks": "host_firewall_client_networks",
    "serve_port": "host_firewall_serve_port",
    "ssh_ports": "host_firewall_ssh_ports",
    "open_ports": "host_firewall_open_ports",
    "table": "host_firewall_table",
    "metrics_networks": "host_firewall_metrics_networks",
    "metrics_ports": "host_firewall_metrics_ports",
}


def host_firewall_ruleset_filter(
    nodes: t.Any,
    serve_port: t.Any,
    client_networks: t.Any = (),
    ssh_ports: t.Any = (22,),
    open_ports: t.Any = (),
    header: t.Any = (),
    table: t.Any = None,
    metrics_networks: t.Any = (),
    metrics_ports: t.Any = (),
) -> str:
    # Imported when called, not at the top (docs/architecture.md, tests/unit/plugins/filter/test_filter_module_imports.py).
    from ansible_collections.sparkops.inference.plugins.plugin_utils._host_firewall import TABLE, HostFirewallError, build

    if isinstance(header, str) or not all(isinstance(line, str) and "\n" not in line and "\r" not in line for line in header):
        raise AnsibleFilterError(f"sparkops.inference.host_firewall_ruleset: header must be a list of one-line strings, got {header!r}")
    try:
        ruleset = build(
            nodes,
            client_networks_value=client_networks,
            serve_port=serve_port,
            ssh_ports_value=ssh_ports,
            open_ports_value=open_ports,
            table=TABLE if table is None else table,
            names=NAMES,
            metrics_networks_value=metrics_networks,
            metrics_ports_value=metrics_ports,
        )
    except HostFirewallError as exc:
        raise AnsibleFilterError(f"sparkops.inference.host_firewall_ruleset: {exc}") from None
    return ruleset.render(header)


class FilterModule:
    """sparkops.inference host firewall filter."""

    def filters(self) -> dict[str, Callable[..., t.Any]]:
        return {"host_firewall_ruleset": host_firewall_ruleset_filter}
