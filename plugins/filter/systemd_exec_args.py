# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
name: systemd_exec_args
short_description: Write arguments as the words of a systemd Exec line
version_added: 1.0.0
author:
  - sparkops.inference developers (@sparkops)
description:
  - Writes each argument as one word of an C(ExecStart=) (C(ExecStartPre=), C(ExecStop=), ...) line, so that systemd
    runs exactly these arguments, whatever they hold; the words are separated by spaces.
  - A word made only of letters, digits and C(_@%+=:,./-) is written as it is (C(%) as C(%%)); any other is
    single-quoted, with C(\) written C(\\), C(') written C(\'), C(%) written C(%%) and C($) written C($$). systemd
    reads C C(\) escapes inside quotes too (C('\n') is a newline), expands C(%) specifiers and C($) variables in
    quoted words too, and reads a bare C(;) as the start of another command.
  - Fails, naming the variable, on an argument with a line break, a NUL or another control character (a line break
    would start a new directive, such as C(ExecStartPre=/bin/sh -c ...) run as root), and on an argument that is not
    a string or a number.
options:
  _input:
    description: The arguments; a string or a number is one argument.
    type: list
    elements: str
    required: true
  name:
    description: What the arguments are, named in errors (the variable they come from).
    type: str
    default: the command line
  sources:
    description:
      - Variable name to the value or values it put in the arguments. An argument that cannot be written names the
        first variable whose value it holds, instead of O(name).
    type: dict
  command:
    description: The first argument is the program and must be an absolute path (a leading C(-), C(@), C(:), C(+) or
      C(!) would be read as a prefix).
    type: bool
    default: false
  expand_variables:
    description: Write C($) as C($$), as Exec lines need. V(false) for C(Environment=), whose words are split and
      unquoted the same way but not expanded.
    type: bool
    default: true
"""

EXAMPLES = r"""
# ExecStart=/opt/sparkops/ray/bin/vllm serve Qwen/Qwen3-8B --chat-template '/etc/vllm/100%% chat.jinja'
- name: Write the unit
  ansible.builtin.copy:
    content: |
      [Service]
      ExecStart={{ ['/opt/sparkops/ray/bin/vllm', 'serve', 'Qwen/Qwen3-8B', '--chat-template', '/etc/vllm/100% chat.jinja']
                   | sparkops.inference.systemd_exec_args(name='vllm_serve_extra_args', command=true) }}
    dest: /etc/systemd/system/example.service
    mode: "0644"
"""

RETURN = r"""
_value:
  description: The words, separated by spaces.
  type: str
"""

import typing as t
from collections.abc import Callable

from ansible.errors import AnsibleFilterError


def systemd_exec_args_filter(
    argv: t.Any,
    name: str = "the command line",
    sources: t.Mapping[str, t.Any] | None = None,
    command: bool = False,
    expand_variables: bool = True,
) -> str:
    # Imported when called, not at the top (docs/architecture.md, tests/unit/plugins/filter/test_filter_module_imports.py).
    from ansible_collections.sparkops.inference.plugins.plugin_utils._systemd_unit import SystemdUnitError, exec_args, flag

    if sources is not None and not isinstance(sources, t.Mapping):
        raise AnsibleFilterError(f"sparkops.inference.systemd_exec_args: sources must be a dict, not {type(sources).__name__}")
    try:
        return exec_args(argv, str(name), sources=sources, command=flag(command, "command"), expand_variables=flag(expand_variables, "expand_variables"))
    except SystemdUnitError as exc:
        raise AnsibleFilterError(f"sparkops.inference.systemd_exec_args: {exc}") from None


class FilterModule:
    """sparkops.inference systemd Exec line filter."""

    def filters(self) -> dict[str, Callable[..., t.Any]]:
        return {"systemd_exec_args": systemd_exec_args_filter}
