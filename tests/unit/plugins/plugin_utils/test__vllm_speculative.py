# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""vllm_serve_speculative as --speculative-config: compact JSON with sorted keys, nothing when empty; refused, naming
the variable, where it cannot be that JSON, has no method, names a draft model that is not a repository id, or comes
twice (the extra arguments); the draft model it names, for model_sync and the fit check."""

from __future__ import annotations

import json
import typing as t

import pytest
from ansible_collections.sparkops.inference.plugins.plugin_utils._vllm_speculative import (
    SpeculativeConfigError,
    draft_model,
    speculative_config_json,
    speculative_flag_in,
)


@pytest.mark.parametrize("value", [None, {}])
def test_empty_is_no_speculation(value: t.Any) -> None:
    assert speculative_config_json(value) is None


def test_the_mapping_as_compact_json_with_sorted_keys() -> None:
    value = {"num_speculative_tokens": 2, "method": "mtp", "num_speculative_tokens_per_batch_size": [[1, 4, 2], [5, 64, 1]]}
    got = speculative_config_json(value, ["--enforce-eager"])
    assert got == '{"method":"mtp","num_speculative_tokens":2,"num_speculative_tokens_per_batch_size":[[1,4,2],[5,64,1]]}'
    assert json.loads(got or "") == value


@pytest.mark.parametrize(
    ("value", "extra", "said"),
    [
        ("ngram", [], "vllm_serve_speculative must be a mapping of vLLM's speculative settings"),
        ([{"method": "ngram"}], [], "vllm_serve_speculative must be a mapping"),
        ({"num_speculative_tokens": 3}, [], "vllm_serve_speculative.method must name vLLM's speculative method"),
        ({"method": " ", "num_speculative_tokens": 3}, [], "vllm_serve_speculative.method must name"),
        ({"method": "ngram", "num_speculative_tokens": {1, 2}}, [], "vllm_serve_speculative.num_speculative_tokens must hold JSON values"),
        ({"method": "ngram", 3: 1}, [], "vllm_serve_speculative has a key that is not a string: 3"),
        ({"method": "draft_model", "model": "/models/drafter", "num_speculative_tokens": 3}, [], "vllm_serve_speculative.model must be the draft model's"),
        ({"method": "draft_model", "model": "https://hf.co/org/d"}, [], "Hugging Face repository id (org/name)"),
        ({"method": "draft_model", "model": "drafter"}, [], "got 'drafter'"),
        ({"method": "draft_model", "model": "org/d", "revision": 3}, [], "vllm_serve_speculative.revision must be the draft model's branch"),
        ({"method": "mtp", "revision": "main"}, [], "vllm_serve_speculative.revision is set without vllm_serve_speculative.model"),
        ({"method": "ngram"}, ["--speculative-config", "{}"], "vllm_serve_speculative and '--speculative-config' in vllm_serve_extra_args"),
        ({"method": "ngram"}, ["--speculative_config={}"], "'--speculative_config={}' in vllm_serve_extra_args"),
        ({"method": "ngram"}, ["-sc", "{}"], "'-sc' in vllm_serve_extra_args"),
    ],
)
def test_refused_naming_the_variable(value: t.Any, extra: list[str], said: str) -> None:
    with pytest.raises(SpeculativeConfigError) as caught:
        speculative_config_json(value, extra)
    assert said in str(caught.value)


def test_the_flag_in_the_extra_arguments_alone_is_vllm_s_own() -> None:
    assert speculative_config_json({}, ["--speculative-config", "{}"]) is None
    assert speculative_flag_in(["--speculative-config-x", "--sc", "-s"]) is None


@pytest.mark.parametrize(
    ("value", "draft"),
    [
        (None, None),
        ({}, None),
        ({"method": "ngram", "num_speculative_tokens": 3}, None),
        ({"method": "mtp", "num_speculative_tokens": 1}, None),
        (
            {"method": "draft_model", "model": "Qwen/Qwen3-0.6B", "num_speculative_tokens": 3},
            {"repo_id": "Qwen/Qwen3-0.6B", "revision": "main", "tensor_parallel_size": None},
        ),
        (
            {"method": "eagle3", "model": "org/eagle3-head", "revision": "v1.2", "draft_tensor_parallel_size": 1},
            {"repo_id": "org/eagle3-head", "revision": "v1.2", "tensor_parallel_size": 1},
        ),
    ],
)
def test_the_draft_model_it_names(value: t.Any, draft: dict[str, t.Any] | None) -> None:
    assert draft_model(value) == draft
    if draft is not None:  # rendered as given: vLLM reads the same repository id and revision from the cache
        assert json.loads(speculative_config_json(value) or "")["model"] == draft["repo_id"]
