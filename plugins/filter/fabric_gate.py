# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
name: fabric_gate
short_description: Check every node's fabric link speed and MTU, and that the MTU is the same on every node
version_added: 1.0.0
author:
  - sparkops.inference developers (@sparkops)
description:
  - Takes what M(sparkops.inference.roce_info) returned for each node and checks, all at once, that every fabric link
    (and its twin) is up, runs at least O(min_speed_fraction) of O(expected_speed_mbps), has an MTU of at least
    O(min_mtu), and that the MTU is the same on every node.
  - "Each failure names the node, the interface and the figure, for example
    C(spark-worker1: fabric link enp1s0f1np1 runs at 13000 Mb/s, expected 200000 (at least 90 %))."
  - "O(speed_check): V(auto) checks the speed of PCI netdevs that report one, and notes the netdevs it skips (the
    kernel gives no speed, C(-1) or unreadable; or a virtual netdev such as a veth, whose driver reports a made-up
    10000 Mb/s); V(required) fails where no speed is reported; V(off) checks no speed."
options:
  _input:
    description: Node name to the result of M(sparkops.inference.roce_info) for that node.
    type: dict
    required: true
  expected_speed_mbps:
    description: The link rate the fabric should run at, in Mb/s (a DGX Spark's ConnectX-7 port is 200 Gb/s).
    type: int
    default: 200000
  min_speed_fraction:
    description: A link below this fraction of O(expected_speed_mbps) fails; above 0, at most 1.
    type: float
    default: 0.9
  min_mtu:
    description: The smallest MTU a fabric link may have; at least 576.
    type: int
    default: 1500
  speed_check:
    description: How to treat links that report no speed, or virtual links.
    type: str
    default: auto
    choices: [auto, required, 'off']
"""

EXAMPLES = r"""
- name: Check the fabric links of every node
  ansible.builtin.assert:
    that: __gate.ok
    fail_msg: "{{ __gate.failures }}"
  vars:
    __gate: "{{ dict(ansible_play_hosts | zip(ansible_play_hosts | map('extract', hostvars, 'roce'))) | sparkops.inference.fabric_gate }}"
  run_once: true
"""

RETURN = r"""
_value:
  description: The verdict.
  type: dict
  contains:
    ok:
      description: No failures.
      type: bool
    failures:
      description: One line per problem, naming the node, the interface and the figure.
      type: list
      elements: str
    notes:
      description: What was not checked, and why (one line per link).
      type: list
      elements: str
    mtu:
      description: Node name to the MTU of its fabric link.
      type: dict
"""

import typing as t
from collections.abc import Callable

from ansible.errors import AnsibleFilterError


def fabric_gate_filter(
    nodes: t.Any,
    expected_speed_mbps: t.Any = 200000,
    min_speed_fraction: t.Any = 0.9,
    min_mtu: t.Any = 1500,
    speed_check: t.Any = "auto",
) -> dict[str, t.Any]:
    # Imported when called, not at the top (docs/architecture.md, tests/unit/plugins/filter/test_filter_module_imports.py).
    from ansible_collections.sparkops.inference.plugins.plugin_utils._fabric_gate import FabricGateError, GateSettings, fabric_gate

    if not isinstance(nodes, t.Mapping):
        raise AnsibleFilterError(f"sparkops.inference.fabric_gate: the input must map node names to roce_info results, not {type(nodes).__name__}")
    try:
        settings = GateSettings(expected_speed_mbps, min_speed_fraction, min_mtu, speed_check)
        return fabric_gate(nodes, settings).as_dict()
    except FabricGateError as exc:
        raise AnsibleFilterError(f"sparkops.inference.fabric_gate: {exc}") from exc


class FilterModule:
    """sparkops.inference fabric gate filter."""

    def filters(self) -> dict[str, Callable[..., t.Any]]:
        return {"fabric_gate": fabric_gate_filter}
