# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
name: recon_nodes
short_description: Each node's reconnaissance with its role and fabric address, as the report takes it
version_added: 1.1.0
author:
  - sparkops.inference developers (@sparkops)
description:
  - Joins what M(sparkops.inference.node_recon) found on each host with the cluster plan of
    M(sparkops.inference.cluster_contract) (C(sparkops_cluster)) into what M(sparkops.inference.recon_report) takes.
options:
  _input:
    description: Host name to that host's RV(sparkops.inference.node_recon#module:recon).
    type: dict
    required: true
  cluster:
    description: The cluster plan (C(sparkops_cluster)), with C(head) and C(fabric_ips).
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: Write the report
  sparkops.inference.recon_report:
    nodes: "{{ recon_by_host | sparkops.inference.recon_nodes(sparkops_cluster) }}"
    dest_dir: reports
  delegate_to: localhost
  run_once: true
"""

RETURN = r"""
_value:
  description: Host name to C(role) (head or worker), C(fabric_ip) and C(recon).
  type: dict
"""

import typing as t
from collections.abc import Callable

from ansible.errors import AnsibleFilterError


def _recon_by_host(value: t.Any, name: str) -> t.Mapping[str, t.Mapping[str, t.Any]]:
    if not isinstance(value, t.Mapping) or not all(isinstance(r, t.Mapping) for r in value.values()):
        raise AnsibleFilterError(f"sparkops.inference.{name}: the input must map each host to node_recon's recon")
    return value


def recon_nodes_filter(recon_by_host: t.Any, cluster: t.Any) -> dict[str, dict[str, t.Any]]:
    recon = _recon_by_host(recon_by_host, "recon_nodes")
    if not isinstance(cluster, t.Mapping) or "head" not in cluster or not isinstance(cluster.get("fabric_ips"), t.Mapping):
        raise AnsibleFilterError("sparkops.inference.recon_nodes: cluster must be the cluster plan (sparkops_cluster)")
    return {
        str(host): {"role": "head" if host == cluster["head"] else "worker", "fabric_ip": cluster["fabric_ips"].get(host), "recon": dict(facts)}
        for host, facts in recon.items()
    }


class FilterModule:
    """sparkops.inference reconnaissance filter: recon_nodes."""

    def filters(self) -> dict[str, Callable[..., t.Any]]:
        return {"recon_nodes": recon_nodes_filter}
