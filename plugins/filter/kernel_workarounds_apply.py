# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
name: kernel_workarounds_apply
short_description: The engine environment of the chosen GB10 workarounds, less those the inventory turns off
version_added: 1.0.0
author:
  - sparkops.inference developers (@sparkops)
description:
  - Takes what the C(sparkops.inference.kernel_workarounds) filter chose in the preflight (null when it chose nothing,
    for example without the model's C(config.json)) and the role's switches. Returns the environment variables to set
    in the engine's unit and the record of what was applied and skipped, and why.
  - "A row is skipped when O(enabled) is false, when O(skip) names it, or when O(extra_env) sets one of its variables
    (the inventory's value wins). Two rows that set C(VLLM_DISABLED_KERNELS) are joined with commas, as vLLM splits it."
options:
  _input:
    description: The choice (the C(sparkops.inference.kernel_workarounds) filter's result), or null.
    type: dict
    required: true
  enabled:
    description: C(vllm_serve_kernel_workarounds).
    type: bool
    default: true
  skip:
    description: C(vllm_serve_kernel_workarounds_skip), row names of the table.
    type: list
    elements: str
    default: []
  extra_env:
    description: C(vllm_serve_extra_env).
    type: dict
    default: {}
"""

EXAMPLES = r"""
- name: The engine's environment with the workarounds the preflight chose
  ansible.builtin.debug:
    msg: >-
      {{ hostvars[head].sparkops_kernel_workarounds | default(none)
         | sparkops.inference.kernel_workarounds_apply(enabled=true, skip=[], extra_env={}) }}
"""

RETURN = r"""
_value:
  description: What to apply.
  type: dict
  contains:
    env:
      description: Variable to value, for the engine's environment file.
      type: dict
    applied:
      description: The rows applied, each with C(name), C(env), C(failure), C(why) and C(sources).
      type: list
      elements: dict
    skipped:
      description: The rows not applied, each as in RV(applied) with C(because).
      type: list
      elements: dict
    note:
      description: One line for people (how many were applied, or why none was needed or chosen).
      type: str
"""

import typing as t
from collections.abc import Callable

from ansible.errors import AnsibleFilterError


def kernel_workarounds_apply_filter(choice: t.Any, enabled: t.Any = True, skip: t.Any = None, extra_env: t.Any = None) -> dict[str, t.Any]:
    # Imported when called, not at the top (docs/architecture.md, tests/unit/plugins/filter/test_filter_module_imports.py).
    from ansible_collections.sparkops.inference.plugins.plugin_utils._kernel_workarounds import WorkaroundInputError, apply

    name = "sparkops.inference.kernel_workarounds_apply"
    if not isinstance(enabled, bool):
        raise AnsibleFilterError(f"{name}: vllm_serve_kernel_workarounds must be true or false, got {enabled!r}")
    if choice is not None and not isinstance(choice, t.Mapping):
        raise AnsibleFilterError(f"{name}: the input must be the kernel_workarounds filter's result or null, got {type(choice).__name__}")
    try:
        return apply(choice, enabled, [] if skip is None else skip, {} if extra_env is None else extra_env).as_dict()
    except WorkaroundInputError as exc:
        raise AnsibleFilterError(f"{name}: {exc}") from None


class FilterModule:
    """sparkops.inference GB10 workarounds for the engine's environment: kernel_workarounds_apply."""

    def filters(self) -> dict[str, Callable[..., t.Any]]:
        return {"kernel_workarounds_apply": kernel_workarounds_apply_filter}
