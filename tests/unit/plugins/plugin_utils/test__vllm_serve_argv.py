# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""``vllm serve``'s arguments from the vllm_serve role's variables (plugins/plugin_utils/_vllm_serve_argv.py): each
backend and rank, the optional flags, the extra arguments last, and refusals that name the variable."""

from __future__ import annotations

import dataclasses
import typing as t

import pytest
from ansible_collections.sparkops.inference.plugins.plugin_utils._vllm_serve_argv import (
    VARIABLES,
    VllmServeArgvError,
    VllmServeInputs,
    vllm_serve_argv,
)

SERVE = [
    "serve", "Qwen/Qwen3.5-122B-A10B-FP8", "--revision", "main", "--served-model-name", "qwen3.5-122b",
    "--host", "0.0.0.0", "--port", "8000", "--tensor-parallel-size", "2", "--pipeline-parallel-size", "1",
    "--gpu-memory-utilization", "0.8", "--kv-cache-dtype", "auto",
]  # fmt: skip
MP = ["--distributed-executor-backend", "mp", "--nnodes", "2"]
MASTER = ["--master-addr", "192.168.100.10", "--master-port", "29501"]


def role_vars(**overrides: t.Any) -> dict[str, t.Any]:
    """The role's defaults as the lab sets them (numbers as Ansible templates them), ``overrides`` by short name."""
    values: dict[str, t.Any] = {
        "model": "Qwen/Qwen3.5-122B-A10B-FP8",
        "revision": "main",
        "served_model_name": "qwen3.5-122b",
        "host": "0.0.0.0",
        "port": 8000,
        "tensor_parallel_size": 2,
        "pipeline_parallel_size": 1,
        "gpu_memory_utilization": 0.8,
        "kv_cache_dtype": "auto",
        "max_model_len": None,
        "reasoning_parser": "",
        "tool_call_parser": "",
        "backend": "ray",
        "head_ip": "192.168.100.10",
        "master_port": 29501,
        "speculative": {},
        "extra_args": [],
    }
    values.update(overrides)
    return {f"vllm_serve_{name}": value for name, value in values.items()}


def argv(nnodes: int = 2, node_rank: int = 0, **overrides: t.Any) -> list[str]:
    return vllm_serve_argv(VllmServeInputs.from_vars(role_vars(**overrides), nnodes=nnodes, node_rank=node_rank))


def test_ray_backend_on_the_head() -> None:
    assert argv() == [*SERVE, "--distributed-executor-backend", "ray"]


def test_ray_backend_ignores_the_rank_of_a_node_outside_the_group() -> None:
    assert argv(node_rank=-1) == [*SERVE, "--distributed-executor-backend", "ray"]


def test_mp_backend_rank_0_serves_the_api() -> None:
    assert argv(backend="mp") == [*SERVE, *MP, "--node-rank", "0", *MASTER]


def test_mp_backend_ranks_above_0_are_headless() -> None:
    got = argv(nnodes=3, node_rank=2, backend="mp")
    assert got == [*SERVE, "--distributed-executor-backend", "mp", "--nnodes", "3", "--node-rank", "2", *MASTER, "--headless"]


def test_optional_flags_in_order_where_set() -> None:
    got = argv(max_model_len=262144, reasoning_parser="qwen3", tool_call_parser="qwen3_coder")
    assert got == [
        *SERVE, "--max-model-len", "262144", "--reasoning-parser", "qwen3",
        "--tool-call-parser", "qwen3_coder", "--enable-auto-tool-choice", "--distributed-executor-backend", "ray",
    ]  # fmt: skip


def test_a_tool_call_parser_alone_enables_auto_tool_choice() -> None:
    got = argv(tool_call_parser="hermes")
    assert got[len(SERVE) :] == ["--tool-call-parser", "hermes", "--enable-auto-tool-choice", "--distributed-executor-backend", "ray"]
    assert "--reasoning-parser" not in got and "--max-model-len" not in got


def test_speculative_decoding_as_compact_json_before_the_backend_and_none_when_empty() -> None:
    got = argv(backend="mp", speculative={"num_speculative_tokens": 3, "method": "ngram", "prompt_lookup_max": 4}, extra_args=["--x"])
    config = '{"method":"ngram","num_speculative_tokens":3,"prompt_lookup_max":4}'
    assert got == [*SERVE, "--speculative-config", config, *MP, "--node-rank", "0", *MASTER, "--x"]
    assert "--speculative-config" not in argv(speculative=None) and argv(speculative={}) == argv()


