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

A draft model (speculative decoding, ``vllm_serve_speculative``'s ``model``; issue 35) is counted as vLLM 0.32.0 loads
it (read in the release's source):
- its tensor-parallel size is ``draft_tensor_parallel_size``, by default the model's, and may only be 1 or the model's
  (vllm/config/speculative.py:1712-1743, ``_verify_and_get_draft_tp``; its default of 1 for an ``mlp_speculator`` is
  not modelled here); the ``draft_model`` method (vLLM's default when a ``model`` is given, speculative.py:1135-1139)
  takes only the model's (vllm/v1/spec_decode/draft_model.py:63-78, ``_raise_if_draft_tp_mismatch``); its heads
  follow the same rules as the model's (speculative.py:1849-1852 calls ``verify_with_parallel_config``,
  vllm/config/model.py:1544-1551);
- it is never pipelined: its parallel config has ``pipeline_parallel_size=1`` (speculative.py:1763-1781,
  ``create_draft_parallel_config``) and the whole draft model is on the last pipeline stage
  (vllm/v1/worker/gpu_model_runner.py:587-590); with PP > 1 this check counts it on top of the largest stage (an
  overestimate when the layers do not divide evenly: the last stage has the fewest);
- its weights are loaded on the same worker as the model's (gpu_model_runner.py:5069-5073, before the memory profile)
  and its attention layers are in the worker's KV cache spec (gpu_model_runner.py:7146-7181, every attention layer of
  the forward context), so its KV cache for one sequence of the model's ``max_model_len`` comes out of the same budget
  (vllm/v1/core/kv_cache_utils.py:1104-1137 sums every layer's, 1043-1047);
- its snapshot is on every node, beside the model's (site.yml's second model_sync).
Guessed: what of the draft model's snapshot a node already holds is not known (the reconnaissance looks at the model's
only), so the whole of it is counted against the disk.

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


DRAFT_VARIABLE = "vllm_serve_speculative"
MODELS = "the model's "  # how a shape's problem may begin; the draft model's name takes its place


@dataclass(frozen=True)
class Draft:
    """The draft model of speculative decoding: its Hugging Face id, shape (its config.json and weight bytes) and
    snapshot bytes, ``draft_tensor_parallel_size`` (None: vLLM's default, the model's) and the method."""

    repo_id: str
    shape: ModelShape
    snapshot_bytes: int
    tensor_parallel_size: int | None = None
    method: str | None = None

    def __post_init__(self) -> None:
        """Refuse a size no draft model can have, naming its variable (never a division by zero later)."""
        if self.tensor_parallel_size is not None and _int(self.tensor_parallel_size) is None:
            raise ValueError(f"{DRAFT_VARIABLE}.draft_tensor_parallel_size must be a whole number of at least 1, not {self.tensor_parallel_size!r}")
        snapshot = self.snapshot_bytes
        if isinstance(snapshot, bool) or not isinstance(snapshot, int) or not 0 <= snapshot <= MAX_WEIGHT_BYTES:
            raise ValueError(f"the draft model's snapshot_bytes must be a whole number of bytes, not {self.snapshot_bytes!r}")

    def tp(self, cluster: Cluster) -> int:
        """Its tensor-parallel size: the one given, else the model's (vllm/config/speculative.py:1722-1734)."""
        return self.tensor_parallel_size or cluster.tensor_parallel_size

    @property
    def name(self) -> str:
        return f"the draft model {self.repo_id}"


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


def _kv_heads_rule(kv: int | None, tp: int) -> bool:
    """Whether vLLM takes ``kv`` KV heads over ``tp`` ranks (split when at least as many, replicated otherwise)."""
    return kv is None or not ((kv >= tp and kv % tp) or (kv < tp and tp % kv))


def _head_divisors(heads: int) -> str:
    """The tensor-parallel sizes (up to 64) that divide ``heads`` attention heads, for a problem's message."""
    return ", ".join(str(n) for n in range(1, min(heads, 64) + 1) if heads % n == 0)


def check_split(shape: ModelShape, tp: int, pp: int, verdict: Verdict) -> None:
    if shape.attention_heads is None or shape.num_layers is None:
        verdict.warnings.append("config.json gives no num_attention_heads or num_hidden_layers: the split was not checked")
        return
    if shape.attention_heads % tp:
        verdict.problems.append(
            f"sparkops_tensor_parallel_size ({tp}) must divide the model's {shape.attention_heads} attention heads "
            f"(vLLM refuses it); sizes that do: {_head_divisors(shape.attention_heads)}"
        )
    kv = shape.kv_heads
    if not _kv_heads_rule(kv, tp):
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


