# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
name: reclaim_plan
short_description: Decide which units, containers and processes to stop to free GPU memory, and what to refuse
version_added: 1.0.0
author:
  - sparkops.inference developers (@sparkops)
description:
  - "Takes a M(sparkops.inference.gpu_info) result and the host's services (C(ansible_facts.services)) and classifies
    every GPU process: allowed (graphics), the collection's own (C(sparkops-*) units, kept unless C(include_own)),
    freed by stopping a configured unit, freed by removing its container (configured, or any running container
    holding the GPU with C(remove_gpu_containers)), a leftover to end (its container is gone, or it runs in no
    service and matches C(leftover_processes); only with C(end_leftover_processes)), or an unknown consumer
    (refused unless C(end_unknown_consumers))."
  - Configured units that exist are always in RV(_value.units) (they are the conflicting stack); those that do not
    exist are in RV(_value.units_absent). Units that C(service_facts) lists as C(not-found) and template units
    (C(name@.service)) do not count as existing. Nothing else is ever planned.
  - "Protected units are never planned, whatever a setting matches: C(ssh)/C(sshd), C(systemd-*), C(dbus), the
    network (C(networking), C(NetworkManager*), C(ifup@*), C(wpa_supplicant), C(netplan-*)), the container engines
    (C(docker), C(containerd), C(podman*), C(crio)), C(cron)/C(crond)/C(anacron)/C(atd), consoles (C(getty@*),
    C(serial-getty@*), C(console-getty), C(autovt@*)), C(user@*), C(user-runtime-dir@*), C(init.scope),
    C(polkit), C(rsyslog), C(auditd), C(nvidia-persistenced), C(nvidia-fabricmanager), and the collection's own
    units (C(own_units)). A configured pattern that matches one is reported in RV(_value.units_protected); a
    configured name that names one exactly is in RV(_value.units_protected_named) (the role fails on it)."
  - A container is removed only when C(docker ps) listed it running and docker confirmed the process is its (see
    M(sparkops.inference.gpu_info)); a process in a container docker does not know (another runtime, or no docker
    CLI) or did not confirm is an unknown consumer, never a leftover by name. A configured container matches by its
    exact name or full id, never by an id prefix.
  - The collection's own containers (C(own_containers)) are never removed; a process in one is kept as the
    collection's own (with C(include_own), the running own unit named for the container is stopped); a configured
    entry naming one (by name, or the full id of one seen running) is in RV(_value.containers_protected_named).
  - Each process to end carries its start time from M(sparkops.inference.gpu_info), for
    O(sparkops.inference.process_end#module:expect_start_times).
options:
  _input:
    description: The result of M(sparkops.inference.gpu_info).
    type: dict
    required: true
  services:
    description: C(ansible_facts.services) of the host (unit name to facts).
    type: dict
    required: true
  settings:
    description:
      - "C(units), C(containers), C(allowed_processes), C(own_units), C(own_containers), C(leftover_processes)
        (lists of names or shell patterns; a unit without a suffix is a C(.service)); C(include_own), C(remove_gpu_containers),
        C(end_leftover_processes), C(end_unknown_consumers) (booleans). Unset keys take the defaults of role
        R(sparkops.inference.gpu_reclaim,ansible_collections.sparkops.inference.gpu_reclaim_role)."
    type: dict
    default: {}
"""

EXAMPLES = r"""
- name: Plan the reclaim
  ansible.builtin.set_fact:
    plan: "{{ gpu | sparkops.inference.reclaim_plan(ansible_facts.services, {'units': ['vllm-*'], 'containers': ['vllm_node']}) }}"

- name: Refuse unknown consumers
  ansible.builtin.fail:
    msg: "{{ plan.refused_table }}"
  when: plan.refused | length > 0
"""

RETURN = r"""
_value:
  description: The plan.
  type: dict
  contains:
    units:
      description: Units to stop and disable.
      type: list
      elements: str
    units_absent:
      description: Configured units (or patterns) that match no unit on the host.
      type: list
      elements: str
    units_protected:
      description:
        - Protected units that a configured pattern matches, C({unit, configured}); they are never stopped.
      type: list
      elements: dict
    units_protected_named:
      description: Configured units that name a protected unit exactly (an error for the role), whether it exists or not.
      type: list
      elements: str
    containers_protected_named:
      description: Configured containers that name one of the collection's own containers; they are never removed.
      type: list
      elements: str
    own_units:
      description: The collection's own units to stop (only with C(include_own)).
      type: list
      elements: str
    containers:
      description: Containers (names, or ids when unnamed) to remove.
      type: list
      elements: str
    processes:
      description: Processes to end, C({pid, name, why, start_time}).
      type: list
      elements: dict
    kept:
      description: GPU processes left alone, with C(why) (C(allowed) or C(own), an own unit or container).
      type: list
      elements: dict
    freed:
      description: GPU processes the plan frees, with C(by) saying how.
      type: list
      elements: dict
    refused:
      description: GPU processes nothing is configured for, with C(why).
      type: list
      elements: dict
    refused_table:
      description: The refused processes as a table (pid, MiB, name, unit/container), empty when none.
      type: str
    nothing_to_do:
      description: Whether no unit, container or process is to be stopped.
      type: bool
"""

import typing as t
from collections.abc import Callable

from ansible.errors import AnsibleFilterError


def reclaim_plan_filter(gpu_info: t.Any, services: t.Any, settings: t.Any = None) -> dict[str, t.Any]:
    # Imported when called, not at the top (docs/architecture.md, tests/unit/plugins/filter/test_filter_module_imports.py).
    from ansible_collections.sparkops.inference.plugins.plugin_utils._reclaim_plan import ReclaimSettingsError, Settings, plan

    if not isinstance(gpu_info, t.Mapping) or not isinstance(gpu_info.get("processes"), list):
        raise AnsibleFilterError("sparkops.inference.reclaim_plan: the input must be a sparkops.inference.gpu_info result (with processes)")
    if not isinstance(services, t.Mapping):
        raise AnsibleFilterError(f"sparkops.inference.reclaim_plan: services must be ansible_facts.services (a dict), not {type(services).__name__}")
    try:
        parsed = Settings.from_mapping(settings or {})
    except ReclaimSettingsError as exc:
        raise AnsibleFilterError(f"sparkops.inference.reclaim_plan: {exc}") from None
    return plan(gpu_info, services, parsed).as_dict()


class FilterModule:
    """sparkops.inference GPU reclaim planning."""

    def filters(self) -> dict[str, Callable[..., t.Any]]:
        return {"reclaim_plan": reclaim_plan_filter}
