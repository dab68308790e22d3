# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
name: deployment_models
short_description: The models the deployments serve, each once with the nodes that serve it, for model_sync
version_added: 1.0.0
author:
  - sparkops.inference developers (@sparkops)
description:
  - Takes the cluster plan (C(sparkops_cluster), or the C(cluster_topology) filter's result) and returns the models its
    C(deployments) serve, each once - C(repo_id), C(revision) and C(nodes), the nodes that serve it in the plan's order.
    A model two deployments serve at one revision is one entry with the nodes of both; at two revisions, two entries.
  - With O(speculative) (the vllm_serve role's V(vllm_serve_speculative)) naming a draft model, the draft model too, on
    the nodes of the first deployment (the one the vllm_serve role serves).
  - The default of the model_sync role's V(model_sync_models) - what it downloads once on the head and pushes to the
    workers among each model's nodes.
  - Fails, naming the variable, on a draft model that is not a Hugging Face repository id.
options:
  _input:
    description: The cluster plan, with its C(nodes) and C(deployments).
    type: dict
    required: true
  speculative:
    description: V(vllm_serve_speculative); empty or null - no draft model.
    type: raw
    default: {}
"""

EXAMPLES = r"""
# [{'repo_id': 'Qwen/Qwen3.5-122B-A10B-FP8', 'revision': 'main', 'nodes': ['spark-head', 'spark-worker1']}]
- name: The models to fetch and distribute
  ansible.builtin.debug:
    msg: "{{ sparkops_cluster | sparkops.inference.deployment_models(vllm_serve_speculative | default({})) }}"
"""

RETURN = r"""
_value:
  description: The models, each a dict with C(repo_id), C(revision) and C(nodes).
  type: list
  elements: dict
"""

import typing as t
from collections.abc import Callable

from ansible.errors import AnsibleFilterError


def deployment_models_filter(plan: t.Any, speculative: t.Any = None) -> list[dict[str, t.Any]]:
    # Imported when called, not at the top (docs/architecture.md, tests/unit/plugins/filter/test_filter_module_imports.py).
    from ansible_collections.sparkops.inference.plugins.plugin_utils._deployments import models
    from ansible_collections.sparkops.inference.plugins.plugin_utils._vllm_speculative import SpeculativeConfigError, draft_model

    if not isinstance(plan, t.Mapping) or not isinstance(plan.get("deployments"), list) or not isinstance(plan.get("nodes"), list):
        raise AnsibleFilterError("sparkops.inference.deployment_models: the input must be the cluster plan (sparkops_cluster), with nodes and deployments")
    try:
        draft = draft_model(speculative)
    except SpeculativeConfigError as exc:
        raise AnsibleFilterError(f"sparkops.inference.deployment_models: {exc}") from None
    return models(plan["deployments"], draft, plan["nodes"])


class FilterModule:
    """sparkops.inference deployments filter: deployment_models."""

    def filters(self) -> dict[str, Callable[..., t.Any]]:
        return {"deployment_models": deployment_models_filter}
