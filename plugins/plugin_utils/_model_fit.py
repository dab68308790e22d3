# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Will the model fit, before a byte of it is downloaded: its shape (config.json) and weight bytes (the safetensors
index or headers) against the cluster's split (TP x PP), memory and disk.

The parallelism rules are vLLM 0.30.0's (read in the release wheel):
- the attention heads must be divisible by the tensor-parallel size (vllm/config/model.py:1424-1431);
- KV heads are split when there are at least as many as TP ranks (then TP must divide them), replicated otherwise
  (then they must divide TP) (vllm/model_executor/layers/linear.py:1047-1054, ``divide`` in
  vllm/distributed/utils.py:60-64);
- pipeline stages take ``layers // PP`` layers each, the remainder going to all but the last stage
  (vllm/distributed/utils.py:127-170): PP may not exceed the layers, and the largest stage sets the memory;
- at start vLLM needs KV cache for one sequence of ``max_model_len`` tokens within
  ``total memory x gpu_memory_utilization`` minus the weights and the activation peak.
Guessed (not from vLLM's source, marked so in the verdict): the activation peak and runtime overhead
(``overhead_bytes``, 4 GiB by default: the CUDA context, torch's allocator and the profile run's peak on a
100B-class MoE; vLLM measures it at start) and the disk margin (5 %).

config.json is untrusted input (issue 15): a figure that is not an integer (a string, a list, a float such as
``1e400``, which JSON reads as infinity) or is past :data:`MAX_CONFIG_INT`, or weights past :data:`MAX_WEIGHT_BYTES`,
is a problem of the verdict naming the field ("config.json is corrupt: ..."), and the split and memory are then not
checked; nothing raises, and no work grows with the figures.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

GIB = 1024**3
DEFAULT_OVERHEAD_BYTES = 4 * GIB
DEFAULT_DISK_MARGIN = 0.05
KV_DTYPE_BYTES = {"auto": 2, "bfloat16": 2, "float16": 2, "fp8": 1, "fp8_e4m3": 1, "fp8_e5m2": 1, "fp8_ds_mla": 1}
# The largest figure (layers, heads, head size, context) config.json may give: vLLM and torch hold them in 64-bit
# integers, and a real model's are far below (~100 layers, ~128 heads, ~10M tokens of context). Up to it, every
# figure computed here stays well inside a float.
MAX_CONFIG_INT = 2**63 - 1
# The largest weight size: safetensors offsets are 64-bit (16 EiB; a 1T-parameter model in BF16 is 2 TB).
MAX_WEIGHT_BYTES = 2**64 - 1
# How the config's fields are named in a problem; a multimodal model's are in text_config.
_FIGURES = ("num_hidden_layers", "num_attention_heads", "num_key_value_heads", "head_dim", "hidden_size", "max_position_embeddings")


@dataclass(frozen=True)
class ModelShape:
    """What config.json says about the model's layers and heads (None: not found), and its weights' bytes."""

    architecture: str | None
    num_layers: int | None
    attention_heads: int | None
    kv_heads: int | None
    head_dim: int | None
    kv_layers: int | None  # layers that keep a KV cache (all, except the linear-attention layers of hybrid models)
    max_position_embeddings: int | None
    weight_bytes: int
    problems: tuple[str, ...] = ()  # config.json's (or the weights') figures that no model has: it is corrupt


@dataclass(frozen=True)
class Cluster:
    """The split and what each node has: memory and free disk in bytes, by host."""

    tensor_parallel_size: int
    pipeline_parallel_size: int
    gpu_memory_utilization: float
    mem_total: dict[str, int]
    disk_free: dict[str, int]
    snapshot_bytes: int
    present_bytes: dict[str, int] = field(default_factory=dict)  # of the snapshot, already on the node
    max_model_len: int | None = None
    kv_cache_dtype: str = "auto"
    overhead_bytes: int = DEFAULT_OVERHEAD_BYTES
    disk_margin: float = DEFAULT_DISK_MARGIN

    def __post_init__(self) -> None:
        """Refuse a split or a figure no cluster can have, naming its variable (never a division by zero later)."""
        for name, value in (
            ("sparkops_tensor_parallel_size", self.tensor_parallel_size),
            ("sparkops_pipeline_parallel_size", self.pipeline_parallel_size),
        ):
            if _int(value) is None:
                raise ValueError(f"{name} must be a whole number of at least 1, not {value!r}")
        if self.max_model_len is not None and _int(self.max_model_len) is None:
            raise ValueError(f"vllm_serve_max_model_len must be a whole number of at least 1, not {self.max_model_len!r}")
        utilization = self.gpu_memory_utilization
        if isinstance(utilization, bool) or not isinstance(utilization, (int, float)) or not 0 < utilization <= 1:  # NaN fails too
            raise ValueError(f"sparkops_gpu_memory_utilization must be above 0 and at most 1, not {utilization!r}")
        for name, count in (("overhead_bytes", self.overhead_bytes), ("snapshot_bytes", self.snapshot_bytes)):
            if isinstance(count, bool) or not isinstance(count, int) or count < 0:
                raise ValueError(f"{name} must be a whole number of bytes, not {count!r}")
        if isinstance(self.disk_margin, bool) or not isinstance(self.disk_margin, (int, float)) or not 0 <= self.disk_margin < math.inf:
            raise ValueError(f"the disk margin must be a finite fraction of at least 0, not {self.disk_margin!r}")


@dataclass
class Verdict:
    problems: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    figures: dict[str, Any] = field(default_factory=dict)

    @property
    def fits(self) -> bool:
        return not self.problems


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _excerpt(value: Any, limit: int = 60) -> str:
    """A value of config.json for a message, short whatever its size: an integer by its digits, a string, float or
    bool as written, an object or array by its kind."""
    if isinstance(value, int) and not isinstance(value, bool):
        if value.bit_length() > 3 * limit:  # over ~55 digits: no need to write them all (nor to hit Python's 4300)
            return f"an integer of {value.bit_length()} bits"
        return str(value)
    if isinstance(value, str):
        return repr(value if len(value) <= limit else value[:limit] + "...") + " (a string)"
    if isinstance(value, (float, bool)):
        return f"{value!r} (a {type(value).__name__})"
    return "a JSON object" if isinstance(value, dict) else "a JSON array" if isinstance(value, list) else f"a {type(value).__name__}"


def _figures(text: dict[str, Any], where: str, problems: list[str]) -> dict[str, int | None]:
    """config.json's figures: None when absent, null or not positive (not given); a problem (and None) when not an
    integer or past :data:`MAX_CONFIG_INT`."""
    figures: dict[str, int | None] = {}
    for key in _FIGURES:
        value = text.get(key)
        figures[key] = None
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int):
            problems.append(f"config.json is corrupt: {where}{key} is {_excerpt(value)}, not an integer")
        elif value > MAX_CONFIG_INT:
            problems.append(f"config.json is corrupt: {where}{key} is {_excerpt(value)}, more than any model has (at most {MAX_CONFIG_INT}, 64 bits)")
        else:
            figures[key] = _int(value)
    return figures


