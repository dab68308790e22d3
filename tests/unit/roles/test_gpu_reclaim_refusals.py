# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The gpu_reclaim role's refusals as Ansible runs them (issue 15): its own tasks that fail on a protected unit or
an own container named in the settings, and report protected units a pattern matches, run on this machine against a
plan the reclaim_plan filter makes from a given gpu_info result and services (nothing is stopped: the tasks that act
are not run)."""

from __future__ import annotations

import subprocess
import sys
import typing as t
from pathlib import Path

import yaml
from ansible_run import play as ansible_play

REPO = Path(__file__).resolve().parents[3]
ROLE = REPO / "roles" / "gpu_reclaim"
# The role's tasks between the plan and the stop, taken from tasks/main.yml by name.
CHECKS = (
    "Refuse protected units and the collection's own containers named in the settings",
    "Report protected units that gpu_reclaim_units patterns match (left alone)",
    "Show the plan",
)
GPU_INFO = {
    "processes": [
        {
            "pid": 3200,
            "name": "VLLM::EngineCore",
            "used_mib": 80000,
            "unit": f"docker-{'a' * 64}.scope",
            "user_unit": False,
            "cmdline": "VLLM::EngineCore",
            "container_id": "a" * 64,
            "container_name": "sparkops-vllm",
            "container_running": True,
            "container_confirmed": True,
            "start_time": 4242,
        }
    ]
}
SERVICES = {
    name: {"name": name, "state": "running", "status": "enabled", "source": "systemd"}
    for name in ("ssh.service", "systemd-journald.service", "sparkops-vllm.service", "spark-old.service", "vllm-cluster.service")
}


def run_role_checks(tmp_path: Path, **settings: t.Any) -> subprocess.CompletedProcess[str]:
    tasks = yaml.safe_load((ROLE / "tasks" / "main.yml").read_text())
    checks = [task for task in tasks if task.get("name") in CHECKS]
    assert [task["name"] for task in checks] == list(CHECKS)
    plan = {"name": "Plan", "ansible.builtin.set_fact": {"gpu_reclaim_plan": "{{ gpu | sparkops.inference.reclaim_plan(services, __gpu_reclaim_settings) }}"}}
    play = [
        {
            "name": "gpu_reclaim's checks",
            "hosts": "all",
            "gather_facts": False,
            "vars_files": [str(ROLE / "defaults" / "main.yml"), str(ROLE / "vars" / "main.yml")],
            "tasks": [plan, *checks],
        }
    ]
    inventory = {"all": {"hosts": {"spark-head": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}}}}
    return ansible_play(tmp_path, inventory, yaml.safe_dump(play, sort_keys=False), {"gpu": GPU_INFO, "services": SERVICES, **settings})


def flat(run: subprocess.CompletedProcess[str]) -> str:
    return " ".join((run.stdout + run.stderr).split())


def test_pattern_matching_protected_units_is_reported_and_the_rest_planned(tmp_path: Path) -> None:
    """ATTACK: gpu_reclaim_units ['s*'] - ssh, systemd-journald and the own sparkops-vllm are reported, left alone."""
    run = run_role_checks(tmp_path, gpu_reclaim_units=["s*"])
    output = flat(run)
    assert run.returncode == 0, output[-3000:]
    assert (
        "host spark-head: gpu_reclaim_units pattern(s) match protected unit(s), which are never stopped or disabled and are left alone: "
        "sparkops-vllm.service (matched by s*), ssh.service (matched by s*), systemd-journald.service (matched by s*)"
    ) in output, output[-3000:]
    assert "stop and disable: spark-old.service" in output
    assert "remove containers: none" in output  # the own container, kept
    assert "protected units left alone: sparkops-vllm.service, ssh.service, systemd-journald.service" in output


def test_protected_unit_named_exactly_fails_naming_the_variable(tmp_path: Path) -> None:
    """ATTACK: gpu_reclaim_units ['ssh'] fails the role before anything is changed, naming the variable and the unit."""
    run = run_role_checks(tmp_path, gpu_reclaim_units=["vllm-cluster", "ssh"])
    output = flat(run)
    assert run.returncode != 0, output[-3000:]
    assert "host spark-head: nothing was changed. gpu_reclaim_units names protected unit(s) ssh: they are never stopped or disabled" in output, output[-3000:]
    assert "gpu_reclaim_containers" not in output


def test_own_container_named_fails_naming_the_variable(tmp_path: Path) -> None:
    """ATTACK: gpu_reclaim_containers naming the collection's own container (by name, or by the full id of one)."""
    run = run_role_checks(tmp_path, gpu_reclaim_containers=["vllm_node", "sparkops-ray", "a" * 64])
    output = flat(run)
    assert run.returncode != 0, output[-3000:]
    assert f"gpu_reclaim_containers names the collection's own container(s) sparkops-ray, {'a' * 64} (gpu_reclaim_own_containers)" in output, output[-3000:]
    assert "gpu_reclaim_units names" not in output


def test_legitimate_settings_pass(tmp_path: Path) -> None:
    run = run_role_checks(tmp_path, gpu_reclaim_units=["vllm-*", "spark-old"], gpu_reclaim_containers=["vllm_node"])
    output = flat(run)
    assert run.returncode == 0, output[-3000:]
    assert "stop and disable: vllm-cluster.service, spark-old.service" in output
    assert "protected units left alone: none" in output
    assert "remove containers: vllm_node" in output