def test_extra_args_come_last_as_they_are() -> None:
    extra = ["--chat-template", "/etc/vllm/100% qwen.jinja", "--override-generation-config", '{"temperature": $T}', "--g", ""]
    assert argv(node_rank=1, backend="mp", extra_args=extra) == [*SERVE, *MP, "--node-rank", "1", *MASTER, "--headless", *extra]


def test_numbers_and_strings_go_in_as_their_text() -> None:
    """A value from ``-e`` is a string, one from YAML a number: both reach vLLM as that text (Jinja's ``string``)."""
    got = argv(port="8001", gpu_memory_utilization="0.90", max_model_len="32768", master_port="29502", backend="mp", extra_args=["--max-num-seqs", 8, 0.5])
    assert got[got.index("--port") + 1] == "8001" and got[got.index("--gpu-memory-utilization") + 1] == "0.90"
    assert got[got.index("--max-model-len") + 1] == "32768" and got[got.index("--master-port") + 1] == "29502"
    assert got[-3:] == ["--max-num-seqs", "8", "0.5"]
    assert all(isinstance(word, str) for word in got)


def test_the_inputs_are_frozen() -> None:
    inputs = VllmServeInputs.from_vars(role_vars(extra_args=["--a"]), nnodes=1, node_rank=0)
    assert inputs.extra_args == ("--a",) and inputs.max_model_len is None and inputs.port == "8000"
    with pytest.raises(dataclasses.FrozenInstanceError):
        inputs.backend = "mp"  # type: ignore[misc]


@pytest.mark.parametrize(
    ("overrides", "said"),
    [
        ({"port": True}, "vllm_serve_port must be a string or a number, got True"),
        ({"model": None}, "vllm_serve_model must be a string or a number, got None"),
        ({"served_model_name": ["a", "b"]}, "vllm_serve_served_model_name must be a string or a number"),
        ({"reasoning_parser": {"name": "qwen3"}}, "vllm_serve_reasoning_parser must be a string or a number"),
        ({"max_model_len": [1024]}, "vllm_serve_max_model_len must be a string or a number"),
        ({"backend": "pp"}, "vllm_serve_backend must be one of ray, mp, got 'pp'"),
        ({"extra_args": "--enforce-eager"}, "vllm_serve_extra_args must be a list of arguments, got '--enforce-eager'"),
        ({"extra_args": {"--enforce-eager": True}}, "vllm_serve_extra_args must be a list of arguments"),
        ({"extra_args": ["--a", None]}, "vllm_serve_extra_args[1] must be a string or a number, got None"),
    ],
)
def test_a_value_that_cannot_be_an_argument_is_refused_naming_its_variable(overrides: dict[str, t.Any], said: str) -> None:
    with pytest.raises(VllmServeArgvError) as caught:
        VllmServeInputs.from_vars(role_vars(**overrides), nnodes=2, node_rank=0)
    assert said in str(caught.value)


def test_missing_and_unknown_variables_are_named() -> None:
    variables = role_vars()
    del variables["vllm_serve_port"]
    variables["vllm_serve_prot"] = 8000
    with pytest.raises(VllmServeArgvError, match=r"^unknown variable\(s\) vllm_serve_prot; missing vllm_serve_port \(the variables are vllm_serve_model, "):
        VllmServeInputs.from_vars(variables, nnodes=2, node_rank=0)
    with pytest.raises(VllmServeArgvError, match="must be a dict of vllm_serve_"):
        VllmServeInputs.from_vars(["vllm_serve_model"], nnodes=2, node_rank=0)  # type: ignore[arg-type]
    assert len(VARIABLES) == len(role_vars())


@pytest.mark.parametrize(
    ("nnodes", "node_rank", "said"),
    [
        (2, -1, "node_rank -1 is not a rank of the 2 node(s) of the mp group"),
        (2, 2, "node_rank 2 is not a rank of the 2 node(s) of the mp group"),
        (0, 0, "nnodes (the group's node count) must be an integer of at least 1, got 0"),
        (2, "1", "node_rank (this node's rank) must be an integer of at least -1, got '1'"),
        (True, 0, "nnodes (the group's node count) must be an integer of at least 1, got True"),
    ],
)
def test_an_mp_rank_outside_the_group_is_refused(nnodes: t.Any, node_rank: t.Any, said: str) -> None:
    with pytest.raises(VllmServeArgvError) as caught:
        VllmServeInputs.from_vars(role_vars(backend="mp"), nnodes=nnodes, node_rank=node_rank)
    assert said in str(caught.value)
