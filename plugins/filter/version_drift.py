# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
name: version_drift
short_description: Name the nodes whose kernel, driver, CUDA, NCCL, Python, Ray or vLLM differs from the head's
version_added: 1.1.0
author:
  - sparkops.inference developers (@sparkops)
description:
  - After a partial upgrade one node runs another kernel, driver, CUDA, NCCL build, Python, Ray or vLLM than the
    others, and NCCL or Ray then fail in ways that name neither. This filter compares each node's versions (as
    M(sparkops.inference.node_recon) reports them in RV(recon.versions)) with the head's and returns every difference
    at once, each naming the host, the component and both values.
  - A component listed in O(allowed) is a deliberate mix; its differences are returned apart, not as problems.
  - What a node could not report (not installed yet, no C(nvidia-smi)) is listed apart and not compared.
options:
  _input:
    description: Host name to that host's versions (a dict with any of the keys C(kernel), C(driver), C(cuda), C(nccl), C(python), C(ray), C(vllm)).
    type: dict
    required: true
  head:
    description: The head's host name; its versions are the reference.
    type: str
    required: true
  allowed:
    description: Components whose differences are deliberate (the inventory's C(sparkops_drift_allowed)).
    type: list
    elements: str
    default: []
"""

EXAMPLES = r"""
- name: Refuse nodes that drifted apart
  vars:
    drift: "{{ versions | sparkops.inference.version_drift(groups['spark_head'][0], sparkops_drift_allowed) }}"
  ansible.builtin.assert:
    that: drift.problems | length == 0
    fail_msg: "{{ drift.problems | join('; ') }}"
"""

RETURN = r"""
_value:
  description: The comparison.
  type: dict
  contains:
    problems:
      description: One line per difference that is not allowed, naming the host, the component and both values.
      type: list
      elements: str
    allowed:
      description: The differences in allowed components, in the same form.
      type: list
      elements: str
    unknown:
      description: What was not compared, and why.
      type: list
      elements: str
"""

import typing as t
from collections.abc import Callable

from ansible.errors import AnsibleFilterError


def version_drift_filter(per_host: t.Any, head: t.Any, allowed: t.Any = ()) -> dict[str, list[str]]:
    # Imported when called, not at the top (docs/architecture.md, tests/unit/plugins/filter/test_filter_module_imports.py).
    from ansible_collections.sparkops.inference.plugins.module_utils._version_drift import version_drift

    if not isinstance(per_host, t.Mapping) or not all(isinstance(v, t.Mapping) for v in per_host.values()):
        raise AnsibleFilterError("sparkops.inference.version_drift: the input must be a dict of host to a dict of versions")
    if isinstance(allowed, str) or not isinstance(allowed, t.Iterable):
        raise AnsibleFilterError(f"sparkops_drift_allowed must be a list of components, not {allowed!r}")
    versions = {str(h): {str(k): (None if v is None else str(v)) for k, v in vs.items()} for h, vs in per_host.items()}
    try:
        drift = version_drift(str(head), versions, [str(a) for a in allowed])
    except ValueError as exc:
        raise AnsibleFilterError(str(exc)) from exc
    return {"problems": drift.problems, "allowed": drift.allowed, "unknown": drift.unknown}


class FilterModule:
    """sparkops.inference version drift filter."""

    def filters(self) -> dict[str, Callable[..., t.Any]]:
        return {"version_drift": version_drift_filter}
