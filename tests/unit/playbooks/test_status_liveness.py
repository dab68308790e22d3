# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""playbooks/status.yml's liveness part as Ansible runs it: its tasks that read the probe's settings and state on the
head and put them together, then the status_report module given them as status.yml gives them, on this machine
(local connection), one host a case: a healthy probe, one that gave up, none installed, a garbled state file, a
state path that cannot be read, and a head that could not be reached. The files are written by the probe's own
writer (_serve_liveness.save_state); status.yml reads them where the vllm_serve role has the probe write them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import typing as t
from pathlib import Path

import pytest
import yaml
from ansible_collections.sparkops.inference.plugins.module_utils._serve_liveness import State, save_state
from ansible_run import ANSIBLE_PLAYBOOK

REPO = Path(__file__).resolve().parents[3]
STATUS = REPO / "playbooks" / "status.yml"
ROLE_VARS = REPO / "roles" / "vllm_serve" / "vars" / "main.yml"
READ = "Status | Read the liveness probe's settings and state (on the head)"
PART = "Status | Put the cluster's part of the report together (on the head)"
REPORT = "Status | Write the status report on the controller (JSON and Markdown; docs/status.md)"
SETTINGS = {
    "url": "http://127.0.0.1:8000",
    "model": "tiny-moe",
    "unit": "sparkops-vllm.service",
    "interval_s": 30,
    "failures": 3,
    "max_restarts_per_hour": 3,
    "wedge_after_s": 120,
}
CASES = ("healthy", "gave-up", "absent", "garbled", "directory", "unreachable")


def status_play() -> dict[str, t.Any]:
    (play,) = yaml.safe_load(STATUS.read_text())
    return t.cast("dict[str, t.Any]", play)


def status_task(name: str) -> dict[str, t.Any]:
    (task,) = [task for task in status_play()["tasks"] if task.get("name") == name]
    return t.cast("dict[str, t.Any]", task)


def head_units(timer: bool) -> dict[str, t.Any]:
    """The head's units as unit_status reads them, the probe's timer among them or not."""
    units = [{"unit": "sparkops-vllm.service", "load_state": "loaded", "active_state": "active", "sub_state": "running"}]
    if timer:
        units.append({"unit": "sparkops-vllm-liveness.timer", "load_state": "loaded", "active_state": "active", "sub_state": "waiting", "enabled": "enabled"})
    return {"units": units, "health_events": [], "notes": []}


