# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The vllm_serve role's settings checks (tasks/settings_check.yml): one named check each, the failure naming the
variable and the value it got, for the head and the worker of the role tests' inventory; the inventory's settings pass."""

from __future__ import annotations

import typing as t
from pathlib import Path

import pytest
from ansible_run import play
from vllm_serve_inventory import inventory

ROLE = Path(__file__).resolve().parents[3] / "roles" / "vllm_serve"
PLAYBOOK = f"""
- name: Check the vllm_serve settings
  hosts: all
  gather_facts: false
  vars_files:
    - {ROLE}/defaults/main.yml
    - {ROLE}/vars/main.yml
  tasks:
    - name: Check
      ansible.builtin.include_tasks: {ROLE}/tasks/settings_check.yml
"""


def said(tmp_path: Path, **extra: t.Any) -> tuple[int, str]:
    proc = play(tmp_path, inventory(), PLAYBOOK, extra)
    return proc.returncode, " ".join((proc.stdout + proc.stderr).split())


def test_the_inventorys_settings_pass_every_check(tmp_path: Path) -> None:
    code, output = said(tmp_path)
    assert code == 0, output[-3000:]
    assert "spark-head : ok=" in output and "failed=0" in output


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"vllm_serve_port": 70000}, "host spark-head: vllm_serve_port: must be a port from 1 to 65535, got 70000"),
        ({"vllm_serve_gpu_memory_utilization": 1.5}, "vllm_serve_gpu_memory_utilization: must be a fraction above 0 and at most 1, got 1.5"),
        ({"vllm_serve_fabric_ip": "spark-head.lan"}, "vllm_serve_fabric_ip: must be this node's fabric IPv4 address, got 'spark-head.lan'"),
        ({"vllm_serve_tensor_parallel_size": 0}, "vllm_serve_tensor_parallel_size: must be 1 or more, got 0"),
        (
            {"vllm_serve_tensor_parallel_size": 4},
            "vllm_serve_tensor_parallel_size x vllm_serve_pipeline_parallel_size: 4 x 1 GPUs, more than the 2 node(s) x 1 GPU(s)",
        ),
        ({"vllm_serve_backend": "mp", "vllm_serve_tensor_parallel_size": 1}, "vllm_serve_backend: mp mode runs one rank per GPU on every node"),
        ({"vllm_serve_runtime": "docker", "vllm_serve_backend": "mp", "vllm_serve_image": "vllm/vllm-openai"}, "vllm_serve_image: the docker runtime runs"),
        (
            {"vllm_serve_runtime": "docker", "vllm_serve_backend": "ray", "vllm_serve_image": "vllm/vllm-openai:v0.30.0"},
            "vllm_serve_runtime: the docker runtime needs vllm_serve_backend mp (vLLM on Ray runs from Ray's venv), got backend ray",
        ),
        ({"vllm_serve_max_model_len": -5}, "vllm_serve_max_model_len: must be null (the model's own) or a length above 0, got -5"),
    ],
)
def test_a_bad_setting_fails_its_own_check_naming_the_variable_and_value(tmp_path: Path, extra: dict[str, t.Any], message: str) -> None:
    code, output = said(tmp_path, **extra)
    assert code != 0 and message in output, output[-3000:]
    assert "Traceback" not in output


# The role's own tasks (its defaults and vars), with vllm_serve_backend as a play var: the plan reads the inventory only.
PLAY_VAR_PLAYBOOK = """
- name: Check the vllm_serve settings with the backend set for this play alone
  hosts: all
  gather_facts: false
  vars:
    vllm_serve_backend: {backend}
  tasks:
    - name: Check
      ansible.builtin.include_role:
        name: sparkops.inference.vllm_serve
        tasks_from: settings_check
"""


@pytest.mark.parametrize(("play_backend", "inventory_backend"), [("ray", None), ("mp", "ray")])
def test_a_backend_set_for_the_play_alone_fails_the_clusters_check_naming_both_values(tmp_path: Path, play_backend: str, inventory_backend: str | None) -> None:
    """The inventory leaves vllm_serve_backend unset (the plan's mp) or sets ray; a play var that differs is refused:
    ray_cluster follows the plan, not the play."""
    hosts = inventory() if inventory_backend is None else inventory(vllm_serve_backend=inventory_backend)
    proc = play(tmp_path, hosts, PLAY_VAR_PLAYBOOK.format(backend=play_backend), {})
    output = " ".join((proc.stdout + proc.stderr).split())
    plan_backend = inventory_backend or "mp"
    for host in ("spark-head", "spark-worker1"):
        message = (
            f"host {host}: vllm_serve_backend (the cluster's): this play has {play_backend} but the cluster plan has {plan_backend}"
            " (the inventory's vllm_serve_backend, else mp)"
        )
        assert proc.returncode != 0 and message in output, output[-3000:]
    assert output.count("failed: [") == 2 and output.count("(item=vllm_serve_backend (the cluster's))") == 2, output[-3000:]
    # The same play where the inventory agrees passes every check.
    proc = play(tmp_path, inventory(vllm_serve_backend=play_backend), PLAY_VAR_PLAYBOOK.format(backend=play_backend), {})
    output = " ".join((proc.stdout + proc.stderr).split())
    assert proc.returncode == 0 and output.count("(item=vllm_serve_backend (the cluster's))") == 2, output[-3000:]
