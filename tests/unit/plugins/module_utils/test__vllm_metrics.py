# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""_vllm_metrics on Prometheus' text as prometheus_client writes it (the library vLLM's /metrics is made with), with
the counters' names and labels vLLM 0.32 gives them (vllm/v1/spec_decode/metrics.py:229-231; labels model_name and
engine, vllm/v1/metrics/loggers.py): summed over engines and models, their _created samples and other families
left out; what speculation did between two readings."""

from __future__ import annotations

import typing as t

import pytest
from ansible_collections.sparkops.inference.plugins.module_utils._vllm_metrics import (
    GENERATION_TOKENS,
    SPEC_ACCEPTED_TOKENS,
    SPEC_DRAFT_TOKENS,
    SPEC_DRAFTS,
    SPECULATION,
    counter_totals,
    speculation,
)
from prometheus_client import CollectorRegistry, Counter, Gauge, generate_latest

LABELS = ["model_name", "engine"]


def vllm_text(per_engine: dict[str, dict[str, float]], model: str = "tiny-moe") -> str:
    """/metrics as prometheus_client writes it: each counter (its name without _total) by engine."""
    registry = CollectorRegistry()
    families = {name: Counter(name.removesuffix("_total"), "doc", LABELS, registry=registry) for name in (*SPECULATION, GENERATION_TOKENS)}
    Gauge("vllm:num_requests_running", "doc", LABELS, registry=registry).labels(model, "0").set(3)
    for engine, values in per_engine.items():
        for name, family in families.items():  # every engine's child made at once, at 0 (create_metric_per_engine)
            family.labels(model, engine).inc(values.get(name, 0))
    return generate_latest(registry).decode()


def test_counters_summed_over_engines_created_samples_and_other_families_left_out() -> None:
    text = vllm_text({"0": {SPEC_DRAFTS: 10, SPEC_DRAFT_TOKENS: 30}, "1": {SPEC_DRAFTS: 5, SPEC_DRAFT_TOKENS: 15}})
    assert "vllm:spec_decode_num_drafts_created" in text and 'engine="1"' in text  # what the reader must skip
    assert counter_totals(text, SPECULATION) == {SPEC_DRAFTS: 15.0, SPEC_DRAFT_TOKENS: 45.0, SPEC_ACCEPTED_TOKENS: 0.0}
    assert counter_totals(text, ["vllm:num_requests_running"]) == {"vllm:num_requests_running": 3.0}
    assert counter_totals("# nothing\n", SPECULATION) == {}


def test_a_label_value_with_braces_and_quotes_and_values_that_are_not_numbers() -> None:
    text = vllm_text({"0": {GENERATION_TOKENS: 7}}, model='odd} "name" {x')
    assert counter_totals(text, [GENERATION_TOKENS]) == {GENERATION_TOKENS: 7.0}
    garbled = f'{GENERATION_TOKENS} NaN\n{GENERATION_TOKENS}{{engine="0"}} abc\n{GENERATION_TOKENS}{{engine="1"}} 2.5 1700000000000\n'
    assert counter_totals(garbled, [GENERATION_TOKENS]) == {GENERATION_TOKENS: 2.5}


@pytest.mark.parametrize(
    ("before", "after", "expected"),
    [
        # 4 drafts of 3 tokens, 6 accepted: half the draft tokens, 2.5 tokens a step with the bonus token
        (
            {SPEC_DRAFTS: 10.0, SPEC_DRAFT_TOKENS: 30.0, SPEC_ACCEPTED_TOKENS: 9.0},
            {SPEC_DRAFTS: 14.0, SPEC_DRAFT_TOKENS: 42.0, SPEC_ACCEPTED_TOKENS: 15.0},
            {"drafts": 4, "draft_tokens": 12, "accepted_tokens": 6, "acceptance_rate": 0.5, "mean_acceptance_length": 2.5},
        ),
        (  # nothing drafted between the readings
            {SPEC_DRAFTS: 1.0, SPEC_DRAFT_TOKENS: 3.0, SPEC_ACCEPTED_TOKENS: 0.0},
            {SPEC_DRAFTS: 1.0, SPEC_DRAFT_TOKENS: 3.0, SPEC_ACCEPTED_TOKENS: 0.0},
            {"drafts": 0, "draft_tokens": 0, "accepted_tokens": 0, "acceptance_rate": None, "mean_acceptance_length": None},
        ),
        (  # the counters appeared after the first reading (a restart): counted from 0
            {},
            {SPEC_DRAFTS: 2.0, SPEC_DRAFT_TOKENS: 6.0, SPEC_ACCEPTED_TOKENS: 0.0},
            {"drafts": 2, "draft_tokens": 6, "accepted_tokens": 0, "acceptance_rate": 0.0, "mean_acceptance_length": 1.0},
        ),
        ({}, {}, None),  # an engine that does not speculate
        (None, {SPEC_DRAFTS: 1.0, SPEC_DRAFT_TOKENS: 1.0, SPEC_ACCEPTED_TOKENS: 1.0}, None),  # a reading missing
        ({}, None, None),
    ],
)
def test_what_speculation_did_between_two_readings(before: t.Any, after: t.Any, expected: t.Any) -> None:
    assert speculation(before, after) == expected
