# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
name: recon_fit_facts
short_description: Each node's memory, free disk and bytes of the model present, as the model_fit filter takes them
version_added: 1.1.0
author:
  - sparkops.inference developers (@sparkops)
description:
  - Takes from what M(sparkops.inference.node_recon) found on each host its C(memory.total_bytes),
    C(disk.free_bytes) and C(disk.model_present_bytes) for the C(sparkops.inference.model_fit) filter.
options:
  _input:
    description: Host name to that host's RV(sparkops.inference.node_recon#module:recon).
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: Check the fit
  ansible.builtin.set_fact:
    fit: "{{ metadata | sparkops.inference.model_fit(recon_by_host | sparkops.inference.recon_fit_facts, 2, 1, 0.85) }}"
"""

RETURN = r"""
_value:
  description: Host name to C(mem_total), C(disk_free) and C(present_bytes), in bytes.
  type: dict
"""

import typing as t
from collections.abc import Callable

from ansible.errors import AnsibleFilterError


def recon_fit_facts_filter(recon_by_host: t.Any) -> dict[str, dict[str, int]]:
    if not isinstance(recon_by_host, t.Mapping) or not all(isinstance(r, t.Mapping) for r in recon_by_host.values()):
        raise AnsibleFilterError("sparkops.inference.recon_fit_facts: the input must map each host to node_recon's recon")
    facts: dict[str, dict[str, int]] = {}
    for host, recon in recon_by_host.items():
        memory, disk = recon.get("memory") or {}, recon.get("disk") or {}
        if not isinstance(memory.get("total_bytes"), int) or not isinstance(disk.get("free_bytes"), int):
            raise AnsibleFilterError(f"sparkops.inference.recon_fit_facts: host {host}: the reconnaissance has no memory total or free disk")
        facts[str(host)] = {"mem_total": memory["total_bytes"], "disk_free": disk["free_bytes"], "present_bytes": int(disk.get("model_present_bytes") or 0)}
    return facts


class FilterModule:
    """sparkops.inference reconnaissance filter: recon_fit_facts."""

    def filters(self) -> dict[str, Callable[..., t.Any]]:
        return {"recon_fit_facts": recon_fit_facts_filter}
