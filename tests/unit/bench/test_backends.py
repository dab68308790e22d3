# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""bench/backends.py: the engine scenario's figures of both backends as one table, Ray's as ratios to mp's."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))
import backends  # noqa: E402

TIMINGS = {
    "engine_start_s": 20.0,
    "engine_killed_to_serving_s": 30.0,
    "worker_rank_killed_to_serving_s": 25.0,
    "reboot_to_serving_s": 90.0,
    "ray_engine_start_s": 40.0,
    "ray_engine_killed_to_serving_s": 45.0,
    "ray_worker_proc_killed_to_serving_s": 50.0,
}


def test_each_event_measured_on_both_backends_gets_its_ratios(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "engine-recovery.json"
    path.write_text(json.dumps(TIMINGS))
    doc = tmp_path / "benchmarks.md"
    doc.write_text("# Benchmarks\n")
    publish = backends.publish
    monkeypatch.setattr(backends, "publish", lambda heading, text, write: publish(heading, text, write, doc))
    assert backends.main(["--timings", str(path), "--write"]) == 0
    table = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| ")]
    assert table[2:] == [
        "| engine start (baseline) | 20.0 | 40.0 | 2.00 | 2.00 |",
        "| the head's EngineCore killed | 30.0 | 45.0 | 1.50 | 2.25 |",
        "| the worker's rank killed (mp: its headless vLLM; Ray: its RayWorkerProc) | 25.0 | 50.0 | 2.00 | 2.50 |",
    ]  # the raylet's row is left out: not measured
    assert backends.SECTION in doc.read_text() and "in flight" not in doc.read_text()  # no benchmark reports beside


def test_the_load_of_both_backends_at_each_level_as_ratios(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "engine-recovery.json"
    path.write_text(json.dumps(TIMINGS))
    level = {"mean_ttft_ms": 100.0, "mean_tpot_ms": 20.0, "output_throughput": 50.0}
    (tmp_path / "engine-benchmark.json").write_text(json.dumps({"levels": {"1": {"ours": level}, "2": {"ours": level}}}))
    slower = {"mean_ttft_ms": 150.0, "mean_tpot_ms": 30.0, "output_throughput": 40.0}
    (tmp_path / "engine-benchmark-ray.json").write_text(json.dumps({"levels": {"2": {"ours": slower}}}))
    assert backends.main(["--timings", str(path)]) == 0
    out = capsys.readouterr().out
    assert "| 2 | mean TTFT (ms) | 100.0 | 150.0 | 1.50 |" in out and "| 2 | output tokens/s | 50.0 | 40.0 | 0.80 |" in out
    assert "| 1 |" not in out  # only the levels both backends measured


def test_a_run_without_ray_s_baseline_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "engine-recovery.json"
    path.write_text(json.dumps({"engine_start_s": 20.0}))
    with pytest.raises(SystemExit):
        backends.main(["--timings", str(path)])
    assert "has no ray_engine_start_s (the baselines)" in capsys.readouterr().err
