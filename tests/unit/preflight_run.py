# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Play a playbook on the head of a lab-shaped inventory on this machine (local connection), as the preflight tests
(tests/unit/playbooks/test_preflight_*.py) do: the head's fabric address is one this machine has, so the preflight
passes when the settings are good."""

from __future__ import annotations

import ipaddress
import json
import os
import subprocess
import sys
import typing as t
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
PREFLIGHT = REPO / "playbooks" / "preflight.yml"
ENV = {
    **os.environ,
    "ANSIBLE_COLLECTIONS_PATH": str(REPO / ".collections"),
    "ANSIBLE_FORCE_COLOR": "0",
    "ANSIBLE_NOCOLOR": "1",
    "ANSIBLE_RETRY_FILES_ENABLED": "0",
}


def local_ipv4() -> str:
    """The first IPv4 address Ansible's facts list for this machine (what the preflight compares with)."""
    proc = subprocess.run(
        [str(BIN / "ansible"), "-i", "localhost,", "-c", "local", "localhost", "-m", "ansible.builtin.setup", "-a", "gather_subset=!all,network"],
        capture_output=True,
        text=True,
        check=False,
        env={**ENV, "ANSIBLE_LOAD_CALLBACK_PLUGINS": "1", "ANSIBLE_STDOUT_CALLBACK": "ansible.builtin.json", "ANSIBLE_PYTHON_INTERPRETER": sys.executable},
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    facts = json.loads(proc.stdout)["plays"][0]["tasks"][0]["hosts"]["localhost"]["ansible_facts"]
    addresses = facts.get("ansible_all_ipv4_addresses") or []
    if not addresses:
        pytest.skip("this machine has no IPv4 address besides loopback for the head's fabric address")
    return str(addresses[0])


def write_inventory(
    path: Path, subnet: ipaddress.IPv4Network, head: dict[str, t.Any], worker: dict[str, t.Any], cluster: dict[str, t.Any] | None = None
) -> None:
    """Write at ``path`` the inventory of a head and a worker (their host variables ``head`` and ``worker``) on the
    fabric ``subnet``, with the settings of a two-node tensor-parallel deployment, reports beside the inventory;
    ``cluster`` changes those settings (a None value leaves the variable out)."""
    settings = {
        "ansible_connection": "local",
        "ansible_python_interpreter": sys.executable,
        "sparkops_model_repo": "Qwen/Qwen3.5-122B-A10B-FP8",
        # No Hub here and no cache: the fit check (molecule/model tests it) would fail on the metadata.
        "sparkops_model_fit_check": False,
        "sparkops_report_dir": str(path.parent / "reports"),
        "sparkops_model_revision": "main",
        "sparkops_served_model_name": "qwen3.5-122b",
        "sparkops_tensor_parallel_size": 2,
        "sparkops_pipeline_parallel_size": 1,
        "sparkops_gpus_per_node": 1,
        "sparkops_fabric_subnet": str(subnet),
        "sparkops_serve_port": 8000,
        "sparkops_gpu_memory_utilization": 0.8,
    }
    settings = {name: value for name, value in {**settings, **(cluster or {})}.items() if value is not None}
    path.write_text(
        yaml.safe_dump(
            {
                "all": {
                    "vars": settings,
                    "children": {
                        "spark_head": {"hosts": {"spark-head": head}},
                        "spark_workers": {"hosts": {"spark-worker1": worker}},
                    },
                }
            }
        )
    )


def play_head(inventory: Path, playbook: Path, *args: str, env: t.Mapping[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run ``playbook`` on spark-head of ``inventory`` (``args`` added to the command line), in the inventory's folder;
    ``env``: more environment variables (they win over this process's)."""
    return subprocess.run(
        [str(BIN / "ansible-playbook"), "-i", str(inventory), str(playbook), "--limit", "spark-head", *args],
        capture_output=True,
        text=True,
        check=False,
        env={**ENV, **(env or {})},
        cwd=inventory.parent,
    )
