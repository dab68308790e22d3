# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The arguments of ``vllm serve`` (after the program) that the vllm_serve role's unit runs, from the role's
variables (its ``vllm_serve_argv`` filter).

Every value goes in as its text (a number as Python and Jinja's ``string`` write it), so that vLLM reads exactly
what the variable holds; whether vLLM accepts it is the role's argument check's job (``sparkops-vllm-args-check``),
whether systemd reads it back exactly is ``systemd_exec_args``'s. What is refused here, naming the variable, is what
cannot be an argument at all: a missing variable, a list or a mapping where one word goes, a boolean, an unknown
backend, a rank that is not one of the nodes', a speculative configuration that cannot be one (_vllm_speculative).

Note that this plugin util is **PRIVATE** to the collection. It can have breaking changes at any time.
"""

from __future__ import annotations

import typing as t
from collections.abc import Mapping
from dataclasses import dataclass

from ansible_collections.sparkops.inference.plugins.plugin_utils._role_argv import argument_list, argument_text, check_names
from ansible_collections.sparkops.inference.plugins.plugin_utils._vllm_speculative import SpeculativeConfigError, speculative_config_json

PREFIX = "vllm_serve_"
BACKENDS = ("ray", "mp")
# The role's variables the command line is made of (without PREFIX), as VllmServeInputs' fields.
WORDS = (
    "model",
    "revision",
    "served_model_name",
    "host",
    "port",
    "tensor_parallel_size",
    "pipeline_parallel_size",
    "gpu_memory_utilization",
    "kv_cache_dtype",
    "reasoning_parser",
    "tool_call_parser",
    "head_ip",
    "master_port",
)
VARIABLES = (*WORDS, "max_model_len", "speculative", "backend", "extra_args")


class VllmServeArgvError(ValueError):
    """A value that cannot be an argument of ``vllm serve``; the message names its variable and shows the value."""


def _count(value: t.Any, name: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise VllmServeArgvError(f"{name} must be an integer of at least {minimum}, got {value!r}")
    return value


@dataclass(frozen=True)
class VllmServeInputs:
    """What ``vllm serve``'s arguments are made of: each word's text (the role's ``vllm_serve_*`` variable of the same
    name), and this node's place in an mp group (``nnodes`` nodes, the head rank 0)."""

    model: str
    revision: str
    served_model_name: str
    host: str
    port: str
    tensor_parallel_size: str
    pipeline_parallel_size: str
    gpu_memory_utilization: str
    kv_cache_dtype: str
    reasoning_parser: str
    tool_call_parser: str
    head_ip: str
    master_port: str
    max_model_len: str | None
    speculative: str | None
    backend: str
    extra_args: tuple[str, ...]
    nnodes: int
    node_rank: int

    @classmethod
    def from_vars(cls, variables: Mapping[str, t.Any], *, nnodes: t.Any, node_rank: t.Any) -> VllmServeInputs:
        """The inputs from the role's variables (``vllm_serve_model``, ... by name, as :data:`VARIABLES` lists them
        without their prefix), the node count and this node's rank (-1 on a node outside the group, refused in mp
        mode). Raises :class:`VllmServeArgvError` naming the variable that is missing, unknown or cannot be an
        argument."""
        check_names(variables, PREFIX, VARIABLES, VllmServeArgvError)
        words = {field: argument_text(variables[PREFIX + field], PREFIX + field, VllmServeArgvError) for field in WORDS}
        backend = variables[PREFIX + "backend"]
        if backend not in BACKENDS:
            raise VllmServeArgvError(f"{PREFIX}backend must be one of {', '.join(BACKENDS)}, got {backend!r}")
        max_model_len = variables[PREFIX + "max_model_len"]
        nodes = _count(nnodes, "nnodes (the group's node count)", 1)
        rank = _count(node_rank, "node_rank (this node's rank)", -1)
        if backend == "mp" and not 0 <= rank < nodes:
            raise VllmServeArgvError(
                f"node_rank {rank} is not a rank of the {nodes} node(s) of the mp group (the first host of spark_head, then spark_workers): "
                "this host is not one of them"
            )
        extra_args = argument_list(variables[PREFIX + "extra_args"], PREFIX + "extra_args", VllmServeArgvError)
        try:
            speculative = speculative_config_json(variables[PREFIX + "speculative"], extra_args)
        except SpeculativeConfigError as exc:
            raise VllmServeArgvError(str(exc)) from None
        return cls(
            **words,
            max_model_len=None if max_model_len is None else argument_text(max_model_len, PREFIX + "max_model_len", VllmServeArgvError),
            speculative=speculative,
            backend=str(backend),
            extra_args=extra_args,
            nnodes=nodes,
            node_rank=rank,
        )


def vllm_serve_argv(inputs: VllmServeInputs) -> list[str]:
    """``vllm serve``'s arguments, ``serve`` first: the model and its serving flags, the optional ones where set
    (``--max-model-len``; ``--reasoning-parser``; ``--tool-call-parser`` with ``--enable-auto-tool-choice``;
    ``--speculative-config``), the
    distributed backend (Ray; or mp with this node's rank, the workers ``--headless``), the extra arguments last."""
    argv = [
        "serve", inputs.model, "--revision", inputs.revision, "--served-model-name", inputs.served_model_name,
        "--host", inputs.host, "--port", inputs.port,
        "--tensor-parallel-size", inputs.tensor_parallel_size,
        "--pipeline-parallel-size", inputs.pipeline_parallel_size,
        "--gpu-memory-utilization", inputs.gpu_memory_utilization,
        "--kv-cache-dtype", inputs.kv_cache_dtype,
    ]  # fmt: skip
    if inputs.max_model_len is not None:
        argv += ["--max-model-len", inputs.max_model_len]
    if inputs.reasoning_parser:
        argv += ["--reasoning-parser", inputs.reasoning_parser]
    if inputs.tool_call_parser:
        argv += ["--tool-call-parser", inputs.tool_call_parser, "--enable-auto-tool-choice"]
    if inputs.speculative is not None:
        argv += ["--speculative-config", inputs.speculative]
    if inputs.backend == "ray":
        argv += ["--distributed-executor-backend", "ray"]
    else:
        argv += ["--distributed-executor-backend", "mp", "--nnodes", str(inputs.nnodes), "--node-rank", str(inputs.node_rank)]
        argv += ["--master-addr", inputs.head_ip, "--master-port", inputs.master_port]
        if inputs.node_rank > 0:
            argv.append("--headless")
    return argv + list(inputs.extra_args)
