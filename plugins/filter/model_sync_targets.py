# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
name: model_sync_targets
short_description: The workers that need the model, by fabric address, for snapshot_distribute
version_added: 1.0.0
author:
  - sparkops.inference developers (@sparkops)
description:
  - Takes each worker's M(sparkops.inference.hf_snapshot) result and returns the fabric addresses of the workers whose
    snapshot is incomplete or at another commit than the head's, in the workers' order (the order of the chain
    M(sparkops.inference.snapshot_distribute) sends along).
  - A worker that holds the head's commit complete is left out; an empty list means nothing is to be sent.
options:
  _input:
    description: The workers' M(sparkops.inference.hf_snapshot) results (each with C(complete) and C(commit)), in chain order.
    type: list
    elements: dict
    required: true
  addresses:
    description: The workers' fabric addresses, in the same order as the input.
    type: list
    elements: str
    required: true
  head_commit:
    description: The commit of the snapshot the head holds.
    type: str
    required: true
"""

EXAMPLES = r"""
- name: Push the snapshot to the workers that need it
  sparkops.inference.snapshot_distribute:
    repo_dir: /var/lib/sparkops/huggingface/hub/models--Qwen--Qwen3.5-122B-A10B-FP8
    targets: "{{ __targets }}"
  when: __targets | length > 0
  vars:
    __targets: >-
      {{ groups['spark_workers'] | map('extract', hostvars, 'worker_check')
         | sparkops.inference.model_sync_targets(addresses=groups['spark_workers'] | map('extract', hostvars, 'sparkops_fabric_ip'),
                                                 head_commit=head_check.commit) }}
"""

RETURN = r"""
_value:
  description: The fabric addresses of the workers that need the snapshot, in chain order.
  type: list
  elements: str
"""

import typing as t
from collections.abc import Callable, Iterable, Mapping

from ansible.errors import AnsibleFilterError


def model_sync_targets_filter(checks: t.Any, addresses: t.Any, head_commit: t.Any) -> list[str]:
    # Imported when called, not at the top (docs/architecture.md, tests/unit/plugins/filter/test_filter_module_imports.py).
    from ansible_collections.sparkops.inference.plugins.plugin_utils._model_sync_targets import TargetsError, model_sync_targets

    for name, value in (("the input", checks), ("addresses", addresses)):
        if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Iterable):
            raise AnsibleFilterError(f"sparkops.inference.model_sync_targets: {name} must be a list, one item per worker, not {type(value).__name__}")
    try:
        return model_sync_targets(checks, addresses, head_commit)
    except TargetsError as exc:
        raise AnsibleFilterError(f"sparkops.inference.model_sync_targets: {exc}") from exc


class FilterModule:
    """sparkops.inference model-sync targets filter."""

    def filters(self) -> dict[str, Callable[..., t.Any]]:
        return {"model_sync_targets": model_sync_targets_filter}
