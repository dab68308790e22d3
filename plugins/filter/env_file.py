# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
name: env_file
short_description: Render variables as a systemd EnvironmentFile
version_added: 1.0.0
author:
  - sparkops.inference developers (@sparkops)
description:
  - Renders a dict of variables as C(NAME=value) lines that systemd's C(EnvironmentFile=) and a shell's C(set -a; .)
    both read the same way; values that need it are single-quoted (literal for both).
  - Fails on a name that is not a valid variable name, and on a value with a line break or a single quote.
options:
  _input:
    description: Variable name to value.
    type: dict
    required: true
  header:
    description: Comment lines to put first (without the C(#)).
    type: list
    elements: str
    default: []
"""

EXAMPLES = r"""
- name: Write the fabric environment
  ansible.builtin.copy:
    content: "{{ nccl_env_vars | sparkops.inference.env_file(header=['Managed by sparkops.inference']) }}"
    dest: /etc/sparkops/fabric.env
    mode: "0644"
"""

RETURN = r"""
_value:
  description: The file's text, ending with a newline.
  type: str
"""

import typing as t
from collections.abc import Callable

from ansible.errors import AnsibleFilterError


def env_file_filter(env: t.Any, header: t.Sequence[str] = ()) -> str:
    # Imported when called, not at the top (docs/architecture.md, tests/unit/plugins/filter/test_filter_module_imports.py).
    from ansible_collections.sparkops.inference.plugins.plugin_utils._fabric_env import FabricEnvError, render_env_file

    if not isinstance(env, t.Mapping):
        raise AnsibleFilterError(f"sparkops.inference.env_file: the input must be a dict, not {type(env).__name__}")
    try:
        return render_env_file({str(k): str(v) for k, v in env.items()}, [str(line) for line in header])
    except FabricEnvError as exc:
        raise AnsibleFilterError(f"sparkops.inference.env_file: {exc}") from exc


class FilterModule:
    """sparkops.inference environment file filter."""

    def filters(self) -> dict[str, Callable[..., t.Any]]:
        return {"env_file": env_file_filter}