def shape_from_config(config: dict[str, Any], weight_bytes: int) -> ModelShape:
    """The shape from a Hugging Face config.json (a multimodal model's text model is in ``text_config``).

    Figures no model has are in the shape's ``problems`` (see the module doc)."""
    nested = config.get("text_config")
    text: dict[str, Any] = nested if isinstance(nested, dict) else config
    problems: list[str] = []
    figures = _figures(text, "text_config." if isinstance(nested, dict) else "", problems)
    if weight_bytes > MAX_WEIGHT_BYTES:
        problems.append(f"the model's weight bytes are {_excerpt(weight_bytes)}, more than any model has (at most {MAX_WEIGHT_BYTES}, 64 bits)")
    architectures = config.get("architectures")
    if not isinstance(architectures, list):
        architectures = []
    layers = figures["num_hidden_layers"]
    heads = figures["num_attention_heads"]
    kv_heads = figures["num_key_value_heads"] or heads  # no GQA: as many KV heads as heads
    head_dim = figures["head_dim"]
    hidden = figures["hidden_size"]
    if head_dim is None and hidden and heads:
        head_dim = hidden // heads
    kv_layers = layers
    layer_types = text.get("layer_types")
    if isinstance(layer_types, list) and layer_types:
        kv_layers = sum(1 for kind in layer_types if kind in ("full_attention", "attention", "sliding_attention"))
    return ModelShape(
        architecture=architectures[0] if architectures and isinstance(architectures[0], str) else None,
        num_layers=layers,
        attention_heads=heads,
        kv_heads=kv_heads,
        head_dim=head_dim,
        kv_layers=kv_layers,
        max_position_embeddings=figures["max_position_embeddings"],
        weight_bytes=weight_bytes,
        problems=tuple(problems),
    )


def largest_stage_layers(layers: int, pp: int) -> int:
    """The most layers a pipeline stage gets (vllm/distributed/utils.py:get_pp_indices, without an override)."""
    per_stage = layers // pp
    return per_stage + (1 if layers % pp and pp > 1 else 0)


def _gib(value: float) -> str:
    """GiB with one decimal; below 1 GiB in MiB (a small model's figures would read 0.0 GiB)."""
    return f"{value / GIB:.1f} GiB" if abs(value) >= GIB else f"{value / 1024**2:.1f} MiB"


