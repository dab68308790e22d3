# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The vllm_serve role's liveness probe as Ansible renders it (defaults, vars, templates, its settings check): its
timer's cadence, its service's command as systemd reads it, its settings per backend (the key's path, never the
key), and settings that make no sense refused naming the variable. The probe's decisions:
tests/unit/plugins/module_utils/test__serve_liveness.py; a wedged engine restarted in the lab:
molecule/serve/tests/test_liveness.py."""

from __future__ import annotations

import json
import typing as t
from pathlib import Path

import pytest
import systemd_syntax
import yaml
from ansible_run import play, run_playbook
from vllm_serve_inventory import inventory

REPO = Path(__file__).resolve().parents[3]
ROLE = REPO / "roles" / "vllm_serve"
KEY = "sk-never-in-a-file-but-its-own-0123456789"


def check_task() -> dict[str, t.Any]:
    tasks = yaml.safe_load((ROLE / "tasks" / "main.yml").read_text())
    opened = [inner for task in tasks for inner in task.get("block", [task])]  # the checks share a block (its tags)
    (task,) = [task for task in opened if str(task.get("name", "")).startswith("Check the liveness settings")]
    return dict(task)


def playbook(out: Path) -> str:
    render = [
        {"name": f"Render {name}", "ansible.builtin.template": {"src": f"{ROLE}/templates/{name}.j2", "dest": f"{out}/{name}", "mode": "0644"}}
        for name in ("vllm-liveness.json", "sparkops-vllm-liveness.service", "sparkops-vllm-liveness.timer")
    ]
    plays = [
        {
            "name": "Render the liveness probe on the head",
            "hosts": "spark-head",
            "gather_facts": False,
            "vars_files": [f"{ROLE}/defaults/main.yml", f"{ROLE}/vars/main.yml"],
            "tasks": [check_task(), *render],
        }
    ]
    return yaml.safe_dump(plays, sort_keys=False)


def render(tmp_path: Path, **extra: t.Any) -> dict[str, str]:
    out = tmp_path / "out"
    out.mkdir()
    run_playbook(tmp_path, inventory(), playbook(out), {"__vllm_serve_api_key": KEY, **extra})
    return {path.name: path.read_text() for path in out.iterdir()}


def test_ray_mode_probes_the_heads_endpoint_and_may_restart_ray_when_a_node_is_lost(tmp_path: Path) -> None:
    files = render(tmp_path, vllm_serve_backend="ray")
    settings = json.loads(files["vllm-liveness.json"])
    assert settings == {
        "url": "http://192.168.100.10:8000",
        "model": "qwen3.5-122b",
        "unit": "sparkops-vllm.service",
        "restart_units": ["sparkops-vllm.service"],
        "ray_head_unit": "sparkops-ray-head.service",
        "gate_settings": "/etc/sparkops/vllm-gate.json",
        "api_key_file": "/etc/sparkops/private/vllm-api-key",
        "state_file": "/var/lib/sparkops/vllm-liveness.json",
        "interval_s": 30.0,
        "failures": 3,
        "max_restarts_per_hour": 3,
        "timeout_s": 60.0,
        "startup_grace_s": 1800.0,
        "wedge_after_s": 120.0,
    }
    assert KEY not in "".join(files.values())
    service = files["sparkops-vllm-liveness.service"]
    unit = systemd_syntax.read(service)
    assert unit.commands["ExecStart"] == [["/usr/local/sbin/sparkops-vllm-liveness", "/etc/sparkops/vllm-liveness.json"]]
    assert "Type=oneshot" in service and "EnvironmentFile=-/etc/sparkops/ray.env" in service and "TimeoutStartSec=300" in service
    timer = files["sparkops-vllm-liveness.timer"]
    assert "OnUnitInactiveSec=30.0s" in timer or "OnUnitInactiveSec=30s" in timer, timer
    assert "WantedBy=timers.target" in timer


def test_mp_mode_restarts_the_heads_rank_and_has_no_ray(tmp_path: Path) -> None:
    files = render(tmp_path, vllm_serve_backend="mp", vllm_serve_liveness_interval_s=5, vllm_serve_liveness_timeout_s=10)
    settings = json.loads(files["vllm-liveness.json"])
    assert (settings["ray_head_unit"], settings["gate_settings"], settings["restart_units"]) == ("", "", ["sparkops-vllm.service"])
    assert "ray.env" not in files["sparkops-vllm-liveness.service"] and "TimeoutStartSec=100" in files["sparkops-vllm-liveness.service"]
    assert "OnUnitInactiveSec=5s" in files["sparkops-vllm-liveness.timer"]


def test_without_a_key_the_probe_sends_none(tmp_path: Path) -> None:
    assert json.loads(render(tmp_path, __vllm_serve_api_key="")["vllm-liveness.json"])["api_key_file"] == ""


@pytest.mark.parametrize(
    ("variable", "value", "kind"),
    [
        ("vllm_serve_liveness_interval_s", 0, "a number of seconds above 0"),
        ("vllm_serve_liveness_timeout_s", -5, "a number of seconds above 0"),
        ("vllm_serve_liveness_startup_grace_s", "soon", "a number of seconds above 0"),
        ("vllm_serve_liveness_wedge_after_s", 0, "a number of seconds above 0"),
        ("vllm_serve_liveness_failures", 0, "a whole number of at least 1"),
        ("vllm_serve_liveness_failures", 2.5, "a whole number of at least 1"),
        ("vllm_serve_liveness_max_restarts_per_hour", True, "a whole number of at least 1"),
    ],
)
def test_settings_that_make_no_sense_are_refused_naming_the_variable(tmp_path: Path, variable: str, value: t.Any, kind: str) -> None:
    out = tmp_path / "out"
    out.mkdir()
    proc = play(tmp_path, inventory(), playbook(out), {"__vllm_serve_api_key": KEY, variable: value})
    said = " ".join((proc.stdout + proc.stderr).split())
    assert proc.returncode != 0 and f"host spark-head: {variable} must be {kind}, got" in said, said[-2000:]
    assert list(out.iterdir()) == []  # refused before anything is written
