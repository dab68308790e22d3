"""bench/run_all.py (`make bench`) runs every bench, and bench/tool_env.py finds the venv's tools without activation."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest
from ansible_collections.sparkops.inference.bench import run_all, tool_env

BENCH = Path(run_all.__file__).resolve().parent
HELPERS = {"benchmarks_doc", "run_all", "tool_env"}


def test_every_bench_is_run() -> None:
    benches = {path.stem for path in BENCH.glob("*.py")} - HELPERS
    assert benches == set(run_all.NAMES)


def test_all_runs_serve_readiness_once_last_on_the_demo_lab() -> None:
    chosen = run_all.selected([], no_lab=False)
    names = [bench.name for bench in chosen]
    assert sorted(set(names)) == run_all.NAMES
    assert names.count("serve_readiness") == 1
    assert (chosen[-1].name, chosen[-1].args, chosen[-1].lab) == ("serve_readiness", ("--reboot",), "demo")
    assert [bench.lab for bench in chosen[:2]] == ["none", "none"]  # the cheap ones first


def test_no_lab_runs_only_those_that_need_none() -> None:
    chosen = run_all.selected([], no_lab=True)
    assert [bench.name for bench in chosen] == ["snapshot_verify", "relay_throughput"]
    assert all(bench.args == () for bench in chosen)
    assert run_all.selected(["serve_readiness"], no_lab=True) == []  # it needs the demo lab
    assert [bench.name for bench in run_all.selected(["site_runs"], no_lab=False)] == ["site_runs"]


def test_commands() -> None:
    relay = run_all.commands(run_all.Bench("relay_throughput"), write=True)
    assert relay == [[sys.executable, "bench/relay_throughput.py", "--write"]]
    ray = run_all.commands(run_all.Bench("ray_formation", lab="own", writes=False), write=True)
    assert ray == [[sys.executable, "bench/ray_formation.py"]]
    reboot = run_all.commands(run_all.Bench("serve_readiness", ("--reboot",), lab="demo"), write=False)
    assert reboot[0][-3:] == ["up", "--nodes", "2"]
    assert reboot[1] == ["ansible-playbook", "site.yml", "-i", "inventories/lab"]
    assert reboot[2][1:] == ["bench/serve_readiness.py", "--reboot"]


def test_dry_run_runs_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_all.main(["--dry-run"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].endswith("bench/snapshot_verify.py")
    assert lines[-1].endswith("spark_lab.py down")  # the demo lab is removed after the reboot part


def test_tool_env_puts_the_running_pythons_folder_first_once(monkeypatch: pytest.MonkeyPatch) -> None:
    venv_bin = str(Path(sys.executable).parent)
    monkeypatch.setenv("PATH", os.pathsep.join(["/usr/bin", venv_bin, "/bin"]))
    env = tool_env.tool_env(ANSIBLE_FORCE_COLOR="0")
    assert env["PATH"].split(os.pathsep) == [venv_bin, "/usr/bin", "/bin"]
    assert env["ANSIBLE_COLLECTIONS_PATH"] == str(BENCH.parent / ".collections")
    assert env["ANSIBLE_FORCE_COLOR"] == "0"


def test_tool_env_finds_ansible_playbook_with_the_venv_not_activated(monkeypatch: pytest.MonkeyPatch) -> None:
    if not (Path(sys.executable).parent / "ansible-playbook").exists():
        pytest.skip("ansible-playbook is not beside this Python")
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    found = shutil.which("ansible-playbook", path=tool_env.tool_env()["PATH"])
    assert found == str(Path(sys.executable).parent / "ansible-playbook")
