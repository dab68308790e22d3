# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What the ray_cluster role's venv install asks pip for, as Ansible renders it (its defaults and vars, the ``name`` of
the pip task of tasks/install_venv.yml), next to the ``ray start`` arguments of the same node.

Ray 2.60 refuses ``--include-dashboard=true`` on a minimal install ("Cannot include dashboard with missing packages.",
``ray/_private/services.py:1321-1335``), so the dashboard needs ``ray[default]``, on every node (each node's dashboard
agent runs ``--minimal`` without it, ``:1909-1913``); without the dashboard plain ``ray`` is what the role installs.
"""

from __future__ import annotations

import json
import sys
import typing as t
from pathlib import Path

import pytest
import yaml
from ansible_run import run_playbook
from packaging.requirements import Requirement

REPO = Path(__file__).resolve().parents[3]
ROLE = REPO / "roles" / "ray_cluster"

PLAYBOOK = """
- name: Render the ray_cluster pip requirement and ray start arguments for each node
  hosts: all
  gather_facts: false
  vars_files:
    - {role}/defaults/main.yml
    - {role}/vars/main.yml
  tasks:
    - name: Render them
      ansible.builtin.copy:
        content: "{{{{ {{'requirement': test_pip_name, 'start_args': __ray_cluster_start_args}} | to_json }}}}"
        dest: "{out}/{{{{ inventory_hostname }}}}.json"
        mode: "0644"
      vars:
        # the pip task's name, exactly as tasks/install_venv.yml writes it
        test_pip_name: {name}
"""


def pip_task() -> dict[str, t.Any]:
    """The task of tasks/install_venv.yml that installs Ray (the one and only import of the common role's pip_install)."""
    tasks = yaml.safe_load((ROLE / "tasks" / "install_venv.yml").read_text())
    (task,) = [task for task in tasks if (task.get("ansible.builtin.import_role") or {}).get("tasks_from") == "pip_install"]
    assert task["ansible.builtin.import_role"]["name"] == "sparkops.inference.common"
    return task


def pip_name() -> str:
    """The requirement the role gives pip, as written (a template), to render with the role's variables."""
    (name,) = pip_task()["vars"]["common_pip_requirements"]
    assert isinstance(name, str), name
    return name


def render(tmp_path: Path, **extra: object) -> dict[str, dict[str, t.Any]]:
    """Render for a head and a worker; return each node's pip requirement and ``ray start`` arguments."""
    out = tmp_path / "out"
    out.mkdir()
    inventory = {
        "all": {
            "vars": {
                "ansible_connection": "local",
                "ansible_python_interpreter": sys.executable,
                "sparkops_fabric_subnet": "192.168.100.0/24",
                "sparkops_gpus_per_node": 1,
            },
            "children": {
                "spark_head": {"hosts": {"spark-head": {"sparkops_fabric_ip": "192.168.100.10"}}},
                "spark_workers": {"hosts": {"spark-worker1": {"sparkops_fabric_ip": "192.168.100.11"}}},
            },
        }
    }
    run_playbook(tmp_path, inventory, PLAYBOOK.format(role=ROLE, out=out, name=json.dumps(pip_name())), extra)
    return {path.stem: json.loads(path.read_text()) for path in out.iterdir()}


def test_the_pip_task_installs_one_pinned_requirement() -> None:
    given = pip_task()["vars"]
    assert len(given["common_pip_requirements"]) == 1 and given["common_pip_venv"] == "{{ ray_cluster_venv }}"
    steps = yaml.safe_load((REPO / "roles" / "common" / "tasks" / "pip_install.yml").read_text())
    pips = [task["ansible.builtin.pip"] for item in steps for task in [item, *item.get("block", [])] if "ansible.builtin.pip" in task]
    assert len(pips) == 2  # with an index URL (its root-only config file) and without
    for module in pips:
        assert module["name"] == "{{ common_pip_requirements }}" and module["virtualenv"] == "{{ common_pip_venv }}"
        assert "version" not in module  # the pin is in the requirement, where the extras are too


def test_dashboard_off_installs_plain_ray(tmp_path: Path) -> None:
    nodes = render(tmp_path)
    assert sorted(nodes) == ["spark-head", "spark-worker1"]
    for node in nodes.values():
        requirement = Requirement(node["requirement"])
        assert (requirement.name, requirement.extras, str(requirement.specifier)) == ("ray", set(), "==2.60.0")
    assert "--include-dashboard=false" in nodes["spark-head"]["start_args"]


@pytest.mark.parametrize("dashboard", [True, "yes"])
def test_dashboard_on_installs_ray_default_on_every_node(tmp_path: Path, dashboard: object) -> None:
    nodes = render(tmp_path, ray_cluster_dashboard=dashboard)
    assert "--include-dashboard=true" in nodes["spark-head"]["start_args"]
    assert not any(arg.startswith("--include-dashboard") for arg in nodes["spark-worker1"]["start_args"])
    for host, node in nodes.items():
        requirement = Requirement(node["requirement"])
        assert (requirement.name, requirement.extras, str(requirement.specifier)) == ("ray", {"default"}, "==2.60.0"), host
        assert node["requirement"] == "ray[default]==2.60.0"


def test_the_version_pin_follows_ray_cluster_version(tmp_path: Path) -> None:
    nodes = render(tmp_path, ray_cluster_version="2.61.1", ray_cluster_dashboard=True)
    assert {node["requirement"] for node in nodes.values()} == {"ray[default]==2.61.1"}
