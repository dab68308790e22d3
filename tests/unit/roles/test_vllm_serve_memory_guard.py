# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The vllm_serve role's memory guard as Ansible renders it (defaults, vars, memory_guard_check.yml against this
machine's real /proc/meminfo, the service template): what it stops on each node per backend, its resume level raised
to the memory gate's, its service as systemd reads it, and levels that make no sense (or reach MemTotal) refused
naming the variable before anything is written. The guard's decisions: tests/unit/plugins/module_utils/test__memory_guard.py;
memory really consumed in the lab: molecule/serve/tests/test_memory_guard.py."""

from __future__ import annotations

import json
import math
import typing as t
from pathlib import Path

import pytest
import systemd_syntax
import yaml
from ansible_collections.sparkops.inference.plugins.module_utils._memory_guard import LEVEL_FIELDS
from ansible_run import play, run_playbook
from vllm_serve_inventory import inventory

REPO = Path(__file__).resolve().parents[3]
ROLE = REPO / "roles" / "vllm_serve"


def mem_total_mib() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) // 1024
    raise AssertionError("no MemTotal in /proc/meminfo")


def playbook(out: Path) -> str:
    tasks = [
        {"name": "The role's check", "ansible.builtin.include_tasks": f"{ROLE}/tasks/memory_guard_check.yml"},
        {
            "name": "Write the settings",
            "ansible.builtin.copy": {
                "content": "{{ __vllm_serve_memory_guard_node_settings | to_nice_json }}",
                "dest": f"{out}/{{{{ inventory_hostname }}}}.json",
                "mode": "0644",
            },
        },
        {
            "name": "Render the service",
            "ansible.builtin.template": {
                "src": f"{ROLE}/templates/sparkops-vllm-memory-guard.service.j2",
                "dest": f"{out}/{{{{ inventory_hostname }}}}.service",
                "mode": "0644",
            },
        },
    ]
    plays = [
        {
            "name": "Render the memory guard on every node",
            "hosts": "spark_head:spark_workers",
            "gather_facts": False,
            "vars_files": [f"{ROLE}/defaults/main.yml", f"{ROLE}/vars/main.yml"],
            "tasks": tasks,
        }
    ]
    return yaml.safe_dump(plays, sort_keys=False)


def render(tmp_path: Path, **extra: t.Any) -> dict[str, str]:
    out = tmp_path / "out"
    out.mkdir()
    run_playbook(tmp_path, inventory(), playbook(out), extra)
    return {path.name: path.read_text() for path in out.iterdir()}


def test_ray_mode_guards_vllm_on_the_head_and_rays_worker_on_a_worker_resuming_where_the_gate_would_start(tmp_path: Path) -> None:
    files = render(tmp_path, vllm_serve_backend="ray")
    head, worker = json.loads(files["spark-head.json"]), json.loads(files["spark-worker1.json"])
    assert head["units"] == ["sparkops-vllm.service"] and worker["units"] == ["sparkops-ray-worker.service"]
    gate = math.ceil(mem_total_mib() * 0.8)  # the inventory's sparkops_gpu_memory_utilization x MemTotal
    assert head == {
        "units": ["sparkops-vllm.service"],
        "state_path": "/var/lib/sparkops/vllm-memory-guard.json",
        "textfile_dir": "/var/lib/prometheus/node-exporter",
        "stop_available_mib": 2048,
        "stop_psi_full_pct": 40.0,
        "stop_psi_samples": 3,
        "resume_available_mib": max(8192, gate),
        "resume_hold_s": 30.0,
        "interval_s": 1.0,
        "max_stops_per_hour": 3,
        "names": {key: f"vllm_serve_memory_guard_{key}" for key in head["names"]},
    }
    assert set(head["names"]) == set(LEVEL_FIELDS)  # every level the guard reads, named for its variable
    unit = systemd_syntax.read(files["spark-head.service"])
    assert unit.commands["ExecStart"] == [["/usr/local/sbin/sparkops-vllm-memory-guard", "/etc/sparkops/vllm-memory-guard.json"]]
    service = files["spark-head.service"]
    for line in ("Restart=on-failure", "RestartPreventExitStatus=2", "OOMScoreAdjust=-1000", "StartLimitIntervalSec=0", "WantedBy=multi-user.target"):
        assert line in service.splitlines(), (line, service)
    assert "stops sparkops-ray-worker.service" in files["spark-worker1.service"]


def test_mp_mode_guards_each_ranks_unit_and_a_set_gate_level_and_psi_off_are_followed(tmp_path: Path) -> None:
    files = render(
        tmp_path,
        vllm_serve_backend="mp",
        vllm_serve_gate_min_available_mib=512,
        vllm_serve_memory_guard_stop_psi_full_pct=None,
        vllm_serve_memory_guard_stop_available_mib="256",  # as -e gives it: a string
        vllm_serve_memory_guard_resume_available_mib="1024",
        vllm_serve_memory_guard_textfile_dir="",
    )
    for host in ("spark-head", "spark-worker1"):
        settings = json.loads(files[f"{host}.json"])
        assert settings["units"] == ["sparkops-vllm.service"], host
        assert (settings["stop_available_mib"], settings["resume_available_mib"], settings["stop_psi_full_pct"]) == (256, 1024, None), settings
        assert "textfile_dir" not in settings


@pytest.mark.parametrize(
    ("extra", "said"),
    [
        ({"vllm_serve_memory_guard_interval_s": 0}, "vllm_serve_memory_guard_interval_s is 0.0: seconds above 0"),
        ({"vllm_serve_memory_guard_stop_available_mib": 10**9}, "vllm_serve_memory_guard_stop_available_mib is 1000000000 MiB, not below this host's MemTotal"),
        ({"vllm_serve_memory_guard_stop_psi_full_pct": 150}, "vllm_serve_memory_guard_stop_psi_full_pct is 150.0: a percentage above 0 and at most 100"),
        (
            {"vllm_serve_memory_guard_stop_available_mib": 4096, "vllm_serve_memory_guard_resume_available_mib": 2048, "vllm_serve_gate_min_available_mib": 1},
            "vllm_serve_memory_guard_resume_available_mib (2048 MiB) must be above vllm_serve_memory_guard_stop_available_mib (4096 MiB)",
        ),
        # The resume level raised to the gate's: vLLM taking all of MemTotal leaves no level to resume at.
        ({"sparkops_gpu_memory_utilization": 1.0}, "(the resume level is the memory gate's"),
    ],
)
def test_levels_that_make_no_sense_are_refused_naming_the_variable_before_anything_is_written(tmp_path: Path, extra: dict[str, t.Any], said: str) -> None:
    out = tmp_path / "out"
    out.mkdir()
    proc = play(tmp_path, inventory(), playbook(out), extra)
    text = " ".join((proc.stdout + proc.stderr).split())
    assert proc.returncode != 0 and said in text, text[-2000:]
    assert list(out.iterdir()) == []
