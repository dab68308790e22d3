# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The speculative_draft filter: wiring to _vllm_speculative.draft_model, and its refusals as the filter's errors."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError
from ansible_collections.sparkops.inference.plugins.filter.speculative_draft import FilterModule

speculative_draft = FilterModule().filters()["speculative_draft"]


def test_the_draft_model_or_none() -> None:
    assert speculative_draft({"method": "draft_model", "model": "org/drafter", "num_speculative_tokens": 2}) == {
        "repo_id": "org/drafter",
        "revision": "main",
        "tensor_parallel_size": None,
    }
    assert speculative_draft({"method": "ngram", "num_speculative_tokens": 3}) is None and speculative_draft({}) is None


def test_a_model_that_is_no_repository_id_is_the_filter_s_error_naming_the_variable() -> None:
    with pytest.raises(AnsibleFilterError, match="vllm_serve_speculative.model must be the draft model's Hugging Face repository id"):
        speculative_draft({"method": "draft_model", "model": "/srv/drafter"})
