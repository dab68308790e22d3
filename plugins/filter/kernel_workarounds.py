# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
name: kernel_workarounds
short_description: Choose the engine workarounds a GB10 needs for the model's quantization, from facts
version_added: 1.0.0
author:
  - sparkops.inference developers (@sparkops)
description:
  - Takes the model's metadata (M(sparkops.inference.model_metadata)'s result, its C(config)), what
    M(sparkops.inference.node_recon) found on each node (its C(gpu.compute_caps)) and the vLLM version the nodes run.
    Returns the rows of the collection's table that apply, each with the environment variables it sets, the failure
    it avoids, why, and its sources; and warnings for what the table cannot judge.
  - "The rows, for GPUs of compute capability 12.x (a GB10 is 12.1) and a block-scaled FP8 model (C(quant_method)
    C(fp8) with C(weight_block_size)): C(cutlass_fp8_block_scaled) sets C(VLLM_DISABLED_KERNELS=CutlassFp8BlockScaledMMKernel)
    (C(cutlass_gemm_caller ... Error Internal), vllm-project/vllm#43367); C(deep_gemm_fp8) sets C(VLLM_USE_DEEP_GEMM=0)
    from vLLM 0.32.0 on, whose wheels carry DeepGEMM (C(Unknown recipe), vllm-project/vllm#47130)."
  - A quantized model on 12.x that no row knows gets a warning naming the model, its C(quant_method) and the compute
    capability. A vLLM newer than the newest release the table was checked against (0.34.0), or unknown, takes the rows
    of that release, with a warning. On other GPUs, and for a model that is not quantized, nothing applies.
  - The role R(sparkops.inference.vllm_serve,ansible_collections.sparkops.inference.vllm_serve_role) applies the choice
    with the C(sparkops.inference.kernel_workarounds_apply) filter. The table and its sources are in
    C(plugins/plugin_utils/_kernel_workarounds.py) and the role's README.
options:
  _input:
    description: The model's metadata, with its C(config.json) as C(config) (what M(sparkops.inference.model_metadata) returns).
    type: dict
    required: true
  recon:
    description: Host name to that host's RV(sparkops.inference.node_recon#module:recon) (its C(gpu.compute_caps) are read).
    type: dict
    required: true
  vllm_version:
    description: The vLLM version the nodes run (C(vllm_serve_version), or the image's); empty or null when unknown.
    type: str
  model:
    description: The model's name for the warnings, for example its repo id.
    type: str
    default: the model
"""

EXAMPLES = r"""
- name: Choose the GB10 workarounds for the model (on the head, after the model's metadata and every node's recon)
  ansible.builtin.set_fact:
    sparkops_kernel_workarounds: >-
      {{ sparkops_model_metadata | sparkops.inference.kernel_workarounds(recon_by_host, vllm_version='0.32.0',
         model=sparkops_model_repo) }}
"""

RETURN = r"""
_value:
  description: The choice.
  type: dict
  contains:
    model:
      description: The model's name as given.
      type: str
    quantization:
      description: C(quant_method) (null when the model is not quantized), C(kind) (C(block-scaled FP8) or null) and C(config_key) (where it was read).
      type: dict
    family_hosts:
      description: The hosts with a GPU of compute capability 12.x.
      type: list
      elements: str
    unread_hosts:
      description: The hosts whose compute capability could not be read.
      type: list
      elements: str
    rows:
      description: The rows that apply, each with C(name), C(env), C(quantization), C(failure), C(why), C(sources) and C(checked).
      type: list
      elements: dict
    warnings:
      description: What to show before anything starts.
      type: list
      elements: str
"""

import typing as t
from collections.abc import Callable

from ansible.errors import AnsibleFilterError


def kernel_workarounds_filter(metadata: t.Any, recon: t.Any, vllm_version: t.Any = None, model: t.Any = "the model") -> dict[str, t.Any]:
    # Imported when called, not at the top (docs/architecture.md, tests/unit/plugins/filter/test_filter_module_imports.py).
    from ansible_collections.sparkops.inference.plugins.plugin_utils._kernel_workarounds import WorkaroundInputError, choose

    name = "sparkops.inference.kernel_workarounds"
    if not isinstance(metadata, t.Mapping) or not isinstance(metadata.get("config"), t.Mapping):
        raise AnsibleFilterError(f"{name}: the input must be the model's metadata with its config.json as 'config' (model_metadata's result)")
    if not isinstance(recon, t.Mapping) or not all(isinstance(r, t.Mapping) for r in recon.values()):
        raise AnsibleFilterError(f"{name}: recon must map each host to node_recon's recon")
    if vllm_version is not None and not isinstance(vllm_version, str):
        raise AnsibleFilterError(f"{name}: vllm_version must be a string, got {vllm_version!r}")
    caps = {host: (r.get("gpu") or {}).get("compute_caps") for host, r in recon.items()}
    try:
        return choose(str(model), metadata["config"], caps, vllm_version).as_dict()
    except WorkaroundInputError as exc:
        raise AnsibleFilterError(f"{name}: {exc}") from None


class FilterModule:
    """sparkops.inference GB10 workaround choice: kernel_workarounds."""

    def filters(self) -> dict[str, Callable[..., t.Any]]:
        return {"kernel_workarounds": kernel_workarounds_filter}
