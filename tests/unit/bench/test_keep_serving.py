# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""bench/keep_serving.py: the serve scenario's JUnit properties as the keep-serving section, ratios to the restart."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))
import keep_serving  # noqa: E402

JUNIT = """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest" tests="3">
<testcase classname="tests.test_liveness" name="test_wedged"><properties><property name="wedged_to_serving_s" value="31.2" /></properties></testcase>
<testcase classname="tests.test_memory_guard" name="test_memory"><properties>
<property name="restart_to_serving_s" value="8.0" /><property name="released_to_serving_s" value="10.0" /><property name="held_s" value="2.2" />
<property name="note" value="not a number" /></properties></testcase>
</testsuite></testsuites>
"""


def test_the_section_gives_each_time_and_its_ratio_to_the_restart(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    junit = tmp_path / "molecule-serve.xml"
    junit.write_text(JUNIT, encoding="utf-8")
    assert keep_serving.properties(junit) == {"wedged_to_serving_s": 31.2, "restart_to_serving_s": 8.0, "released_to_serving_s": 10.0, "held_s": 2.2}
    doc = tmp_path / "benchmarks.md"
    doc.write_text("# Benchmarks\n\n## Other\n\nkept\n", encoding="utf-8")
    publish = keep_serving.publish
    monkeypatch.setattr(keep_serving, "publish", lambda heading, text, write: publish(heading, text, write, doc))
    assert keep_serving.main(["--junit", str(junit), "--write"]) == 0
    written = doc.read_text(encoding="utf-8")
    assert "kept" in written and written.count(keep_serving.SECTION) == 1
    assert "| the vLLM unit restarted by hand (baseline; from the restart, once its new invocation runs) | 8.0 | 1.00 |" in written
    assert "restarts the unit | 31.2 | 3.90 |" in written and "starts vLLM | 10.0 | 1.25 |" in written
    assert "stayed stopped 2.2 s" in capsys.readouterr().out


def test_without_the_baseline_it_refuses(tmp_path: Path) -> None:
    junit = tmp_path / "molecule-serve.xml"
    junit.write_text(JUNIT.replace("restart_to_serving_s", "other_s"), encoding="utf-8")
    with pytest.raises(SystemExit):
        keep_serving.main(["--junit", str(junit)])


def test_the_engine_scenario_s_wedge_times_as_a_second_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    junit = tmp_path / "molecule-serve.xml"
    junit.write_text(JUNIT, encoding="utf-8")
    engine = tmp_path / "engine-recovery.json"
    engine.write_text('{"wedge_by_counters_s": 17.0, "wedge_by_completion_s": 42.5, "engine_start_s": 30.0}', encoding="utf-8")
    assert keep_serving.main(["--junit", str(junit), "--engine-timings", str(engine)]) == 0
    out = capsys.readouterr().out
    assert "no token for 12 s in vLLM's counters | 17.0 | 0.40 |" in out and "(3 failed probes of 8 s, 3 s apart; baseline) | 42.5 | 1.00 |" in out
    engine.write_text('{"wedge_by_counters_s": 17.0}', encoding="utf-8")
    with pytest.raises(SystemExit):
        keep_serving.main(["--junit", str(junit), "--engine-timings", str(engine)])