def lay_out(tmp_path: Path, case: str) -> tuple[Path, Path]:
    """The case's settings and state files (the probe's writer for the state); their paths."""
    folder = tmp_path / case
    folder.mkdir()
    settings, state = folder / "etc-vllm-liveness.json", folder / "var-vllm-liveness.json"
    now = time.time()
    if case in ("healthy", "gave-up", "garbled", "directory", "unreachable"):
        settings.write_text(json.dumps(SETTINGS))
    if case in ("healthy", "unreachable"):
        save_state(str(state), State(restarts=[now - 600], last_probe={"at": now - 10, "ok": True, "state": "ready", "message": "health: 200"}))
    elif case == "gave-up":
        save_state(str(state), State(restarts=[now - 900, now - 600, now - 300], gave_up_invocation="9a8b", last_probe={"at": now - 5, "ok": False}))
    elif case == "garbled":
        state.write_bytes(b'{"failures": 2, "restarts": [\x00\x00\x00')
    elif case == "directory":
        state.mkdir()
    return settings, state


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, t.Any]]:
    """Each case's status.json and status.md, from one ansible-playbook run."""
    tmp_path = tmp_path_factory.mktemp("status-liveness")
    hosts: dict[str, t.Any] = {}
    for case in CASES:
        settings, state = lay_out(tmp_path, case)
        hosts[case] = {
            "ansible_connection": "local",
            "ansible_python_interpreter": sys.executable,
            "test_settings": str(settings),
            "test_state": str(state),
            "test_dest": str(tmp_path / case / "reports"),
            "__status_recon": {"unreachable": True, "msg": "ssh: no route"} if case == "unreachable" else {},
            "sparkops_cluster": {"head": case},
            "test_units": head_units(timer=case != "absent"),
        }
    part_task = status_task(PART)
    part_vars = {name: value for name, value in part_task["vars"].items() if name.startswith("__status_liveness")}
    report_task = status_task(REPORT)
    play = {
        "name": "What status.yml reads of the liveness probe, and reports",
        "hosts": "all",
        "gather_facts": False,
        "vars": {"__status_head": True},
        "tasks": [
            # status.yml's play variables name the files; here each case's.
            {
                "name": "Where this case's files are",
                "ansible.builtin.set_fact": {"__status_liveness_settings": "{{ test_settings }}", "__status_liveness_state": "{{ test_state }}"},
            },
            status_task(READ),
            {
                "name": "status.yml's liveness part",
                "ansible.builtin.set_fact": {"__status_liveness_part": part_task["ansible.builtin.set_fact"]["__status_liveness_part"]},
                "vars": part_vars,
                "when": part_task["when"],
            },
            {
                "name": "status_report given the part as status.yml gives it",
                "sparkops.inference.status_report": {
                    "nodes": {"{{ inventory_hostname }}": {"role": "head", "units": "{{ test_units }}"}},
                    "liveness": report_task["sparkops.inference.status_report"]["liveness"],
                    "dest_dir": "{{ test_dest }}",
                },
            },
        ],
    }
    (tmp_path / "hosts.yml").write_text(yaml.safe_dump({"all": {"hosts": hosts}}))
    (tmp_path / "play.yml").write_text(yaml.safe_dump([play], sort_keys=False))
    env = {**os.environ, "ANSIBLE_COLLECTIONS_PATH": str(REPO / ".collections"), "ANSIBLE_FORCE_COLOR": "0", "ANSIBLE_NOCOLOR": "1"}
    proc = subprocess.run(
        [ANSIBLE_PLAYBOOK, "-i", str(tmp_path / "hosts.yml"), str(tmp_path / "play.yml")], capture_output=True, text=True, check=False, env=env, cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    found = {}
    for case in CASES:
        reports_dir = tmp_path / case / "reports"
        found[case] = {"json": json.loads((reports_dir / "status.json").read_text()), "md": (reports_dir / "status.md").read_text()}
    return found


def test_status_reads_the_files_where_the_role_writes_them() -> None:
    play_vars = status_play()["vars"]
    role_vars = yaml.safe_load(ROLE_VARS.read_text())
    assert play_vars["__status_liveness_settings"] == role_vars["__vllm_serve_liveness_settings"]
    assert play_vars["__status_liveness_state"] == role_vars["__vllm_serve_liveness_state"]
    # The timer's state comes from the units status.yml reads: its pattern takes the probe's timer and service.
    units_task = status_task("Status | Read the sparkops units and their last warnings from the journal")
    assert units_task["sparkops.inference.unit_status"]["patterns"] == ["sparkops-*"]
    assert role_vars["__vllm_serve_liveness_timer"] == "sparkops-vllm-liveness.timer"


def test_healthy_probe(reports: dict[str, dict[str, t.Any]]) -> None:
    liveness = reports["healthy"]["json"]["liveness"]
    assert (liveness["installed"], liveness["timer_active"], liveness["settings_error"], liveness["state_error"]) == (True, True, None, None)
    assert liveness["settings"] == {"interval_s": 30, "failures": 3, "max_restarts_per_hour": 3, "wedge_after_s": 120}
    assert liveness["state"]["last_probe"]["ok"] is True and liveness["state"]["failures"] == 0
    assert len(liveness["state"]["restarts"]) == 1
    assert "- Failed probes in a row: 0 of 3 (then it restarts vLLM).\n" in reports["healthy"]["md"]
    assert "- Restarts in the last hour: 1 of at most 3: " in reports["healthy"]["md"]


def test_gave_up_is_loud(reports: dict[str, dict[str, t.Any]]) -> None:
    assert reports["gave-up"]["json"]["liveness"]["state"]["gave_up"] is True
    markdown = reports["gave-up"]["md"]
    assert "- Liveness: **stopped acting after 3 restarts in an hour: restart vLLM or rerun --tags serve**\n" in markdown
    assert "## Liveness probe\n\n**Stopped acting after 3 restarts in an hour: restart vLLM or rerun --tags serve.**\n" in markdown


def test_no_probe_installed(reports: dict[str, dict[str, t.Any]]) -> None:
    """Both files absent (slurp's "File not found") and no timer: not installed, and no error."""
    liveness = reports["absent"]["json"]["liveness"]
    assert liveness["installed"] is False
    assert (liveness["settings"], liveness["settings_error"], liveness["state"], liveness["state_error"]) == (None, None, None, None)
    assert "- Liveness: **not installed**\n" in reports["absent"]["md"]
    assert "## Liveness probe\n\n**Not installed** on the head" in reports["absent"]["md"]


def test_garbled_or_unreadable_state(reports: dict[str, dict[str, t.Any]]) -> None:
    garbled = reports["garbled"]["json"]["liveness"]
    assert (garbled["state"], garbled["state_error"]) == (None, "not JSON (Expecting value: line 1 column 30 (char 29))")
    assert "- State: **unreadable** (not JSON (Expecting value: line 1 column 30 (char 29))).\n" in reports["garbled"]["md"]
    assert "- Liveness: **state unreadable**\n" in reports["garbled"]["md"]
    directory = reports["directory"]["json"]["liveness"]
    assert directory["state"] is None and "directory" in directory["state_error"], directory


def test_head_unreachable_is_not_asked(reports: dict[str, dict[str, t.Any]]) -> None:
    assert reports["unreachable"]["json"]["liveness"] is None
    assert "## Liveness probe\n\nNot asked.\n" in reports["unreachable"]["md"]
