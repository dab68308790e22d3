# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
name: fabric_env
short_description: Environment that keeps NCCL, Gloo, UCX, MPI, Ray and vLLM on the fabric
version_added: 1.0.0
author:
  - sparkops.inference developers (@sparkops)
description:
  - Turns what M(sparkops.inference.roce_info) found for a host's fabric address into the environment variables
    the host's Ray and vLLM processes need, namely C(NCCL_SOCKET_IFNAME), C(GLOO_SOCKET_IFNAME), C(TP_SOCKET_IFNAME),
    C(UCX_NET_DEVICES), C(OMPI_MCA_btl_tcp_if_include), C(NCCL_IB_DISABLE), C(NCCL_IB_HCA), C(NCCL_IB_GID_INDEX),
    C(NCCL_DEBUG), C(VLLM_HOST_IP), C(MASTER_ADDR) and C(VLLM_CONFIG_ROOT), plus any extra variables.
  - With RDMA devices (transport C(ib)) NCCL runs over RoCE on both twins of the port; without, NCCL is told to use
    sockets on the fabric interface (C(NCCL_IB_DISABLE=1)).
options:
  _input:
    description: The result of M(sparkops.inference.roce_info) for the host.
    type: dict
    required: true
  fabric_ip:
    description: The host's fabric address (C(VLLM_HOST_IP)).
    type: str
    required: true
  master_addr:
    description: The head's fabric address (C(MASTER_ADDR)).
    type: str
    required: true
  vllm_config_root:
    description: Directory holding vLLM's C(ray_non_carry_over_env_vars.json) (C(VLLM_CONFIG_ROOT)).
    type: str
    required: true
  transport:
    description: C(auto) follows what was detected; C(ib) or C(socket) force one.
    type: str
    default: auto
    choices: [auto, ib, socket]
  interface:
    description: Override the detected fabric interface.
    type: str
  ib_hca:
    description: Override the detected RDMA devices (both twins of the port).
    type: list
    elements: str
  ib_gid_index:
    description: Override the detected RoCE v2 GID index.
    type: int
  nccl_debug:
    description: C(NCCL_DEBUG) level; C(INFO) shows whether NCCL picked C(NET/IB) or C(NET/Socket).
    type: str
    default: WARN
  extra:
    description: More variables to set, name to value.
    type: dict
  nccl_library:
    description:
      - C(bundled) leaves the engine on the NCCL of its pip wheels (nvidia-nccl-cuXX, which torch links).
      - C(system) sets C(LD_PRELOAD) (torch's C(libnccl.so.2)) and C(VLLM_NCCL_SO_PATH) (vLLM's own NCCL wrapper) to
        O(system_nccl_path).
    type: str
    default: bundled
    choices: [bundled, system]
  system_nccl_path:
    description: Absolute path of the system's C(libnccl.so.2); needed when O(nccl_library=system).
    type: str
"""

EXAMPLES = r"""
- name: Compute the fabric environment
  ansible.builtin.set_fact:
    nccl_env_vars: >-
      {{ roce | sparkops.inference.fabric_env(fabric_ip=sparkops_fabric_ip, master_addr='192.168.100.10',
                                               vllm_config_root='/etc/sparkops/vllm') }}
"""

RETURN = r"""
_value:
  description: Variable name to value, in the order they are written.
  type: dict
"""

import typing as t
from collections.abc import Callable

from ansible.errors import AnsibleFilterError


def fabric_env_filter(roce: t.Any, **kwargs: t.Any) -> dict[str, str]:
    # Imported when called, not at the top (docs/architecture.md, tests/unit/plugins/filter/test_filter_module_imports.py).
    from ansible_collections.sparkops.inference.plugins.plugin_utils._fabric_env import FabricEnvError, fabric_env

    if not isinstance(roce, t.Mapping):
        raise AnsibleFilterError(f"sparkops.inference.fabric_env: the input must be the dict roce_info returned, not {type(roce).__name__}")
    try:
        return fabric_env(roce, **kwargs)
    except (FabricEnvError, TypeError) as exc:
        raise AnsibleFilterError(f"sparkops.inference.fabric_env: {exc}") from exc


class FilterModule:
    """sparkops.inference fabric filters."""

    def filters(self) -> dict[str, Callable[..., t.Any]]:
        return {"fabric_env": fabric_env_filter}
