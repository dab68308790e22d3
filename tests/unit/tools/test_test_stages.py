"""The CI stage runner counts what ran and fails when anything failed."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
import test_stages


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_junit_counts_single_suite(tmp_path: Path) -> None:
    xml = write(tmp_path / "r.xml", '<testsuite tests="7" failures="1" errors="1" skipped="2"></testsuite>')
    assert test_stages.junit_counts(xml) == (3, 2, 2)


def test_junit_counts_several_suites(tmp_path: Path) -> None:
    xml = write(
        tmp_path / "r.xml",
        '<testsuites><testsuite tests="3" failures="0" errors="0" skipped="0"/><testsuite tests="2" failures="1" errors="0" skipped="0"/></testsuites>',
    )
    assert test_stages.junit_counts(xml) == (4, 1, 0)


def test_junit_counts_missing_file(tmp_path: Path) -> None:
    assert test_stages.junit_counts(tmp_path / "absent.xml") is None


@pytest.fixture()
def output(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(test_stages, "OUTPUT", tmp_path)
    monkeypatch.setattr(test_stages, "REPO", tmp_path)
    return tmp_path


def test_stage_without_junit_counts_as_one_check(output: Path) -> None:
    ok = test_stages.run_stage(test_stages.Stage("ok", ("true",)))
    bad = test_stages.run_stage(test_stages.Stage("bad", ("false",)))
    assert (ok.passed, ok.failed) == (1, 0)
    assert (bad.passed, bad.failed, bad.rc) == (0, 1, 1)


def test_failing_stage_with_all_green_junit_still_fails(output: Path) -> None:
    script = f'printf \'<testsuite tests="2" failures="0" errors="0" skipped="0"/>\' > {output}/j.xml; exit 3'
    outcome = test_stages.run_stage(test_stages.Stage("late", ("bash", "-c", script), "j.xml"))
    assert (outcome.passed, outcome.failed, outcome.rc) == (2, 1, 3)


def test_stale_junit_is_not_reused(output: Path) -> None:
    write(output / "j.xml", '<testsuite tests="5" failures="0" errors="0" skipped="0"/>')
    outcome = test_stages.run_stage(test_stages.Stage("crash", ("false",), "j.xml"))
    assert (outcome.passed, outcome.failed) == (0, 1)


def test_main_prints_the_closing_line_and_exit_status(output: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(test_stages, "STAGES", (test_stages.Stage("a", ("true",)), test_stages.Stage("b", ("false",))))
    assert test_stages.main([]) == 1
    assert capsys.readouterr().out.rstrip().splitlines()[-1] == "1 passed, 1 failed"
    assert test_stages.main(["--only", "a"]) == 0
    assert capsys.readouterr().out.rstrip().splitlines()[-1] == "1 passed, 0 failed"


def test_labs_runs_the_labs_preparation_and_molecule_stages_only(output: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    stages = ("unit", "false"), ("lab-prepare", "true"), ("molecule-a", "true"), ("molecule-b-up", "true"), ("ruff", "false")
    monkeypatch.setattr(test_stages, "STAGES", tuple(test_stages.Stage(name, (command,)) for name, command in stages))
    monkeypatch.setattr(test_stages, "LANES", ())
    assert test_stages.main(["--labs"]) == 0
    out = capsys.readouterr().out
    assert out.rstrip().splitlines()[-1] == "3 passed, 0 failed"
    assert "==> lab-prepare" in out and "==> molecule-b-up" in out and "==> unit" not in out and "==> ruff" not in out


def test_a_failing_stage_names_itself_and_its_failed_cases(output: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Lanes run side by side, so the closing line names its stage; a failed test case is named before the log's tail."""
    cases = '<testcase classname="t.m" name="ok"/><testcase classname="t.m" name="slow"><failure message="assert 216 == 204&#10;  more"/></testcase>'
    write(output / "made.xml", f'<testsuite tests="2" failures="1" errors="0" skipped="0">{cases}</testsuite>')
    script = f"cp {output}/made.xml {output}/j.xml; exit 1"
    test_stages.run_stage(test_stages.Stage("unit", ("bash", "-c", script), "j.xml"))
    printed = capsys.readouterr().out.splitlines()
    assert printed[1].startswith("<== unit: FAILED (rc=1) in ")
    assert printed[2] == "    failed: t.m::slow: assert 216 == 204"


