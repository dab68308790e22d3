# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The vllm_serve_argv filter: wiring to the _vllm_serve_argv module util, and errors that name the filter and the variable."""

from __future__ import annotations

import typing as t

import pytest
from ansible.errors import AnsibleFilterError
from ansible_collections.sparkops.inference.plugins.filter.vllm_serve_argv import FilterModule

vllm_serve_argv = FilterModule().filters()["vllm_serve_argv"]


def role_vars(**overrides: t.Any) -> dict[str, t.Any]:
    values: dict[str, t.Any] = {
        "model": "Qwen/Qwen3-8B", "revision": "main", "served_model_name": "qwen3-8b", "host": "0.0.0.0", "port": 8000,
        "tensor_parallel_size": 2, "pipeline_parallel_size": 1, "gpu_memory_utilization": 0.85, "kv_cache_dtype": "fp8",
        "max_model_len": 40960, "reasoning_parser": "", "tool_call_parser": "", "backend": "mp", "head_ip": "10.0.0.1",
        "master_port": 29501, "speculative": {}, "extra_args": ["--enforce-eager"],
    }  # fmt: skip
    values.update(overrides)
    return {f"vllm_serve_{name}": value for name, value in values.items()}


def test_filter_returns_a_workers_arguments() -> None:
    assert vllm_serve_argv(role_vars(), nnodes=2, node_rank=1) == [
        "serve", "Qwen/Qwen3-8B", "--revision", "main", "--served-model-name", "qwen3-8b", "--host", "0.0.0.0", "--port", "8000",
        "--tensor-parallel-size", "2", "--pipeline-parallel-size", "1", "--gpu-memory-utilization", "0.85", "--kv-cache-dtype", "fp8",
        "--max-model-len", "40960", "--distributed-executor-backend", "mp", "--nnodes", "2", "--node-rank", "1",
        "--master-addr", "10.0.0.1", "--master-port", "29501", "--headless", "--enforce-eager",
    ]  # fmt: skip


def test_filter_defaults_to_a_single_node_rank_0() -> None:
    got = vllm_serve_argv(role_vars())
    assert got[got.index("--nnodes") :] == ["--nnodes", "1", "--node-rank", "0", "--master-addr", "10.0.0.1", "--master-port", "29501", "--enforce-eager"]


@pytest.mark.parametrize(
    ("value", "kwargs", "said"),
    [
        (None, {}, "the role's variables must be a dict"),
        (role_vars(tool_call_parser=None), {}, "vllm_serve_tool_call_parser must be a string or a number"),
        (role_vars(backend="ray", extra_args="--enforce-eager"), {}, "vllm_serve_extra_args must be a list of arguments"),
        (role_vars(), {"nnodes": 2, "node_rank": -1}, "node_rank -1 is not a rank of the 2 node(s)"),
        (role_vars(speculative={"method": "eagle3", "model": "./head"}), {}, "vllm_serve_speculative.model must be the draft model's Hugging Face"),
    ],
)
def test_filter_errors_name_the_filter_and_the_variable(value: t.Any, kwargs: dict[str, t.Any], said: str) -> None:
    with pytest.raises(AnsibleFilterError) as caught:
        vllm_serve_argv(value, **kwargs)
    assert str(caught.value).startswith("sparkops.inference.vllm_serve_argv: ") and said in str(caught.value)
