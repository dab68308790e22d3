# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
name: memory_guard_settings
short_description: A node's unified-memory guard settings, checked against its MemTotal
version_added: 1.0.0
author:
  - sparkops.inference developers (@sparkops)
description:
  - Returns the settings (a dict, written as JSON) that C(sparkops-vllm-memory-guard) reads on a node - the units it
    stops in order, its levels, the variables that set them (named in its journal lines), its state file and the
    folder of node exporter's textfile collector.
  - The resume level is raised to the level vLLM's memory gate waits for (O(gate_min_available_mib), else
    O(gpu_memory_utilization) of C(MemTotal)), so that the guard starts vLLM only when the gate would let it start.
  - Fails, naming the variables, when a level makes no sense (a resume level not above the stop level, an interval of
    0 or above 60 s, a percentage above 100) or is not below the node's C(MemTotal).
options:
  _input:
    description: The node's C(/proc/meminfo) text.
    type: str
    required: true
  units:
    description: The systemd units to stop, in stop order (started in reverse).
    type: list
    elements: str
    required: true
  levels:
    description:
      - C(stop_available_mib), C(stop_psi_full_pct), C(stop_psi_samples), C(resume_available_mib), C(resume_hold_s),
        C(interval_s), C(max_stops_per_hour); a missing or null one takes the guard's default, except
        C(stop_psi_full_pct), where null turns the PSI condition off.
    type: dict
    required: true
  names:
    description: Each level's variable, named in refusals and in the guard's journal lines.
    type: dict
    default: {}
  state_path:
    description: The guard's state file on the node.
    type: str
    required: true
  textfile_dir:
    description: Node exporter's textfile folder, where the guard writes its metrics; empty, none.
    type: str
    default: ""
  gate_min_available_mib:
    description: The C(MemAvailable) (MiB) vLLM's memory gate waits for; null or 0, O(gpu_memory_utilization) of C(MemTotal).
    type: int
  gpu_memory_utilization:
    description: The share of memory vLLM takes (its C(--gpu-memory-utilization)).
    type: float
    default: 0.0
"""

EXAMPLES = r"""
- name: Read the node's memory
  ansible.builtin.slurp:
    src: /proc/meminfo
  register: meminfo

- name: Write the guard's settings
  ansible.builtin.copy:
    content: >-
      {{ meminfo.content | b64decode
         | sparkops.inference.memory_guard_settings(units=['sparkops-vllm.service'], levels={'stop_available_mib': 2048},
                                                    names={'stop_available_mib': 'vllm_serve_memory_guard_stop_available_mib'},
                                                    state_path='/var/lib/sparkops/vllm-memory-guard.json', gpu_memory_utilization=0.85)
         | to_nice_json }}
    dest: /etc/sparkops/vllm-memory-guard.json
    mode: "0644"
"""

RETURN = r"""
_value:
  description: The guard's settings.
  type: dict
"""

import typing as t
from collections.abc import Callable

from ansible.errors import AnsibleFilterError


def memory_guard_settings_filter(
    meminfo: t.Any,
    units: t.Any,
    levels: t.Any,
    state_path: t.Any,
    names: t.Any = None,
    textfile_dir: t.Any = "",
    gate_min_available_mib: t.Any = None,
    gpu_memory_utilization: t.Any = 0.0,
) -> dict[str, t.Any]:
    # Imported when called, not at the top (docs/architecture.md, tests/unit/plugins/filter/test_filter_module_imports.py).
    from ansible_collections.sparkops.inference.plugins.module_utils._memory_guard import MemoryGuardError
    from ansible_collections.sparkops.inference.plugins.plugin_utils._memory_guard_settings import node_settings

    if not isinstance(meminfo, str):
        raise AnsibleFilterError(f"sparkops.inference.memory_guard_settings: the input must be /proc/meminfo's text, got {type(meminfo).__name__}")
    if not isinstance(levels, dict) or not isinstance(names or {}, dict):
        raise AnsibleFilterError("sparkops.inference.memory_guard_settings: levels and names must be dicts")
    if isinstance(units, str) or not isinstance(units, (list, tuple)):
        raise AnsibleFilterError(f"sparkops.inference.memory_guard_settings: units must be a list of unit names, got {units!r}")
    try:
        gate = None if gate_min_available_mib in (None, "") else int(gate_min_available_mib)
        utilization = float(gpu_memory_utilization)
    except (TypeError, ValueError) as exc:
        raise AnsibleFilterError(f"sparkops.inference.memory_guard_settings: {exc}") from None
    try:
        return node_settings(
            meminfo,
            units=list(units),
            levels=dict(levels),
            names={str(k): str(v) for k, v in (names or {}).items()},
            state_path=str(state_path),
            textfile_dir=str(textfile_dir or ""),
            gate_min_available_mib=gate,
            gpu_memory_utilization=utilization,
        )
    except MemoryGuardError as exc:
        raise AnsibleFilterError(f"sparkops.inference.memory_guard_settings: {exc}") from None


class FilterModule:
    """sparkops.inference memory guard filter."""

    def filters(self) -> dict[str, Callable[..., t.Any]]:
        return {"memory_guard_settings": memory_guard_settings_filter}
