"""Run ansible-playbook from the unit tests on this machine (local connection), with this checkout's collections."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import typing as t
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
ANSIBLE_PLAYBOOK = str(Path(sys.executable).parent / "ansible-playbook")
# The three nodes of the role tests' inventory and their fabric addresses.
NODES = {"spark-head": "192.168.100.10", "spark-worker1": "192.168.100.11", "spark-worker2": "192.168.100.12"}


def play(tmp_path: Path, inventory: dict[str, t.Any], playbook: str, extra: dict[str, t.Any]) -> subprocess.CompletedProcess[str]:
    """Write ``inventory``, ``playbook`` and ``extra`` (extra vars) into ``tmp_path`` and run the play; its result."""
    (tmp_path / "hosts.yml").write_text(yaml.safe_dump(inventory))
    (tmp_path / "play.yml").write_text(playbook)
    (tmp_path / "extra.json").write_text(json.dumps(extra))
    env = {**os.environ, "ANSIBLE_COLLECTIONS_PATH": str(REPO / ".collections"), "ANSIBLE_FORCE_COLOR": "0", "ANSIBLE_NOCOLOR": "1"}
    return subprocess.run(
        [ANSIBLE_PLAYBOOK, "-i", str(tmp_path / "hosts.yml"), str(tmp_path / "play.yml"), "-e", f"@{tmp_path / 'extra.json'}"],
        capture_output=True,
        text=True,
        check=False,
        env=env,
        cwd=tmp_path,
    )


def run_playbook(tmp_path: Path, inventory: dict[str, t.Any], playbook: str, extra: dict[str, t.Any]) -> None:
    """play(), asserting rc 0."""
    proc = play(tmp_path, inventory, playbook, extra)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]


def task_named(path: Path, name: str) -> dict[str, t.Any]:
    """The task of the tasks file at ``path`` called ``name``, as written."""
    (task,) = [task for task in yaml.safe_load(path.read_text()) if task.get("name") == name]
    return dict(task)


def three_nodes(role: Path, group_vars: dict[str, t.Any], **hostvars: dict[str, t.Any]) -> dict[str, t.Any]:
    """An inventory of the head and two workers (:data:`NODES`, local connection), ``hostvars`` by host (``-``
    written ``_``). The ``role``'s defaults and ``group_vars`` are the group's variables, so that a host's own
    variable wins as over a role's defaults."""
    hosts = {name: {"sparkops_fabric_ip": ip, **hostvars.get(name.replace("-", "_"), {})} for name, ip in NODES.items()}
    return {
        "all": {
            "vars": {
                **yaml.safe_load((role / "defaults" / "main.yml").read_text()),
                "ansible_connection": "local",
                "ansible_python_interpreter": sys.executable,
                **group_vars,
            },
            "children": {
                "spark_head": {"hosts": {"spark-head": hosts["spark-head"]}},
                "spark_workers": {"hosts": {name: hosts[name] for name in ("spark-worker1", "spark-worker2")}},
            },
        }
    }


def render_files(tmp_path: Path, inventory: dict[str, t.Any], playbook: t.Callable[[Path], str], extra: dict[str, t.Any]) -> dict[str, str]:
    """Run ``playbook(out)``, a play writing files into the folder ``out`` (made here), asserting rc 0; the files
    written, by name."""
    out = tmp_path / "out"
    out.mkdir()
    run_playbook(tmp_path, inventory, playbook(out), extra)
    return {path.name: path.read_text() for path in sorted(out.iterdir())}
