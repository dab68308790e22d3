# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
name: vllm_serve_argv
short_description: The arguments of vllm serve, from the vllm_serve role's variables
version_added: 1.0.0
author:
  - sparkops.inference developers (@sparkops)
description:
  - Returns the arguments the vllm_serve role runs C(vllm) with, C(serve) first - the model, its revision and served
    name, host and port, the parallel sizes, the memory share and the KV cache type; C(--max-model-len) where set;
    C(--reasoning-parser) and C(--tool-call-parser) (with C(--enable-auto-tool-choice)) where not empty;
    C(--speculative-config) (compact JSON) where V(vllm_serve_speculative) is not empty; the
    distributed backend (C(ray), or C(mp) with the node count, this node's rank and the head's address, a rank above 0
    C(--headless)); the extra arguments last.
  - Every value goes in as its text, a number as Jinja's C(string) filter writes it.
  - Fails, naming the variable, on a missing or unknown variable, a list or a mapping or a boolean where one argument
    goes, extra arguments that are not a list, a backend other than C(ray) or C(mp), and (backend C(mp)) a rank that is
    not one of the nodes', and a V(vllm_serve_speculative) that is not a mapping of JSON values with a C(method), names
    a draft model that is not a Hugging Face repository id, or comes with C(--speculative-config) in the extra
    arguments too.
options:
  _input:
    description:
      - The role's variables by name - V(vllm_serve_model), V(vllm_serve_revision), V(vllm_serve_served_model_name),
        V(vllm_serve_host), V(vllm_serve_port), V(vllm_serve_tensor_parallel_size),
        V(vllm_serve_pipeline_parallel_size), V(vllm_serve_gpu_memory_utilization), V(vllm_serve_kv_cache_dtype),
        V(vllm_serve_max_model_len) (null, not passed), V(vllm_serve_reasoning_parser),
        V(vllm_serve_tool_call_parser), V(vllm_serve_speculative) (empty, not passed), V(vllm_serve_backend),
        V(vllm_serve_head_ip), V(vllm_serve_master_port) and V(vllm_serve_extra_args).
    type: dict
    required: true
  nnodes:
    description: The number of nodes of the group (C(--nnodes), backend C(mp)).
    type: int
    default: 1
  node_rank:
    description: This node's rank in the group, the head 0 (C(--node-rank), backend C(mp)); -1 for a node outside it.
    type: int
    default: 0
"""

EXAMPLES = r"""
# ['serve', 'Qwen/Qwen3-8B', '--revision', 'main', ..., '--distributed-executor-backend', 'mp', '--nnodes', '2',
#  '--node-rank', '1', '--master-addr', '192.168.100.10', '--master-port', '29501', '--headless']
- name: The arguments of a worker's vLLM
  ansible.builtin.set_fact:
    vllm_args: >-
      {{ {'vllm_serve_model': 'Qwen/Qwen3-8B', 'vllm_serve_revision': 'main', 'vllm_serve_served_model_name': 'qwen3-8b',
          'vllm_serve_host': '0.0.0.0', 'vllm_serve_port': 8000, 'vllm_serve_tensor_parallel_size': 2,
          'vllm_serve_pipeline_parallel_size': 1, 'vllm_serve_gpu_memory_utilization': 0.8,
          'vllm_serve_kv_cache_dtype': 'auto', 'vllm_serve_max_model_len': none, 'vllm_serve_reasoning_parser': '',
          'vllm_serve_tool_call_parser': '', 'vllm_serve_speculative': {}, 'vllm_serve_backend': 'mp', 'vllm_serve_head_ip': '192.168.100.10',
          'vllm_serve_master_port': 29501, 'vllm_serve_extra_args': []}
         | sparkops.inference.vllm_serve_argv(nnodes=2, node_rank=1) }}
"""

RETURN = r"""
_value:
  description: The arguments, C(serve) first.
  type: list
  elements: str
"""

import typing as t
from collections.abc import Callable

from ansible.errors import AnsibleFilterError


def vllm_serve_argv_filter(variables: t.Any, nnodes: t.Any = 1, node_rank: t.Any = 0) -> list[str]:
    # Imported when called, not at the top (docs/architecture.md, tests/unit/plugins/filter/test_filter_module_imports.py).
    from ansible_collections.sparkops.inference.plugins.plugin_utils._vllm_serve_argv import VllmServeArgvError, VllmServeInputs, vllm_serve_argv

    try:
        return vllm_serve_argv(VllmServeInputs.from_vars(variables, nnodes=nnodes, node_rank=node_rank))
    except VllmServeArgvError as exc:
        raise AnsibleFilterError(f"sparkops.inference.vllm_serve_argv: {exc}") from None


class FilterModule:
    """sparkops.inference vllm serve command line filter."""

    def filters(self) -> dict[str, Callable[..., t.Any]]:
        return {"vllm_serve_argv": vllm_serve_argv_filter}
