# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
name: systemd_value
short_description: Check and escape a value for a systemd unit file's directive or comment
version_added: 1.0.0
author:
  - sparkops.inference developers (@sparkops)
description:
  - Returns the value as text with C(%) written C(%%) (systemd reads C(%h), C(%n), ... as specifiers in directive
    values), for a directive such as C(Description=), C(EnvironmentFile=), C(Requires=), C(TimeoutStartSec=), or a
    comment line.
  - Fails, naming the variable, on a value with a line break, a NUL or another control character (a line break would
    start a new directive, such as C(ExecStartPre=/bin/sh -c ...) run as root) and on a value ending with a backslash
    (the line would go on with the next one).
  - It does not quote; for the words of an Exec line use P(sparkops.inference.systemd_exec_args#filter).
options:
  _input:
    description: The value (a string or a number).
    type: raw
    required: true
  name:
    description: The variable the value comes from, named in errors.
    type: str
    default: the value
  specifiers:
    description: Write C(%) as C(%%). V(false) for a file systemd reads no specifiers in (an environment file's
      comment); the checks stay.
    type: bool
    default: true
"""

EXAMPLES = r"""
# Description=sparkops vLLM serving qwen3 100%%
- name: Write the unit
  ansible.builtin.copy:
    content: |
      [Unit]
      Description=sparkops vLLM serving {{ 'qwen3 100%' | sparkops.inference.systemd_value(name='vllm_serve_served_model_name') }}
    dest: /etc/systemd/system/example.service
    mode: "0644"
"""

RETURN = r"""
_value:
  description: The value, C(%) written C(%%).
  type: str
"""

import typing as t
from collections.abc import Callable

from ansible.errors import AnsibleFilterError


def systemd_value_filter(value: t.Any, name: str = "the value", specifiers: bool = True) -> str:
    # Imported when called, not at the top (docs/architecture.md, tests/unit/plugins/filter/test_filter_module_imports.py).
    from ansible_collections.sparkops.inference.plugins.plugin_utils._systemd_unit import SystemdUnitError, flag, unit_value

    try:
        return unit_value(value, str(name), specifiers=flag(specifiers, "specifiers"))
    except SystemdUnitError as exc:
        raise AnsibleFilterError(f"sparkops.inference.systemd_value: {exc}") from None


class FilterModule:
    """sparkops.inference systemd directive value filter."""

    def filters(self) -> dict[str, Callable[..., t.Any]]:
        return {"systemd_value": systemd_value_filter}
