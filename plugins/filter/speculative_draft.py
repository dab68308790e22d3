# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
name: speculative_draft
short_description: The draft model a speculative decoding setting names, for model_sync and the fit check
version_added: 1.0.0
author:
  - sparkops.inference developers (@sparkops)
description:
  - Takes the vllm_serve role's V(vllm_serve_speculative) (vLLM's C(SpeculativeConfig) keys) and returns the draft
    model it names (C(model)) - its C(repo_id), its C(revision) (V(main) when not given, as vLLM reads the cache) and
    its C(tensor_parallel_size) (C(draft_tensor_parallel_size); null - vLLM's default, the model's own) - or null when
    it names none (no speculation, or a method with no draft model such as C(ngram) or C(mtp)).
  - The model_sync role fetches it with the model (the V(deployment_models) filter puts it in V(model_sync_models)), so
    that the draft model is fetched on the head and distributed as the model is; the preflight's fit check counts its
    weights and KV cache.
  - Fails, naming the variable, on a C(model) that is not a Hugging Face repository id (C(org/name)) and on a
    C(revision) without a C(model).
options:
  _input:
    description: V(vllm_serve_speculative); empty or null - no speculation.
    type: raw
    required: true
"""

EXAMPLES = r"""
# {'repo_id': 'Qwen/Qwen3-0.6B', 'revision': 'main', 'tensor_parallel_size': null}
- name: The draft model to fetch
  ansible.builtin.set_fact:
    draft: "{{ {'method': 'draft_model', 'model': 'Qwen/Qwen3-0.6B', 'num_speculative_tokens': 3} | sparkops.inference.speculative_draft }}"
"""

RETURN = r"""
_value:
  description: C(repo_id), C(revision) and C(tensor_parallel_size) of the draft model; null when none.
  type: dict
"""

import typing as t
from collections.abc import Callable

from ansible.errors import AnsibleFilterError


def speculative_draft_filter(speculative: t.Any) -> dict[str, t.Any] | None:
    # Imported when called, not at the top (docs/architecture.md, tests/unit/plugins/filter/test_filter_module_imports.py).
    from ansible_collections.sparkops.inference.plugins.plugin_utils._vllm_speculative import SpeculativeConfigError, draft_model

    try:
        return draft_model(speculative)
    except SpeculativeConfigError as exc:
        raise AnsibleFilterError(str(exc)) from None


class FilterModule:
    """sparkops.inference speculative decoding filter: speculative_draft."""

    def filters(self) -> dict[str, Callable[..., t.Any]]:
        return {"speculative_draft": speculative_draft_filter}
