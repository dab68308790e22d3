# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests for the private module util _benchmark_profile: a sweep's figures as llama-benchy names them."""

from __future__ import annotations

import typing as t

import pytest
from ansible_collections.sparkops.inference.plugins.module_utils._benchmark import RequestRecord, level_metrics
from ansible_collections.sparkops.inference.plugins.module_utils._benchmark_profile import (
    Figures,
    Profile,
    figures,
    markdown_lines,
    profile,
    profile_document,
)

HEADER = {"prompt_tokens": 237, "output_tokens": 32, "ignore_eos": True, "concurrency": [1, 2]}


def record(ttft: float, tpot: float, tokens: int = 32, prompt: int = 256) -> RequestRecord:
    latency = ttft + tpot * (tokens - 1)
    return RequestRecord(success=True, ttft=ttft, latency=latency, output_tokens=tokens, prompt_tokens=prompt, itl=[tpot] * (tokens - 1))


def level(concurrency: int, records: t.Sequence[RequestRecord]) -> dict[str, t.Any]:
    return level_metrics(records, duration=1.0, concurrency=concurrency)


def test_the_profile_is_named_as_llama_benchy_names_its_tests_with_the_servers_prompt_count() -> None:
    levels = [level(1, [record(0.02, 0.005, prompt=250), record(0.02, 0.005, prompt=262)]), level(2, [record(0.03, 0.006)] * 2)]
    named = profile(HEADER, levels)
    # pp is the server's mean prompt (template included, as llama-benchy's target), not prompt_tokens (237).
    assert named == Profile(pp=256, tg=32, depth=0, concurrency=(1, 2))
    assert named.name == "pp256 tg32"
    assert named.command == "llama-benchy --pp 256 --tg 32 --depth 0 --concurrency 1 2"
    assert Profile(pp=512, tg=64, depth=4096).name == "pp512 @ d4096 tg64 @ d4096"


def test_at_concurrency_1_pp_and_tg_are_the_median_requests_rates() -> None:
    # 256 prompt tokens in 20 ms -> 12800 t/s; 5 ms a token after the first -> 200 t/s. One slow request moves the
    # means (TTFT 54 ms, TPOT 8 ms), not the medians, as it moves llama-benchy's median run.
    records = [record(0.02, 0.005), record(0.02, 0.005), record(0.122, 0.014)]
    shown = figures(level(1, records))
    assert shown.concurrency == 1 and shown.exact
    assert shown.pp == pytest.approx(12800.0, rel=1e-3)
    assert shown.tg == pytest.approx(200.0, rel=1e-3)


def test_above_concurrency_1_the_figures_are_estimates_of_every_stream_at_the_levels_pace() -> None:
    shown = figures(level(4, [record(0.04, 0.01)] * 4))
    assert not shown.exact
    assert shown.pp == pytest.approx(4 * 256 / 0.04, rel=1e-3)
    assert shown.tg == pytest.approx(4 * 100.0, rel=1e-3)


def test_a_level_without_completed_requests_has_no_figures_and_a_sweep_without_any_no_profile() -> None:
    failed = level(1, [RequestRecord(success=False, error_kind="timeout", error="timed out after 300 s")])
    assert figures(failed) == Figures(concurrency=1, pp=None, tg=None, exact=True)
    assert profile(HEADER, [failed]) is None
    assert profile_document(HEADER, [failed]) is None
    assert markdown_lines(HEADER, [failed]) == []
    assert profile({**HEADER, "output_tokens": None}, [level(1, [record(0.02, 0.005)])]) is None


def test_one_output_token_gives_pp_but_no_tg() -> None:
    shown = figures(level(1, [record(0.02, 0.005, tokens=1)]))
    assert shown.pp == pytest.approx(12800.0, rel=1e-3)
    assert shown.tg is None


def test_the_document_and_the_markdown_state_the_profile_and_each_levels_figures() -> None:
    levels = [level(1, [record(0.02, 0.005)] * 3), level(2, [record(0.04, 0.01)] * 4)]
    document = profile_document(HEADER, levels)
    assert document == {
        "tool": "llama-benchy 0.4.0",
        "name": "pp256 tg32",
        "command": "llama-benchy --pp 256 --tg 32 --depth 0 --concurrency 1 2",
        "pp": 256,
        "tg": 32,
        "depth": 0,
        "ignore_eos": True,
        "levels": [
            {"concurrency": 1, "pp_tps": 12800.0, "tg_tps": 200.0, "exact": True},
            {"concurrency": 2, "pp_tps": 12800.0, "tg_tps": 200.0, "exact": False},
        ],
    }
    lines = markdown_lines(HEADER, levels)
    assert lines[:3] == ["", "## Compared with llama-benchy", ""]
    assert "Profile: pp256 tg32, as `llama-benchy --pp 256 --tg 32 --depth 0 --concurrency 1 2 --exact-tg --no-cache` would" in lines[3]
    assert "| 1 | 12800.0 | 200.0 | the same experiment |" in lines
    assert "| 2 | 12800.0 | 200.0 | estimate: concurrency x the per-request rates |" in lines
    without_eos = markdown_lines({**HEADER, "ignore_eos": False}, levels)
    assert "--exact-tg" not in without_eos[3]
