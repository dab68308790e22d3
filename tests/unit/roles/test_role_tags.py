# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The roles' own tags (<role>_install, <role>_configure, <role>_run), as ansible-playbook selects site.yml's tasks
with them (``--list-tasks``, which connects nowhere).

What each tag selects, and the rule that makes each tag safe alone: the checks, the restart of what changed, the
wait that proves the service answers and the rollback of an upgrade that does not carry every tag of the role, so no
tag leaves a new install or configuration unrestarted, unproven or without its way back. And no task of a role falls
outside its tags: the role's own tags together select what its play tag selects.
"""

from __future__ import annotations

import functools
import os
import re
import subprocess
import typing as t
from pathlib import Path

import pytest
import yaml
from ansible_run import ANSIBLE_PLAYBOOK

REPO = Path(__file__).resolve().parents[3]
INVENTORY = {
    "all": {
        "children": {
            "spark_head": {"hosts": {"spark-head": {"ansible_connection": "local"}}},
            "spark_workers": {"hosts": {"spark-worker1": {"ansible_connection": "local"}}},
        }
    }
}
# role: (its play tag in site.yml, its own tags)
ROLES = {
    "vllm_serve": ("serve", ("install", "configure", "run")),
    "ray_cluster": ("ray", ("install", "configure", "run")),
    "host_firewall": ("firewall", ("install", "configure", "run")),
    "nccl_env": ("nccl", ("configure", "run")),
    "metrics": ("metrics", ("install", "configure")),
}
LINE = re.compile(r"^\s+(?P<task>\S.*?)\tTAGS: \[(?P<tags>[^\]]*)\]$")


@functools.cache
def listed(tags: str, inventory_dir: str) -> tuple[tuple[str, str], ...]:
    """The tasks site.yml runs with ``--tags tags`` as (role, task name), the argument checks left out. A task of the
    internal common role counts as the role's that imports it (the role listed before it), named ``common : <task>``;
    a task of no role (the preflight) has the role ``""``."""
    env = {**os.environ, "ANSIBLE_COLLECTIONS_PATH": str(REPO / ".collections"), "ANSIBLE_NOCOLOR": "1"}
    argv = [ANSIBLE_PLAYBOOK, "-i", f"{inventory_dir}/hosts.yml", str(REPO / "playbooks" / "site.yml"), "--list-tasks", "--tags", tags]
    proc = subprocess.run(argv, capture_output=True, text=True, check=False, env=env, timeout=120)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    tasks, role = [], ""
    for line in proc.stdout.splitlines():
        match = LINE.match(line)
        if not match or "Validating arguments against arg spec" in match["task"]:
            continue
        name = match["task"].replace("sparkops.inference.", "")
        if " : " not in name:
            tasks.append(("", name))
        elif name.startswith("common : "):
            tasks.append((role, name))
        else:
            role, name = name.split(" : ", 1)
            tasks.append((role, name))
    return tuple(tasks)


@pytest.fixture(scope="module")
def inventory_dir(tmp_path_factory: pytest.TempPathFactory) -> str:
    folder = tmp_path_factory.mktemp("inventory")
    (folder / "hosts.yml").write_text(yaml.safe_dump(INVENTORY))
    return str(folder)


def of_role(tasks: t.Iterable[tuple[str, str]], role: str) -> list[str]:
    return [name for owner, name in tasks if owner == role]


@pytest.mark.parametrize("role", ROLES)
def test_the_roles_own_tags_together_select_what_its_play_tag_selects(role: str, inventory_dir: str) -> None:
    play_tag, own = ROLES[role]
    by_play = of_role(listed(play_tag, inventory_dir), role)
    by_own = of_role(listed(",".join(f"{role}_{tag}" for tag in own), inventory_dir), role)
    assert len(by_play) >= 2 and by_own == by_play


@pytest.mark.parametrize("role", [role for role in ROLES if role != "host_firewall"])  # its tasks are included: below
def test_each_tag_selects_a_part_of_the_role_and_never_another_roles_tasks(role: str, inventory_dir: str) -> None:
    play_tag, own = ROLES[role]
    everything = of_role(listed(play_tag, inventory_dir), role)
    sizes = []
    for tag in own:
        tasks = listed(f"{role}_{tag}", inventory_dir)
        # The preflight runs always; beside it, only this role's tasks.
        assert {owner for owner, _name in tasks} == {"", role}, (tag, tasks)
        sizes.append(len(of_role(tasks, role)))
    assert 0 < min(sizes) < len(everything), sizes


SELECTS = {
    # tag: (tasks it must select, tasks it must leave out)
    "vllm_serve_install": (
        ["common : pip_install | Install the pinned requirements into the venv", "install_docker | Pull the pinned image"],
        ["units | Write the vLLM unit"],
    ),
    "vllm_serve_configure": (
        ["units | Write the vLLM unit", "units | Write the engine's environment"],
        ["common : pip_install | Install the pinned requirements into the venv"],
    ),
    "vllm_serve_run": (
        [],
        ["units | Write the vLLM unit", "common : pip_install | Install the pinned requirements into the venv", "gate | Install the gate command"],
    ),
    "ray_cluster_install": (
        ["common : pip_install | Install the pinned requirements into the venv"],
        ["units | Write the Ray unit", "auth | Keep the token on this node (0600)"],
    ),
    "ray_cluster_configure": (
        ["units | Write the Ray unit", "auth | Keep the token on this node (0600)"],
        ["common : pip_install | Install the pinned requirements into the venv"],
    ),
    "ray_cluster_run": ([], ["units | Write the Ray unit", "common : pip_install | Install the pinned requirements into the venv"]),
    "nccl_env_configure": (["Write the fabric environment", "link | Write the netplan file for the fabric link"], []),
    "nccl_env_run": (["nccl_check | Start one rank on every node"], ["Write the fabric environment", "link | Write the netplan file for the fabric link"]),
}
# Each tag alone must leave the service restarted on what changed, proven, or rolled back: these carry every tag.
EVERY_TAG = {
    "vllm_serve": [
        "settings_check | Check the settings",
        "start | Restart what changed (once, whatever changed)",
        "start | Enable and start the vLLM unit (it comes back after a reboot)",
        "Wait until the endpoint answers",
        "Remove the previous install (the new version serves)",
        "Guard unified memory (every node)",
    ],
    "ray_cluster": [
        "Check the node's and the head's Ray addresses",
        "versions | Refuse a cluster of mixed Ray or Python versions",
        "start | Restart what changed (head first, then its workers)",
        "start | Enable and start the Ray unit (it comes back after a reboot)",
        "wait | Wait until every node is alive with its GPUs",
    ],
    "nccl_env": ["Check the fabric gate's settings", "Check every node's fabric link (speed, MTU, the same MTU everywhere)"],
    "host_firewall": ["Set up the host firewall", "Remove a host firewall set up before"],
}


@pytest.mark.parametrize("tag", SELECTS)
def test_what_each_tag_selects(tag: str, inventory_dir: str) -> None:
    role = next(name for name in ROLES if tag.startswith(f"{name}_"))
    tasks = of_role(listed(tag, inventory_dir), role)
    wanted, left_out = SELECTS[tag]
    assert [task for task in wanted if task not in tasks] == [], tasks
    assert [task for task in left_out if task in tasks] == [], tasks
    assert [task for task in EVERY_TAG[role] if task not in tasks] == [], tasks


def test_the_rules_name_tasks_that_exist(inventory_dir: str) -> None:
    """The names above are the roles' (a renamed task fails here, not silently in the checks above)."""
    named = {task for pair in SELECTS.values() for names in pair for task in names} | {task for names in EVERY_TAG.values() for task in names}
    everything = {task for role, (play_tag, _own) in ROLES.items() for task in of_role(listed(play_tag, inventory_dir), role)}
    assert sorted(named - everything) == []


