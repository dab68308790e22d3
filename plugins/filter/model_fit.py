# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
name: model_fit
short_description: Will the model fit the cluster, before a byte of it is downloaded
version_added: 1.1.0
author:
  - sparkops.inference developers (@sparkops)
description:
  - Checks the model's shape (its C(config.json)) and weight bytes, as M(sparkops.inference.model_metadata) reads them
    from the head's cache or the Hub, against the split and every node's memory and disk, with vLLM 0.30.0's rules
    (the tensor-parallel size must divide the attention heads and fit the KV heads, the pipeline size the layers).
  - "Memory per node: weights / (TP x PP) (the largest pipeline stage), plus the activations and runtime
    (O(overhead_bytes), a guess: vLLM measures it when it starts), plus the KV cache for one sequence of
    O(max_model_len) tokens (default: the model's C(max_position_embeddings)) must fit in MemTotal x
    O(gpu_memory_utilization) (unified memory: the GPU allocates from the host's memory)."
  - "Disk per node: the snapshot's size plus 5 %, less what of it the node already holds."
  - "With O(draft) (speculative decoding's draft model, V(vllm_serve_speculative)'s C(model)), vLLM 0.32.0's rules for
    it: its tensor-parallel size (O(draft_tensor_parallel_size), by default the model's) must be 1 or the model's (the
    model's only for the C(draft_model) method) and fit its heads; its weights / its tensor-parallel size (never
    pipelined) and its KV cache for one sequence of O(max_model_len) are added to each node's, its snapshot to each
    node's disk. Its problems name it and V(vllm_serve_speculative)."
  - Returns every problem at once, each naming the variable or host and the numbers, and what to change. An unknown
    architecture or a config without the figures gives warnings saying what was not checked, not problems.
options:
  _input:
    description: The result of M(sparkops.inference.model_metadata) (keys C(config), C(weight_bytes), C(snapshot_bytes)).
    type: dict
    required: true
  nodes:
    description: Host name to C(mem_total) (bytes), C(disk_free) (bytes where the model goes) and C(present_bytes) (bytes of the snapshot already there).
    type: dict
    required: true
  tensor_parallel_size:
    description: C(sparkops_tensor_parallel_size).
    type: int
    required: true
  pipeline_parallel_size:
    description: C(sparkops_pipeline_parallel_size).
    type: int
    required: true
  gpu_memory_utilization:
    description: C(sparkops_gpu_memory_utilization).
    type: float
    required: true
  max_model_len:
    description: C(vllm_serve_max_model_len); none means the model's own maximum.
    type: int
  kv_cache_dtype:
    description: C(vllm_serve_kv_cache_dtype).
    type: str
    default: auto
  overhead_bytes:
    description: Activations and runtime per node (guessed; vLLM measures it at start).
    type: int
    default: 4294967296
  draft:
    description:
      - The result of M(sparkops.inference.model_metadata) for the draft model (keys C(config), C(weight_bytes),
        C(snapshot_bytes)); none - no draft model.
    type: dict
  draft_repo_id:
    description: The draft model's Hugging Face id, for the messages (C(repo_id) of the C(sparkops.inference.speculative_draft) filter).
    type: str
  draft_tensor_parallel_size:
    description: C(vllm_serve_speculative.draft_tensor_parallel_size); none - vLLM's default, O(tensor_parallel_size).
    type: int
  draft_method:
    description: C(vllm_serve_speculative.method); none - vLLM's default with a draft model, V(draft_model).
    type: str
"""

EXAMPLES = r"""
- name: Refuse a model that cannot fit
  vars:
    fit: >-
      {{ metadata | sparkops.inference.model_fit(nodes, tensor_parallel_size=2, pipeline_parallel_size=1,
                                                  gpu_memory_utilization=0.85) }}
  ansible.builtin.assert:
    that: fit.fits
    fail_msg: "{{ fit.problems | join('; ') }}"
"""

RETURN = r"""
_value:
  description: The verdict.
  type: dict
  contains:
    fits:
      description: No problem found.
      type: bool
    problems:
      description: What cannot work, each naming the variable or host, the numbers and what to change.
      type: list
      elements: str
    warnings:
      description: What was not checked, and why.
      type: list
      elements: str
    figures:
      description:
        - The numbers behind it (weights per node, KV bytes per token, KV budget per host, the overhead used).
        - With a draft model, also C(draft_repo_id), C(draft_tensor_parallel_size), C(draft_weights_per_node_bytes),
          C(draft_kv_bytes_per_token) and C(draft_snapshot_bytes); the KV budget is what is left after both models' weights.
      type: dict
"""

import typing as t
from collections.abc import Callable

from ansible.errors import AnsibleFilterError


def _count(value: t.Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise AnsibleFilterError(f"sparkops.inference.model_fit: {what} must be a whole number of bytes, not {value!r}")
    return value


def _number(value: t.Any, name: str, kind: type[int] | type[float]) -> t.Any:
    """``value`` as ``kind`` (an inventory may give "2" for 2), or an error naming its variable. A float that is not
    whole is not an int (int(2.5) would quietly make it 2)."""
    if isinstance(value, bool):
        raise ValueError(f"{name} must be a number, not {value!r}")
    try:
        number = kind(value)
    except (TypeError, ValueError, OverflowError):
        raise ValueError(f"{name} must be a number, not {value!r}") from None
    if kind is int and isinstance(value, float) and number != value:
        raise ValueError(f"{name} must be a whole number, not {value!r}")
    return number


def model_fit_filter(
    metadata: t.Any,
    nodes: t.Any,
    tensor_parallel_size: t.Any,
    pipeline_parallel_size: t.Any,
    gpu_memory_utilization: t.Any,
    max_model_len: t.Any = None,
    kv_cache_dtype: str = "auto",
    overhead_bytes: t.Any = None,
    draft: t.Any = None,
    draft_repo_id: t.Any = None,
    draft_tensor_parallel_size: t.Any = None,
    draft_method: t.Any = None,
) -> dict[str, t.Any]:
    # Imported when called, not at the top (docs/architecture.md, tests/unit/plugins/filter/test_filter_module_imports.py).
    from ansible_collections.sparkops.inference.plugins.plugin_utils._model_fit import DEFAULT_OVERHEAD_BYTES, Cluster, Draft, plan_fit, shape_from_config

    if not isinstance(metadata, t.Mapping) or not isinstance(metadata.get("config"), t.Mapping):
        raise AnsibleFilterError("sparkops.inference.model_fit: the input must be model_metadata's result (with its config)")
    if not isinstance(nodes, t.Mapping) or not nodes:
        raise AnsibleFilterError("sparkops.inference.model_fit: nodes must map each host to its mem_total, disk_free and present_bytes")
    for host, facts in nodes.items():
        if not isinstance(facts, t.Mapping) or "mem_total" not in facts or "disk_free" not in facts:
            raise AnsibleFilterError(f"sparkops.inference.model_fit: host {host} has no mem_total/disk_free")
    shape = shape_from_config(dict(metadata["config"]), _count(metadata.get("weight_bytes"), "weight_bytes"))
    try:
        cluster = Cluster(
            tensor_parallel_size=_number(tensor_parallel_size, "sparkops_tensor_parallel_size", int),
            pipeline_parallel_size=_number(pipeline_parallel_size, "sparkops_pipeline_parallel_size", int),
            gpu_memory_utilization=_number(gpu_memory_utilization, "sparkops_gpu_memory_utilization", float),
            mem_total={str(h): _count(f["mem_total"], f"host {h}'s mem_total") for h, f in nodes.items()},
            disk_free={str(h): _count(f["disk_free"], f"host {h}'s disk_free") for h, f in nodes.items()},
            snapshot_bytes=_count(metadata.get("snapshot_bytes"), "snapshot_bytes"),
            present_bytes={str(h): _count(f.get("present_bytes", 0), f"host {h}'s present_bytes") for h, f in nodes.items()},
            max_model_len=None if max_model_len in (None, "") else _number(max_model_len, "vllm_serve_max_model_len", int),
            kv_cache_dtype=str(kv_cache_dtype),
            # Cluster refuses a negative one.
            overhead_bytes=_number(DEFAULT_OVERHEAD_BYTES if overhead_bytes is None else overhead_bytes, "sparkops_fit_overhead_bytes", int),
        )
    except (TypeError, ValueError) as exc:
        raise AnsibleFilterError(f"sparkops.inference.model_fit: {exc}") from exc
    draft_model = None
    if draft not in (None, ""):
        if not isinstance(draft, t.Mapping) or not isinstance(draft.get("config"), t.Mapping):
            raise AnsibleFilterError("sparkops.inference.model_fit: draft must be model_metadata's result for the draft model (with its config)")
        try:
            draft_model = Draft(
                repo_id=str(draft_repo_id or "(unnamed)"),
                shape=shape_from_config(dict(draft["config"]), _count(draft.get("weight_bytes"), "the draft model's weight_bytes")),
                snapshot_bytes=_count(draft.get("snapshot_bytes"), "the draft model's snapshot_bytes"),
                tensor_parallel_size=(
                    None
                    if draft_tensor_parallel_size in (None, "")
                    else _number(draft_tensor_parallel_size, "vllm_serve_speculative.draft_tensor_parallel_size", int)
                ),
                method=None if draft_method in (None, "") else str(draft_method),
            )
        except (TypeError, ValueError) as exc:
            raise AnsibleFilterError(f"sparkops.inference.model_fit: {exc}") from exc
    verdict = plan_fit(shape, cluster, draft_model)
    return {"fits": verdict.fits, "problems": verdict.problems, "warnings": verdict.warnings, "figures": verdict.figures}


class FilterModule:
    """sparkops.inference model fit filter."""

    def filters(self) -> dict[str, Callable[..., t.Any]]:
        return {"model_fit": model_fit_filter}
