# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
name: reclaim_verdict
short_description: Say whether GPU memory is free, naming what still holds it
version_added: 1.0.0
author:
  - sparkops.inference developers (@sparkops)
description:
  - Takes a M(sparkops.inference.gpu_info) result read after reclaiming. Free means no GPU process is left but
    allowed ones (and the collection's own, unless C(include_own)), and the available memory (C(MemAvailable) on
    unified memory, free GPU memory otherwise) is at least the larger of O(min_available_mib) and
    O(min_available_fraction) of the total.
  - Memory held by the collection's own kept services counts as available, so a converged cluster passes. Those are
    processes in the own units (C(own_units)) and, with the docker runtime, in the own containers (C(own_containers))
    that M(sparkops.inference.gpu_info) found running and confirmed by docker.
options:
  _input:
    description: The result of M(sparkops.inference.gpu_info).
    type: dict
    required: true
  settings:
    description:
      - The same settings as for P(sparkops.inference.reclaim_plan#filter) (C(allowed_processes), C(own_units), C(own_containers),
        C(include_own) matter).
    type: dict
    default: {}
  min_available_mib:
    description: Memory that must be available, in MiB.
    type: int
    default: 0
  min_available_fraction:
    description: Fraction of the total memory that must be available.
    type: float
    default: 0.0
"""

EXAMPLES = r"""
- name: Prove the memory came back
  ansible.builtin.assert:
    that: verdict.ok
    fail_msg: "{{ verdict.problems | join('; ') }}\n{{ verdict.remaining_table }}"
  vars:
    verdict: "{{ gpu_after | sparkops.inference.reclaim_verdict({}, 0, 0.8) }}"
"""

RETURN = r"""
_value:
  description: The verdict.
  type: dict
  contains:
    ok:
      description: Whether the memory is free.
      type: bool
    problems:
      description: What is wrong, one sentence each.
      type: list
      elements: str
    remaining:
      description: The GPU processes still holding memory.
      type: list
      elements: dict
    remaining_table:
      description: RV(_value.remaining) as a table (pid, MiB, name, unit/container).
      type: str
    available_mib:
      description: Available memory in MiB.
      type: int
    own_used_mib:
      description: Memory held by the collection's own kept services, in MiB.
      type: int
    required_mib:
      description: The memory that must be available, in MiB.
      type: int
    total_mib:
      description: Total memory in MiB.
      type: int
"""

import typing as t
from collections.abc import Callable

from ansible.errors import AnsibleFilterError


def reclaim_verdict_filter(gpu_info: t.Any, settings: t.Any = None, min_available_mib: t.Any = 0, min_available_fraction: t.Any = 0.0) -> dict[str, t.Any]:
    # Imported when called, not at the top (docs/architecture.md, tests/unit/plugins/filter/test_filter_module_imports.py).
    from ansible_collections.sparkops.inference.plugins.plugin_utils._reclaim_check import verdict
    from ansible_collections.sparkops.inference.plugins.plugin_utils._reclaim_plan import ReclaimSettingsError, Settings

    if not isinstance(gpu_info, t.Mapping) or not isinstance(gpu_info.get("processes"), list):
        raise AnsibleFilterError("sparkops.inference.reclaim_verdict: the input must be a sparkops.inference.gpu_info result (with processes)")
    try:
        parsed = Settings.from_mapping(settings or {})
        mib, fraction = int(min_available_mib), float(min_available_fraction)
    except (ReclaimSettingsError, TypeError, ValueError) as exc:
        raise AnsibleFilterError(f"sparkops.inference.reclaim_verdict: {exc}") from None
    if mib < 0 or not 0.0 <= fraction <= 1.0:
        raise AnsibleFilterError(
            f"sparkops.inference.reclaim_verdict: min_available_mib must be >= 0 and min_available_fraction within 0..1, got {mib} and {fraction}"
        )
    return verdict(gpu_info, parsed, mib, fraction)


class FilterModule:
    """sparkops.inference GPU reclaim verdict."""

    def filters(self) -> dict[str, Callable[..., t.Any]]:
        return {"reclaim_verdict": reclaim_verdict_filter}