@pytest.mark.parametrize("role", ["vllm_serve", "ray_cluster"])
def test_the_rollback_carries_every_tag_of_the_role(role: str) -> None:
    """ansible-playbook --list-tasks leaves rescue sections out: read from tasks/main.yml, the rescue that puts the
    previous install back carries (and applies to what it includes) every tag of the role."""
    every = sorted(f"{role}_{tag}" for tag in ROLES[role][1])
    (block,) = [task for task in yaml.safe_load((REPO / "roles" / role / "tasks" / "main.yml").read_text()) if "rescue" in task]
    (rescue,) = block["rescue"]
    assert "rollback" in rescue["name"] or "previous install" in rescue["name"]
    assert sorted(rescue["tags"]) == every and sorted(rescue["ansible.builtin.include_tasks"]["apply"]["tags"]) == every
    assert "tags" not in block  # the block's tasks carry their own


def test_the_tasks_of_a_file_included_without_apply_carry_their_own_tags() -> None:
    """host_firewall's enable.yml is included (dynamic) without `apply`, which --list-tasks does not open: its tasks
    are selected by their own tags, read here. Installing takes nftables; configuring writes; both start or reload."""
    tasks = {task["name"]: set(task.get("tags", [])) for task in yaml.safe_load((REPO / "roles" / "host_firewall" / "tasks" / "enable.yml").read_text())}
    every = {"host_firewall_install", "host_firewall_configure", "host_firewall_run"}
    assert [name for name, tags in tasks.items() if not tags & every] == []
    assert tasks["enable | Install nftables"] == {"host_firewall_install"}
    assert tasks["enable | Write the ruleset"] == tasks["enable | Write the firewall's unit"] == {"host_firewall_configure"}
    for name in ("enable | Build the firewall's ruleset", "enable | Start the firewall, now and at every boot", "enable | Load the changed ruleset"):
        assert tasks[name] == every, name


@pytest.mark.parametrize("role", ROLES)
def test_the_readme_names_the_roles_tags(role: str) -> None:
    readme = (REPO / "roles" / role / "README.md").read_text()
    section = readme.split("\n## Tags\n", 1)
    assert len(section) == 2, f"roles/{role}/README.md has no '## Tags' section"
    for tag in ROLES[role][1]:
        assert f"`{role}_{tag}`" in section[1].split("\n## ", 1)[0], tag