def check_draft_split(draft: Draft, cluster: Cluster, verdict: Verdict) -> None:
    """The draft model's tensor-parallel size (vLLM 0.32's rules, module doc) and its heads; each problem names
    ``vllm_serve_speculative``."""
    tp, shape = cluster.tensor_parallel_size, draft.shape
    draft_tp = draft.tp(cluster)
    if draft.tensor_parallel_size is not None and draft_tp not in (1, tp):
        verdict.problems.append(
            f"{DRAFT_VARIABLE}.draft_tensor_parallel_size ({draft_tp}) for {draft.name} must be 1 or "
            f"sparkops_tensor_parallel_size ({tp}) (vLLM refuses any other)"
        )
    elif draft.method in (None, "draft_model") and draft_tp != tp:
        verdict.problems.append(
            f"{DRAFT_VARIABLE}.draft_tensor_parallel_size ({draft_tp}) for {draft.name}: vLLM's draft_model method runs "
            f"the draft model with the model's tensor-parallel size only; remove draft_tensor_parallel_size or set it to {tp}"
        )
    if shape.attention_heads is None:
        verdict.warnings.append(f"{draft.name}'s config.json gives no num_attention_heads: its split was not checked")
        return
    if shape.attention_heads % draft_tp:
        verdict.problems.append(
            f"{DRAFT_VARIABLE}: {draft.name}'s {shape.attention_heads} attention heads are not divisible by its "
            f"tensor-parallel size {draft_tp} (vLLM refuses it); sizes that do: {_head_divisors(shape.attention_heads)} "
            f"(draft_tensor_parallel_size may be 1 or {tp}), or choose another draft model"
        )
    if not _kv_heads_rule(shape.kv_heads, draft_tp):
        kv = shape.kv_heads
        verdict.problems.append(
            f"{DRAFT_VARIABLE}: {draft.name}'s {kv} KV heads and its tensor-parallel size {draft_tp}: vLLM splits KV heads "
            f"when there are at least as many as ranks (then {draft_tp} must divide {kv}) and replicates them otherwise "
            f"(then {kv} must divide {draft_tp})"
        )


