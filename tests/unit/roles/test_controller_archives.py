# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What the roles pack on the controller and unpack on the nodes (issue 15, the review's finding 5).

The ray_cluster wheelhouse and the vllm_serve gate's code were packed at fixed paths in /tmp on the controller
(``/tmp/sparkops-vllm-gate-lib.tar``): another user of the controller could make that file first, writable by the
run, and change it between the pack and the copy; the gate runs as root on every node. And ``unarchive`` kept the
archive's modes. Read from the roles' own files: no role's variables or controller tasks name a shared temporary
folder, every ``unarchive`` sets owner, group and mode, and the packing is the copy_packed action's (it packs in a
folder made for the run: tests/unit/plugins/action/test_copy_packed.py).
"""

from __future__ import annotations

import re
import typing as t
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[3]
ROLES = sorted(path for path in (REPO / "roles").iterdir() if (path / "tasks").is_dir())
SHARED_TEMP = re.compile(r"(?<![\w.-])/(?:var/)?tmp/")


def tasks(role: Path) -> t.Iterator[tuple[str, dict[str, t.Any]]]:
    """Every task of ``role``'s task files, blocks opened, with the file it is in."""

    def walk(items: t.Any, where: str) -> t.Iterator[tuple[str, dict[str, t.Any]]]:
        for item in items or []:
            if not isinstance(item, dict):
                continue
            yield where, item
            for key in ("block", "rescue", "always"):
                yield from walk(item.get(key), where)

    for path in sorted((role / "tasks").glob("*.yml")):
        yield from walk(yaml.safe_load(path.read_text()), str(path.relative_to(REPO)))


def module_args(task: dict[str, t.Any], module: str) -> dict[str, t.Any] | None:
    for name in (f"ansible.builtin.{module}", module):
        if name in task:
            return task[name] or {}
    return None


def test_the_roles_are_read() -> None:
    found = {role.name: len(list(tasks(role))) for role in ROLES}
    assert {"ray_cluster", "vllm_serve"} <= set(found) and all(count > 0 for count in found.values()), found


@pytest.mark.parametrize("role", ROLES, ids=lambda role: role.name)
def test_no_variable_or_controller_task_names_a_shared_temporary_folder(role: Path) -> None:
    offenders = []
    for folder in ("defaults", "vars"):
        for path in sorted((role / folder).glob("*.yml")):
            for name, value in (yaml.safe_load(path.read_text()) or {}).items():
                if SHARED_TEMP.search(yaml.safe_dump(value)):
                    offenders.append(f"{path.relative_to(REPO)}: {name}")
    for where, task in tasks(role):
        if task.get("delegate_to") == "localhost" and SHARED_TEMP.search(yaml.safe_dump({k: v for k, v in task.items() if k != "name"})):
            offenders.append(f"{where}: {task.get('name')}")
    assert offenders == []


@pytest.mark.parametrize("role", ROLES, ids=lambda role: role.name)
def test_every_unarchive_sets_owner_group_and_mode(role: Path) -> None:
    unarchives = [(where, task.get("name"), module_args(task, "unarchive")) for where, task in tasks(role)]
    missing = [f"{where}: {name}" for where, name, args in unarchives if args is not None and not {"owner", "group", "mode"} <= set(args)]
    assert missing == []


def test_the_archives_are_packed_by_the_copy_packed_action() -> None:
    """The common role's copy_packed, the one place that packs, is one task of the sparkops.inference.copy_packed action,
    which packs in a folder made for the run (tests/unit/plugins/action/test_copy_packed.py) and sets owner, group and
    mode; it is given no path of the controller's to pack into."""
    steps = [task for where, task in tasks(REPO / "roles" / "common") if where.endswith("copy_packed.yml")]
    assert [sorted(task["sparkops.inference.copy_packed"]) for task in steps] == [["dest", "files", "prefix", "src"]]


@pytest.mark.parametrize("role", [role for role in ROLES if role.name != "common"], ids=lambda role: role.name)
def test_the_roles_pack_only_through_the_common_role(role: Path) -> None:
    """No role packs an archive of its own: packing on the controller is the common role's copy_packed."""
    own = [f"{where}: {task.get('name')}" for where, task in tasks(role) if "'tar'" in str((module_args(task, "command") or {}).get("argv", ""))]
    assert own == []
