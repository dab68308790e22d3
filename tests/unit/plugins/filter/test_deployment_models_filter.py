# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The deployment_models filter: the plan's deployments and the draft model of vllm_serve_speculative, as model_sync
fetches them; its refusals as the filter's errors."""

from __future__ import annotations

import typing as t

import pytest
from ansible.errors import AnsibleFilterError
from ansible_collections.sparkops.inference.plugins.filter.deployment_models import FilterModule

deployment_models = FilterModule().filters()["deployment_models"]
PLAN = {
    "nodes": ["spark-head", "spark-worker1"],
    "deployments": [{"name": "default", "model": "org/big", "revision": "abc", "nodes": ["spark-head", "spark-worker1"]}],
}


def test_the_deployment_s_model_and_the_draft_model_on_its_nodes() -> None:
    assert deployment_models(PLAN) == [{"repo_id": "org/big", "revision": "abc", "nodes": ["spark-head", "spark-worker1"]}]
    assert deployment_models(PLAN, {"method": "ngram", "num_speculative_tokens": 3}) == deployment_models(PLAN, {})
    assert deployment_models(PLAN, {"method": "draft_model", "model": "org/drafter", "num_speculative_tokens": 2}) == [
        {"repo_id": "org/big", "revision": "abc", "nodes": ["spark-head", "spark-worker1"]},
        {"repo_id": "org/drafter", "revision": "main", "nodes": ["spark-head", "spark-worker1"]},
    ]


@pytest.mark.parametrize(
    ("plan", "speculative", "said"),
    [
        ([], {}, "the input must be the cluster plan (sparkops_cluster), with nodes and deployments"),
        ({"nodes": ["h"]}, {}, "the input must be the cluster plan"),
        (PLAN, {"method": "draft_model", "model": "/srv/drafter"}, "vllm_serve_speculative.model must be the draft model's Hugging Face repository id"),
    ],
)
def test_refusals_name_the_filter_and_the_variable(plan: t.Any, speculative: t.Any, said: str) -> None:
    with pytest.raises(AnsibleFilterError) as caught:
        deployment_models(plan, speculative)
    assert str(caught.value).startswith("sparkops.inference.deployment_models: ") and said in str(caught.value)
