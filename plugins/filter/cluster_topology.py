# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
name: cluster_topology
short_description: The cluster plan's head, workers, nodes and fabric addresses, from the inventory alone
version_added: 1.1.0
author:
  - sparkops.inference developers (@sparkops)
description:
  - Returns the part of the cluster plan that M(sparkops.inference.cluster_contract) sets as C(sparkops_cluster) which
    the inventory alone gives - the head (the host of C(spark_head)), the workers (the hosts of C(spark_workers),
    inventory order), the nodes (head first, then the workers), the shared paths and ports (the head's
    C(sparkops_fabric_env_file), C(sparkops_ray_venv), C(sparkops_ray_port), C(sparkops_hf_home), else their
    defaults), each node's C(sparkops_fabric_ip) and the head's, and the deployments (from the head's
    C(sparkops_deployments), else its cluster variables).
  - For a role run without the preflight (the roles read C(sparkops_cluster) when it is defined, else this), so that
    both give the same hosts in the same order and the same addresses.
  - The addresses are returned as the inventory gives them; checking them is the contract's work
    (M(sparkops.inference.cluster_contract)).
  - Fails, naming the group or the host and the variable, when C(spark_head) does not hold exactly one host, a host is
    in both groups, or (with O(addresses)) a node has no C(sparkops_fabric_ip).
options:
  _input:
    description: The inventory's groups (the C(groups) variable), group name to host names.
    type: dict
    required: true
  hostvars:
    description:
      - Every host's variables (the C(hostvars) variable), where each node's C(sparkops_fabric_ip) and the head's
        shared paths and ports are read.
    type: dict
    required: true
  addresses:
    description:
      - Read each node's C(sparkops_fabric_ip) and return RV(_value.fabric_ips) and RV(_value.head_fabric_ip).
      - V(false) for a role that needs only the hosts - no address is read or required, and those two keys are left
        out.
    type: bool
    default: true
"""

EXAMPLES = r"""
# {'head': 'spark-head', 'workers': ['spark-worker1'], 'nodes': ['spark-head', 'spark-worker1'],
#  'fabric_ips': {'spark-head': '192.168.100.10', 'spark-worker1': '192.168.100.11'}, 'head_fabric_ip': '192.168.100.10'}
- name: The plan, or the same from the inventory when the preflight has not run
  ansible.builtin.set_fact:
    cluster: "{{ sparkops_cluster if sparkops_cluster is defined else (groups | sparkops.inference.cluster_topology(hostvars)) }}"

# {'head': 'spark-head', 'workers': ['spark-worker1'], 'nodes': ['spark-head', 'spark-worker1']}
- name: Only the hosts
  ansible.builtin.debug:
    msg: "{{ groups | sparkops.inference.cluster_topology(hostvars, addresses=false) }}"
"""

RETURN = r"""
_value:
  description: The topology, with the keys and values C(sparkops_cluster) has for them.
  type: dict
  contains:
    head:
      description: The host of C(spark_head).
      type: str
    workers:
      description: The hosts of C(spark_workers), inventory order.
      type: list
      elements: str
    nodes:
      description: The head, then the workers.
      type: list
      elements: str
    fabric_ips:
      description: Each node to its C(sparkops_fabric_ip). Left out with O(addresses=false).
      type: dict
    head_fabric_ip:
      description: The head's C(sparkops_fabric_ip). Left out with O(addresses=false).
      type: str
    fabric_env_file:
      description: C(sparkops_fabric_env_file), the fabric environment file (default V(/etc/sparkops/fabric.env)).
      type: str
    ray_venv:
      description: C(sparkops_ray_venv), the venv of Ray and vLLM (default V(/opt/sparkops/ray)).
      type: str
    ray_port:
      description: C(sparkops_ray_port), Ray's GCS port on the head (default V(6379)).
      type: int
    hf_home:
      description: C(sparkops_hf_home), the Hugging Face home the model is kept under (default V(/var/lib/sparkops/huggingface)).
      type: str
    ray_units:
      description: The Ray units' names by role (V(head), V(worker)), as C(ray_cluster) writes them.
      type: dict
    deployments:
      description:
        - The deployments, as the plan has them (C(sparkops_deployments) on the head, else the one its cluster variables
          describe, named V(default), on every node), unchecked (a value the contract would refuse is kept, one that
          cannot be read is null).
      type: list
      elements: dict
"""

import typing as t
from collections.abc import Callable

from ansible.errors import AnsibleFilterError


def _host_var(hostvars: t.Mapping[str, t.Any], host: str, name: str) -> t.Any:
    node = hostvars.get(host)  # Ansible's hostvars: a marker, not None, for a host not in the inventory
    return node[name] if isinstance(node, t.Mapping) and name in node else None


def cluster_topology_filter(groups: t.Any, hostvars: t.Any, addresses: t.Any = True) -> dict[str, t.Any]:
    # Imported when called, not at the top (docs/architecture.md, tests/unit/plugins/filter/test_filter_module_imports.py).
    from ansible_collections.sparkops.inference.plugins.plugin_utils._cluster_contract import FABRIC_IP_VAR, TopologyError, topology

    if not isinstance(groups, t.Mapping):
        raise AnsibleFilterError("sparkops.inference.cluster_topology: the input must be the inventory's groups (groups)")
    if not isinstance(hostvars, t.Mapping):
        raise AnsibleFilterError("sparkops.inference.cluster_topology: hostvars must be every host's variables (hostvars)")
    if not isinstance(addresses, bool):
        raise AnsibleFilterError(f"sparkops.inference.cluster_topology: addresses must be a boolean, got {addresses!r}")
    try:
        fabric_ip = (lambda host: _host_var(hostvars, host, FABRIC_IP_VAR)) if addresses else None
        return topology(groups, fabric_ip, lambda host, name: _host_var(hostvars, host, name))
    except TopologyError as exc:
        raise AnsibleFilterError(f"sparkops.inference.cluster_topology: {exc}") from None


class FilterModule:
    """sparkops.inference cluster topology filter."""

    def filters(self) -> dict[str, Callable[..., t.Any]]:
        return {"cluster_topology": cluster_topology_filter}