def check_split(shape: ModelShape, tp: int, pp: int, verdict: Verdict) -> None:
    if shape.attention_heads is None or shape.num_layers is None:
        verdict.warnings.append("config.json gives no num_attention_heads or num_hidden_layers: the split was not checked")
        return
    if shape.attention_heads % tp:
        divisors = [n for n in range(1, min(shape.attention_heads, 64) + 1) if shape.attention_heads % n == 0]
        verdict.problems.append(
            f"sparkops_tensor_parallel_size ({tp}) must divide the model's {shape.attention_heads} attention heads "
            f"(vLLM refuses it); sizes that do: {', '.join(map(str, divisors))}"
        )
    kv = shape.kv_heads
    if kv is not None and ((kv >= tp and kv % tp) or (kv < tp and tp % kv)):
        verdict.problems.append(
            f"sparkops_tensor_parallel_size ({tp}) and the model's {kv} KV heads: vLLM splits KV heads when there are at "
            f"least as many as ranks (then {tp} must divide {kv}) and replicates them otherwise (then {kv} must divide {tp})"
        )
    if pp > shape.num_layers:
        verdict.problems.append(f"sparkops_pipeline_parallel_size ({pp}) is more than the model's {shape.num_layers} layers")
    elif shape.num_layers % pp:
        verdict.warnings.append(
            f"{shape.num_layers} layers over {pp} pipeline stages: uneven, the largest stage has "
            f"{largest_stage_layers(shape.num_layers, pp)} (the memory figures use it)"
        )


def check_memory(shape: ModelShape, cluster: Cluster, verdict: Verdict) -> None:
    tp, pp = cluster.tensor_parallel_size, cluster.pipeline_parallel_size
    layers = shape.num_layers
    stage_share = (largest_stage_layers(layers, pp) / layers) if layers else 1 / pp
    weights = shape.weight_bytes / tp * stage_share
    kv_per_token = None
    if shape.kv_layers is not None and shape.kv_heads and shape.head_dim:
        kv_layers = math.ceil(shape.kv_layers * stage_share)
        kv_per_token = 2 * kv_layers * max(1, shape.kv_heads // tp) * shape.head_dim * KV_DTYPE_BYTES.get(cluster.kv_cache_dtype, 2)
    else:
        verdict.warnings.append("config.json gives no layer, KV head or head size figures: the KV cache was not sized")
    max_len = cluster.max_model_len or shape.max_position_embeddings
    verdict.figures.update(
        weights_per_node_bytes=round(weights),
        kv_bytes_per_token=kv_per_token,
        max_model_len=max_len,
        overhead_bytes=cluster.overhead_bytes,
        overhead_guessed=True,
    )
    for host, total in sorted(cluster.mem_total.items()):
        budget = total * cluster.gpu_memory_utilization
        left = budget - weights - cluster.overhead_bytes
        verdict.figures.setdefault("kv_budget_bytes", {})[host] = round(left)
        if left <= 0:
            needed = (weights + cluster.overhead_bytes) / total
            verdict.problems.append(
                f"host {host}: the weights take {_gib(weights)} per node ({_gib(shape.weight_bytes)} over TP {tp} x PP {pp}) "
                f"plus about {_gib(cluster.overhead_bytes)} of activations and runtime, more than {_gib(budget)} "
                f"(MemTotal {_gib(total)} x sparkops_gpu_memory_utilization {cluster.gpu_memory_utilization}); "
                + (f"raise the utilization to at least {needed:.2f}, or " if needed < 0.95 else "")
                + "spread the model over more Sparks (a larger tensor- or pipeline-parallel size)"
            )
        elif kv_per_token and max_len and left < kv_per_token * max_len:
            fits = int(left // kv_per_token)
            verdict.problems.append(
                f"host {host}: one sequence of {max_len} tokens needs {_gib(kv_per_token * max_len)} of KV cache and "
                f"{_gib(left)} is left after the weights ({_gib(weights)}) and runtime (about {_gib(cluster.overhead_bytes)}); "
                f"set vllm_serve_max_model_len to at most {fits}, raise sparkops_gpu_memory_utilization, or use more Sparks"
            )


def check_disk(cluster: Cluster, verdict: Verdict) -> None:
    needed_total = cluster.snapshot_bytes * (1 + cluster.disk_margin)
    for host, free in sorted(cluster.disk_free.items()):
        needed = max(0.0, needed_total - cluster.present_bytes.get(host, 0))
        if free < needed:
            verdict.problems.append(
                f"host {host}: {_gib(free)} free where the model goes, {_gib(needed)} needed "
                f"(the snapshot's {_gib(cluster.snapshot_bytes)} plus {cluster.disk_margin:.0%}, less what is already there)"
            )


def plan_fit(shape: ModelShape, cluster: Cluster) -> Verdict:
    """Every problem at once (each naming the host or variable and the numbers), and what was not checked."""
    verdict = Verdict()
    if shape.architecture is None:
        verdict.warnings.append("config.json names no architecture: checked with its figures as they are")
    if shape.problems:
        verdict.problems.extend(shape.problems)
        verdict.warnings.append("the split and the memory were not checked: the model's figures are corrupt")
    else:
        check_split(shape, cluster.tensor_parallel_size, cluster.pipeline_parallel_size, verdict)
        check_memory(shape, cluster, verdict)
    check_disk(cluster, verdict)
    return verdict
