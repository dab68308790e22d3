# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
name: nccl_check
short_description: Read and judge the log of the fabric gate's NCCL all-reduce
version_added: 1.0.0
author:
  - sparkops.inference developers (@sparkops)
description:
  - Reads the output of C(roles/nccl_env/files/sparkops-nccl-check) run with C(NCCL_DEBUG=INFO) - the NCCL version in
    use, the network (C(IB) or C(Socket)), its interfaces and RDMA devices, the transport of each channel, NCCL's
    warnings and the check's own result line with the bus bandwidth - and judges it.
options:
  _input:
    description: The log (rank 0's, or every rank's mixed).
    type: str
    required: true
  expect:
    description: The network the all-reduce must use, V(ib) (RoCE) or V(socket).
    type: str
    default: ib
    choices: [ib, socket]
  min_busbw_gbps:
    description: The bus bandwidth (GB/s) the largest message must reach; 0 checks none.
    type: float
    default: 0
  node:
    description: The node the failures name.
    type: str
    default: ""
"""

EXAMPLES = r"""
- name: Judge the all-reduce
  ansible.builtin.assert:
    that: (rank0.stdout | sparkops.inference.nccl_check(expect='ib', min_busbw_gbps=10)).failures | length == 0
"""

RETURN = r"""
_value:
  description: What the log says (C(nccl_version), C(network), C(interfaces), C(ib_devices), C(transports), C(busbw_gbps), ...) and
    C(failures), one line per problem naming the node and the figure.
  type: dict
"""

import typing as t
from collections.abc import Callable

from ansible.errors import AnsibleFilterError


def nccl_check_filter(text: t.Any, expect: str = "ib", min_busbw_gbps: t.Any = 0, node: str = "") -> dict[str, t.Any]:
    # Imported when called, not at the top (docs/architecture.md, tests/unit/plugins/filter/test_filter_module_imports.py).
    from ansible_collections.sparkops.inference.plugins.plugin_utils._nccl_check import nccl_verdict, parse_nccl_log

    if not isinstance(text, str):
        raise AnsibleFilterError(f"sparkops.inference.nccl_check: the input must be the check's output, not {type(text).__name__}")
    try:
        log = parse_nccl_log(text)
        return {**log.as_dict(), "failures": nccl_verdict(log, expect=expect, min_busbw_gbps=float(min_busbw_gbps), node=node)}
    except (ValueError, TypeError) as exc:
        raise AnsibleFilterError(f"sparkops.inference.nccl_check: {exc}") from exc


class FilterModule:
    """sparkops.inference NCCL check filter."""

    def filters(self) -> dict[str, Callable[..., t.Any]]:
        return {"nccl_check": nccl_check_filter}
