# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
name: ray_start_argv
short_description: The arguments of ray start, from the ray_cluster role's variables
version_added: 1.0.0
author:
  - sparkops.inference developers (@sparkops)
description:
  - Returns the arguments the ray_cluster role runs C(ray start) with (after C(start)) - C(--block); on the head
    C(--head) and its port, on a worker the head's address; the node's fabric address, Ray's temp dir, its GPUs,
    C(--num-cpus) where set, the object store's size, C(--disable-usage-stats); on the head the dashboard on
    C(127.0.0.1) or C(--include-dashboard=false); the extra arguments last.
  - Every value goes in as its text, a number as Jinja's C(~) writes it.
  - Fails, naming the variable, on a missing or unknown variable, a list or a mapping or a boolean where one value
    goes, a dashboard switch that is not a boolean, extra arguments that are not a list, and a role other than
    C(head) or C(worker).
options:
  _input:
    description:
      - The role's variables by name - V(ray_cluster_port), V(ray_cluster_head_ip), V(ray_cluster_node_ip),
        V(ray_cluster_num_gpus), V(ray_cluster_num_cpus) (null, not passed), V(ray_cluster_object_store_memory),
        V(ray_cluster_dashboard), V(ray_cluster_dashboard_port) and V(ray_cluster_extra_args).
    type: dict
    required: true
  role:
    description: The node's part in the cluster.
    type: str
    required: true
    choices: [head, worker]
  temp_dir:
    description: Ray's temp dir (C(--temp-dir)).
    type: str
    required: true
"""

EXAMPLES = r"""
# ['--block', '--address=192.168.100.10:6379', '--node-ip-address=192.168.100.11', '--temp-dir=/var/lib/sparkops/tmp/ray',
#  '--num-gpus=1', '--object-store-memory=1073741824', '--disable-usage-stats']
- name: The arguments of a worker's ray start
  ansible.builtin.set_fact:
    ray_args: >-
      {{ {'ray_cluster_port': 6379, 'ray_cluster_head_ip': '192.168.100.10', 'ray_cluster_node_ip': '192.168.100.11',
          'ray_cluster_num_gpus': 1, 'ray_cluster_num_cpus': none, 'ray_cluster_object_store_memory': 1073741824,
          'ray_cluster_dashboard': false, 'ray_cluster_dashboard_port': 8265, 'ray_cluster_extra_args': []}
         | sparkops.inference.ray_start_argv(role='worker', temp_dir='/var/lib/sparkops/tmp/ray') }}
"""

RETURN = r"""
_value:
  description: The arguments, after C(start).
  type: list
  elements: str
"""

import typing as t
from collections.abc import Callable

from ansible.errors import AnsibleFilterError


def ray_start_argv_filter(variables: t.Any, role: t.Any, temp_dir: t.Any) -> list[str]:
    # Imported when called, not at the top (docs/architecture.md, tests/unit/plugins/filter/test_filter_module_imports.py).
    from ansible_collections.sparkops.inference.plugins.plugin_utils._ray_start_argv import RayStartArgvError, RayStartInputs, ray_start_argv

    try:
        return ray_start_argv(RayStartInputs.from_vars(variables, role=role, temp_dir=temp_dir))
    except RayStartArgvError as exc:
        raise AnsibleFilterError(f"sparkops.inference.ray_start_argv: {exc}") from None


class FilterModule:
    """sparkops.inference ray start command line filter."""

    def filters(self) -> dict[str, Callable[..., t.Any]]:
        return {"ray_start_argv": ray_start_argv_filter}