def test_main_names_the_failed_stages_and_cases_again_beside_the_closing_line(
    output: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A CI page that shows only the output's end (the table, the closing line) still says what failed."""
    failure = '<testcase classname="t.m" name="slow"><failure message="assert 216 == 204"/></testcase>'
    write(output / "made.xml", f'<testsuite tests="2" failures="1" errors="0" skipped="0"><testcase classname="t.m" name="ok"/>{failure}</testsuite>')
    stages = (
        test_stages.Stage("unit", ("bash", "-c", f"cp {output}/made.xml {output}/j.xml; exit 1"), "j.xml"),
        test_stages.Stage("ruff", ("true",)),
        test_stages.Stage("lint", ("false",)),
    )
    monkeypatch.setattr(test_stages, "STAGES", stages)
    monkeypatch.setattr(test_stages, "LANES", ())
    # One container the sampler read (not the machine's real ones: in CI the labs run beside the unit tests); its name
    # is never listed, so it counts as "unnamed".
    monkeypatch.setattr(test_stages, "container_cpu", lambda: {"f" * 64: 7.0})
    assert test_stages.main([]) == 1
    tail = capsys.readouterr().out.rstrip().splitlines()[-6:]
    assert tail[0].startswith("this machine's CPUs")
    assert tail[1] == "the labs' containers used 7 s of CPU: unnamed 7"
    assert tail[2:] == ["FAILED unit (rc=1); log: unit.log", "    t.m::slow: assert 216 == 204", "FAILED lint (rc=1); log: lint.log", "2 passed, 2 failed"]


def test_a_stage_counts_the_cpu_its_process_tree_used_not_the_time_it_waited(output: Path) -> None:
    """The CPU column (where `make test`'s time goes): a child's busy loop counts, a sleep does not."""
    spin = "import time\nend = time.process_time() + 0.6\nwhile time.process_time() < end: pass"
    busy = test_stages.run_stage(test_stages.Stage("busy", ("bash", "-c", f"python3 -c '{spin}'")))
    idle = test_stages.run_stage(test_stages.Stage("idle", ("sleep", "0.6")))
    assert busy.cpu >= 0.5 and busy.rc == 0
    assert idle.cpu < 0.2 and idle.seconds >= 0.6


def test_the_machine_cpu_counts_busy_and_idle_time_as_it_passes() -> None:
    busy, idle, steal = test_stages.machine_cpu()
    time.sleep(0.3)
    later_busy, later_idle, later_steal = test_stages.machine_cpu()
    assert later_busy >= busy and later_idle >= idle and later_steal >= steal
    assert 0.2 <= (later_busy - busy) + (later_idle - idle) <= 0.3 * (os.cpu_count() or 1) + 0.5  # every CPU's time passed


def test_the_machine_cpu_counts_steal_as_busy_and_apart() -> None:
    tick = os.sysconf("SC_CLK_TCK")
    # user nice system idle iowait irq softirq steal guest guest_nice
    stat = "cpu  100 10 50 800 40 5 5 90 0 0\ncpu0 1 2 3\n"
    assert test_stages.machine_cpu(stat) == (260 / tick, 840 / tick, 90 / tick)


def test_every_laned_stage_is_a_stage_once_and_each_group_is_one_run_of_stages() -> None:
    """A group runs where its first stage comes in STAGES: a stage outside it between its first and last would run
    after the whole group, out of the order STAGES shows."""
    names = [s.name for s in test_stages.STAGES]
    laned = [name for group in test_stages.LANES for lane in group for name in lane]
    assert sorted(laned) == sorted(set(laned)) and set(laned) <= set(names)
    for group in test_stages.LANES:
        members = {name for lane in group for name in lane}
        positions = sorted(names.index(name) for name in members)
        assert set(names[positions[0] : positions[-1] + 1]) == members, group


def test_make_tests_schedule_runs_the_engine_benchmark_alone_between_its_recovery_and_image_tests() -> None:
    """Beside the check above (each stage in one lane once, each group one run of STAGES): the engine's up and recovery
    stages in one lane, in that order; its benchmark a step of its own after them; its image tests (they end with a
    teardown) after it; no step wider than CI's 2 cores."""
    steps = test_stages.schedule([s.name for s in test_stages.STAGES])
    where = {name: i for i, step in enumerate(steps) for lane in step for name in lane}
    assert sorted(where) == sorted(s.name for s in test_stages.STAGES)
    (lane,) = [lane for step in steps for lane in step if "molecule-engine-up" in lane]
    assert lane.index("molecule-engine-up") < lane.index("molecule-engine-recovery")
    assert steps[where["molecule-engine-benchmark"]] == [["molecule-engine-benchmark"]]
    assert where["molecule-engine-recovery"] < where["molecule-engine-benchmark"] < where["molecule-engine-image"]
    assert all(len(step) <= 2 for step in steps)


def test_a_schedule_keeps_a_groups_lanes_side_by_side_and_leaves_out_what_was_not_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(test_stages, "LANES", ((("a", "b"), ("c",)), (("e",), ("f",))))
    assert test_stages.schedule(["a", "b", "c", "d", "e", "f"]) == [[["a", "b"], ["c"]], [["d"]], [["e"], ["f"]]]
    assert test_stages.schedule(["b", "d", "f"]) == [[["b"]], [["d"]], [["f"]]]


def test_container_cpu_reads_cgroup_v1_and_v2_accounts_and_skips_the_rest(tmp_path: Path) -> None:
    one, two = "a" * 64, "b" * 64
    v1, v2 = tmp_path / "cpuacct" / "libpod_parent", tmp_path / "machine.slice"
    (v1 / f"libpod-{one}").mkdir(parents=True)
    write(v1 / f"libpod-{one}" / "cpuacct.usage", "2500000000\n")
    (v1 / "conmon").mkdir()
    write(v1 / "conmon" / "cpuacct.usage", "9000000000\n")  # podman's own monitor, not a container
    (v2 / f"libpod-{two}.scope").mkdir(parents=True)
    write(v2 / f"libpod-{two}.scope" / "cpu.stat", "usage_usec 1500000\nuser_usec 1000000\nsystem_usec 500000\n")
    assert test_stages.container_cpu((v1, v2, tmp_path / "missing")) == {one: 2.5, two: 1.5}


def test_container_cpu_is_summed_by_the_scenario_the_lab_names_it_after() -> None:
    usage = {"1": 10.0, "2": 5.0, "3": 30.0, "4": 1.0, "5": 2.0}
    names = {"1": "serve-spark-head", "2": "serve-spark-worker1", "3": "engine-spark-head", "4": "buildah-x"}
    assert test_stages.by_scenario(usage, names) == {"engine": 30.0, "serve": 15.0, "unnamed": 2.0, "buildah-x": 1.0}


def test_the_container_sampler_keeps_a_removed_containers_last_reading(monkeypatch: pytest.MonkeyPatch) -> None:
    readings = iter([{"c1": 4.0, "c2": 1.0}, {"c2": 2.0}, {"c2": 3.0}])  # the last one: stop()'s own reading
    monkeypatch.setattr(test_stages, "container_cpu", lambda: next(readings))
    monkeypatch.setattr(test_stages.subprocess, "run", lambda *a, **k: type("R", (), {"stdout": "c1 model-spark-head\nc2 model-spark-worker1\n"})())
    sampler = test_stages.ContainerCpu()
    sampler.read()
    sampler.read()
    assert sampler.stop() == {"model": 7.0}
