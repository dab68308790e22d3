# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
name: systemd_ip_allow
short_description: IP addresses as systemd IPAddressAllow= entries
version_added: 1.0.0
author:
  - sparkops.inference developers (@sparkops)
description:
  - Returns each address as an C(IPAddressAllow=) entry admitting that host only, C(/32) (IPv4) or C(/128) (IPv6);
    with O(networks), a network written with its prefix is taken too (host bits clear, at least C(/8) for IPv4 and
    C(/32) for IPv6). Each entry comes once, in order.
  - Fails, naming the variable (and the label of a dict's entry, such as a host name), on anything else - a systemd
    keyword such as C(any) or C(localhost), a host name, a line break, the unspecified address.
options:
  _input:
    description: The addresses, as a list or as a dict of a label (a host name) to an address.
    type: raw
    required: true
  name:
    description: The variable the addresses come from, named in errors.
    type: str
    default: the addresses
  networks:
    description: Also take networks (C(10.1.2.0/24)).
    type: bool
    default: false
"""

EXAMPLES = r"""
# IPAddressAllow=localhost 192.168.100.10/32 192.168.100.11/32 10.9.0.0/24
- name: Write the unit
  ansible.builtin.copy:
    content: |
      [Service]
      IPAddressAllow=localhost {{ ({'spark-head': '192.168.100.10', 'spark-worker1': '192.168.100.11'}
                                   | sparkops.inference.systemd_ip_allow(name='ray_cluster_node_ip'))
                                  + (['10.9.0.0/24'] | sparkops.inference.systemd_ip_allow(name='ray_cluster_allowed_addresses', networks=true))
                                  | join(' ') }}
      IPAddressDeny=any
    dest: /etc/systemd/system/example.service
    mode: "0644"
"""

RETURN = r"""
_value:
  description: The entries, such as C(192.168.100.10/32).
  type: list
  elements: str
"""

import typing as t
from collections.abc import Callable

from ansible.errors import AnsibleFilterError


def systemd_ip_allow_filter(addresses: t.Any, name: str = "the addresses", networks: bool = False) -> list[str]:
    # Imported when called, not at the top (docs/architecture.md, tests/unit/plugins/filter/test_filter_module_imports.py).
    from ansible_collections.sparkops.inference.plugins.plugin_utils._systemd_unit import SystemdUnitError, flag, ip_address_allow

    try:
        return ip_address_allow(addresses, str(name), networks=flag(networks, "networks"))
    except SystemdUnitError as exc:
        raise AnsibleFilterError(f"sparkops.inference.systemd_ip_allow: {exc}") from None


class FilterModule:
    """sparkops.inference systemd IPAddressAllow filter."""

    def filters(self) -> dict[str, Callable[..., t.Any]]:
        return {"systemd_ip_allow": systemd_ip_allow_filter}
