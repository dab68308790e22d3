# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
name: ray_version_mismatches
short_description: Name the nodes whose Ray or Python version differs
version_added: 1.0.0
author:
  - sparkops.inference developers (@sparkops)
description:
  - Ray refuses a node unless its Ray and Python versions, Python patch release included, match the cluster's.
    This filter compares the versions M(sparkops.inference.ray_cluster_info) read on every node and returns one
    message per difference, naming the hosts; an empty list means the cluster can form.
options:
  _input:
    description: Host name to the result of M(sparkops.inference.ray_cluster_info) (or any dict with C(ray_version) and C(python_version)).
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: Refuse a cluster of mixed versions
  ansible.builtin.assert:
    that:
      - versions | sparkops.inference.ray_version_mismatches | length == 0
"""

RETURN = r"""
_value:
  description: One message per difference, naming the hosts and versions.
  type: list
  elements: str
"""

import typing as t
from collections.abc import Callable

from ansible.errors import AnsibleFilterError


def ray_version_mismatches_filter(per_host: t.Any) -> list[str]:
    # Imported when called, not at the top (docs/architecture.md, tests/unit/plugins/filter/test_filter_module_imports.py).
    from ansible_collections.sparkops.inference.plugins.module_utils._ray_cluster import version_mismatches

    if not isinstance(per_host, t.Mapping):
        raise AnsibleFilterError(f"sparkops.inference.ray_version_mismatches: the input must be a dict of host to versions, not {type(per_host).__name__}")
    for host, versions in per_host.items():
        if not isinstance(versions, t.Mapping) or "ray_version" not in versions or "python_version" not in versions:
            raise AnsibleFilterError(f"sparkops.inference.ray_version_mismatches: host {host} has no ray_version/python_version")
    return version_mismatches({str(h): {"ray_version": str(v["ray_version"]), "python_version": str(v["python_version"])} for h, v in per_host.items()})


class FilterModule:
    """sparkops.inference Ray filters."""

    def filters(self) -> dict[str, Callable[..., t.Any]]:
        return {"ray_version_mismatches": ray_version_mismatches_filter}