def _draft_memory(draft: Draft | None, cluster: Cluster, verdict: Verdict) -> tuple[float, int]:
    """The draft model's weights per node and KV bytes per token (0 where not counted), into the figures."""
    if draft is None:
        return 0.0, 0
    draft_tp = draft.tp(cluster)
    verdict.figures.update(draft_repo_id=draft.repo_id, draft_tensor_parallel_size=draft_tp, draft_snapshot_bytes=draft.snapshot_bytes)
    if draft.shape.problems:
        verdict.warnings.append(f"{draft.name}'s weights and KV cache were not counted: its figures are corrupt")
        verdict.figures.update(draft_weights_per_node_bytes=None, draft_kv_bytes_per_token=None)
        return 0.0, 0
    shape = draft.shape
    weights = shape.weight_bytes / draft_tp  # not pipelined: the whole draft model on the last stage
    kv_per_token = 0
    if shape.kv_layers is not None and shape.kv_heads and shape.head_dim:
        kv_per_token = 2 * shape.kv_layers * max(1, shape.kv_heads // draft_tp) * shape.head_dim * KV_DTYPE_BYTES.get(cluster.kv_cache_dtype, 2)
    else:
        verdict.warnings.append(f"{draft.name}'s config.json gives no layer, KV head or head size figures: its KV cache was not counted")
    verdict.figures.update(draft_weights_per_node_bytes=round(weights), draft_kv_bytes_per_token=kv_per_token or None)
    return weights, kv_per_token


def check_memory(shape: ModelShape, cluster: Cluster, verdict: Verdict, draft: Draft | None = None) -> None:
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
    draft_weights, draft_kv = _draft_memory(draft, cluster, verdict)
    # The model's and the draft model's together: one budget (module doc).
    all_weights = weights + draft_weights
    all_kv = (kv_per_token + draft_kv) if kv_per_token else None
    plus_draft = ""
    if draft is not None and draft_weights:
        plus_draft = f" plus {draft.name}'s {_gib(draft_weights)} per node ({_gib(draft.shape.weight_bytes)} over its TP {draft.tp(cluster)})"
    for host, total in sorted(cluster.mem_total.items()):
        budget = total * cluster.gpu_memory_utilization
        left = budget - all_weights - cluster.overhead_bytes
        verdict.figures.setdefault("kv_budget_bytes", {})[host] = round(left)
        if left <= 0:
            needed = (all_weights + cluster.overhead_bytes) / total
            verdict.problems.append(
                f"host {host}: the weights take {_gib(weights)} per node ({_gib(shape.weight_bytes)} over TP {tp} x PP {pp}){plus_draft} "
                f"plus about {_gib(cluster.overhead_bytes)} of activations and runtime, more than {_gib(budget)} "
                f"(MemTotal {_gib(total)} x sparkops_gpu_memory_utilization {cluster.gpu_memory_utilization}); "
                + (f"raise the utilization to at least {needed:.2f}, or " if needed < 0.95 else "")
                + "spread the model over more Sparks (a larger tensor- or pipeline-parallel size)"
                + (f", or choose a smaller draft model in {DRAFT_VARIABLE}" if plus_draft else "")
            )
        elif all_kv and max_len and left < all_kv * max_len:
            fits = int(left // all_kv)
            if draft is not None and (draft_weights or draft_kv):
                verdict.problems.append(
                    f"host {host}: one sequence of {max_len} tokens needs {_gib(all_kv * max_len)} of KV cache "
                    f"({draft.name}'s {_gib(draft_kv * max_len)} of it) and {_gib(left)} is left after the weights "
                    f"({_gib(weights)}{plus_draft}) and runtime (about {_gib(cluster.overhead_bytes)}); set vllm_serve_max_model_len "
                    f"to at most {fits}, raise sparkops_gpu_memory_utilization, use more Sparks, or choose a smaller draft model in {DRAFT_VARIABLE}"
                )
            else:
                verdict.problems.append(
                    f"host {host}: one sequence of {max_len} tokens needs {_gib(all_kv * max_len)} of KV cache and "
                    f"{_gib(left)} is left after the weights ({_gib(weights)}) and runtime (about {_gib(cluster.overhead_bytes)}); "
                    f"set vllm_serve_max_model_len to at most {fits}, raise sparkops_gpu_memory_utilization, or use more Sparks"
                )


def check_disk(cluster: Cluster, verdict: Verdict, draft: Draft | None = None) -> None:
    draft_bytes = draft.snapshot_bytes if draft is not None else 0
    needed_total = (cluster.snapshot_bytes + draft_bytes) * (1 + cluster.disk_margin)
    for host, free in sorted(cluster.disk_free.items()):
        needed = max(0.0, needed_total - cluster.present_bytes.get(host, 0))
        if free < needed:
            if draft is not None:
                verdict.problems.append(
                    f"host {host}: {_gib(free)} free where the model goes, {_gib(needed)} needed (the snapshot's "
                    f"{_gib(cluster.snapshot_bytes)} and {draft.name}'s {_gib(draft_bytes)} ({DRAFT_VARIABLE}) plus "
                    f"{cluster.disk_margin:.0%}, less what of the model is already there)"
                )
            else:
                verdict.problems.append(
                    f"host {host}: {_gib(free)} free where the model goes, {_gib(needed)} needed "
                    f"(the snapshot's {_gib(cluster.snapshot_bytes)} plus {cluster.disk_margin:.0%}, less what is already there)"
                )


def plan_fit(shape: ModelShape, cluster: Cluster, draft: Draft | None = None) -> Verdict:
    """Every problem at once (each naming the host or variable and the numbers), and what was not checked.

    ``draft``: the draft model of speculative decoding, counted with the model (module doc)."""
    verdict = Verdict()
    if shape.architecture is None:
        verdict.warnings.append("config.json names no architecture: checked with its figures as they are")
    if shape.problems:
        verdict.problems.extend(shape.problems)
        verdict.warnings.append("the split and the memory were not checked: the model's figures are corrupt")
    else:
        check_split(shape, cluster.tensor_parallel_size, cluster.pipeline_parallel_size, verdict)
    if draft is not None and draft.shape.problems:
        for problem in draft.shape.problems:  # "config.json is corrupt: ...", "the model's weight bytes are ..."
            verdict.problems.append(f"{DRAFT_VARIABLE}: {draft.name}'s {problem.removeprefix(MODELS)}")
    elif draft is not None:
        check_draft_split(draft, cluster, verdict)
    if not shape.problems:
        check_memory(shape, cluster, verdict, draft)
    check_disk(cluster, verdict, draft)
    return verdict
