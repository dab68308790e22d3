# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The model_sync role's ``__model_sync_targets`` as Ansible templates it (roles/model_sync/vars/main.yml, through the
sparkops.inference.model_sync_targets filter): a list of the fabric addresses of the workers that need the snapshot,
which tasks/distribute.yml hands to snapshot_distribute, counts and joins as it is."""

from __future__ import annotations

import json
import sys
import typing as t
from pathlib import Path

import yaml
from ansible_run import REPO, play

HEAD_COMMIT = "0123456789abcdef0123456789abcdef01234567"
WORKERS = {
    "spark-worker1": ("192.168.100.11", {"complete": True, "commit": HEAD_COMMIT}),
    "spark-worker2": ("192.168.100.12", {"complete": False, "commit": None}),
    "spark-worker3": ("192.168.100.13", {"complete": True, "commit": "f" * 40}),
}
# What distribute.yml does with the value: the module's targets, the `when` conditions, the check-mode message.
PLAY = yaml.safe_dump(
    [
        {
            "name": "model_sync targets",
            "hosts": "all",
            "gather_facts": False,
            "vars_files": [str(REPO / "roles" / "model_sync" / "vars" / "main.yml")],
            "tasks": [
                {
                    "name": "Write the targets as the head sees them",
                    "ansible.builtin.copy": {
                        "dest": "{{ out }}",
                        "mode": "0644",
                        "content": (
                            "{{ {'targets': __model_sync_targets, 'type': __model_sync_targets | type_debug,"
                            " 'any': __model_sync_targets | length > 0, 'joined': __model_sync_targets | join(', ')} | to_json }}"
                        ),
                    },
                    "when": "__model_sync_is_head | bool",
                }
            ],
        }
    ],
    sort_keys=False,
)


def targets_of(
    tmp_path: Path, workers: dict[str, tuple[str, dict[str, t.Any]]], head_check: dict[str, t.Any] | None = None, nodes: list[str] | None = None
) -> dict[str, t.Any]:
    """Run the play over a head (its snapshot check ``head_check``, default complete at HEAD_COMMIT) and ``workers``
    (in that order in the group), for a model served on ``nodes`` (None: every node); what the head wrote."""
    out = tmp_path / "targets.json"
    model = {"repo_id": "org/model", **({"nodes": nodes} if nodes is not None else {})}  # tasks/main.yml's loop item
    inventory = {
        "all": {
            "vars": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable, "out": str(out), "model_sync_model": model},
            "children": {
                "spark_head": {"hosts": {"spark-head": {"model_sync_head_check": head_check or {"complete": True, "commit": HEAD_COMMIT}}}},
                "spark_workers": {"hosts": {name: {"model_sync_node_ip": ip, "model_sync_worker_check": check} for name, (ip, check) in workers.items()}},
            },
        }
    }
    proc = play(tmp_path, inventory, PLAY, {})
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    return t.cast(dict[str, t.Any], json.loads(out.read_text()))


def test_the_workers_that_need_the_snapshot_are_a_list(tmp_path: Path) -> None:
    """The workers come in __model_sync_workers' order, which is not the inventory's (ansible's intersect goes through a
    set), so the addresses are compared sorted here; the filter's own tests check that it keeps the order it gets."""
    found = targets_of(tmp_path, WORKERS)
    assert sorted(found["targets"]) == ["192.168.100.12", "192.168.100.13"]
    assert (found["type"], found["any"]) == ("list", True)
    assert found["joined"] == ", ".join(found["targets"])


def test_workers_up_to_date_give_an_empty_list(tmp_path: Path) -> None:
    up_to_date = {name: (ip, {"complete": True, "commit": HEAD_COMMIT}) for name, (ip, _check) in WORKERS.items()}
    assert targets_of(tmp_path, up_to_date) == {"targets": [], "type": "list", "any": False, "joined": ""}


def test_in_check_mode_on_a_fresh_head_every_worker_without_the_snapshot_is_a_target(tmp_path: Path) -> None:
    """--check on a head that has no snapshot yet: the download's proof is skipped, and its registered result (a
    skipped task's, no commit) replaces the head's check; every worker not holding a complete snapshot is a target."""
    found = targets_of(tmp_path, WORKERS, head_check={"changed": False, "skipped": True, "skip_reason": "Conditional result was False"})
    assert sorted(found["targets"]) == ["192.168.100.11", "192.168.100.12", "192.168.100.13"]


def test_only_the_workers_among_the_model_s_nodes_are_targets(tmp_path: Path) -> None:
    """A model served on some of the nodes (model_sync_models' nodes) goes to those workers only: worker2 needs the
    snapshot but does not serve the model."""
    found = targets_of(tmp_path, WORKERS, nodes=["spark-head", "spark-worker1", "spark-worker3"])
    assert found["targets"] == ["192.168.100.13"]
