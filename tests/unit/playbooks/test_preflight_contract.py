# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""playbooks/preflight.yml refuses a hostile inventory (issue 15) in its first task, on the controller, before any
host is looked at: a fabric subnet that is everything, loopback or multicast, one over a management address, and a
serve port on SSH's, Ray's or vLLM's; every problem at once. The lab's shape (the head at its management address,
the worker reached over the fabric at its fabric address) passes the whole preflight.

Runs ansible-playbook against this machine (local connection; the preflight only reads facts). The head's fabric
address is one this machine has, as in test_preflight_vllm.py.
"""

from __future__ import annotations

import ipaddress
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[3]
BIN = Path(sys.executable).parent
ENV = {
    **os.environ,
    "ANSIBLE_COLLECTIONS_PATH": str(REPO / ".collections"),
    "ANSIBLE_FORCE_COLOR": "0",
    "ANSIBLE_NOCOLOR": "1",
    "ANSIBLE_RETRY_FILES_ENABLED": "0",
}
CONTRACT_TASK = "TASK [Preflight | Check the inventory contract and plan the cluster]"


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


class Lab:
    """The inventory (lab-shaped) and the addresses the tests aim at."""

    def __init__(self, path: Path, subnet: ipaddress.IPv4Network, head: ipaddress.IPv4Address, spare: ipaddress.IPv4Address) -> None:
        self.path = path
        self.subnet = subnet
        self.head = head
        self.spare = spare  # a host address of the fabric subnet that no host has


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Lab:
    head = ipaddress.IPv4Address(local_ipv4())
    subnet = ipaddress.IPv4Network(f"{head}/24", strict=False)
    worker, spare = [host for host in subnet.hosts() if host != head][:2]
    management = next(ipaddress.IPv4Address(a) for a in ("198.51.100.7", "203.0.113.7") if ipaddress.IPv4Address(a) not in subnet)
    path = tmp_path_factory.mktemp("preflight_contract") / "hosts.yml"
    path.write_text(
        yaml.safe_dump(
            {
                "all": {
                    "vars": {
                        "ansible_connection": "local",
                        "ansible_python_interpreter": sys.executable,
                        "sparkops_model_repo": "Qwen/Qwen3.5-122B-A10B-FP8",
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
                    },
                    "children": {
                        # The head at its management address, the worker reached over the fabric at its own address.
                        "spark_head": {"hosts": {"spark-head": {"sparkops_fabric_ip": str(head), "ansible_host": str(management)}}},
                        "spark_workers": {"hosts": {"spark-worker1": {"sparkops_fabric_ip": str(worker), "ansible_host": str(worker)}}},
                    },
                }
            }
        )
    )
    return Lab(path, subnet, head, spare)


def preflight(lab: Lab, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN / "ansible-playbook"), "-i", str(lab.path), str(REPO / "playbooks" / "preflight.yml"), "--limit", "spark-head", *args],
        capture_output=True,
        text=True,
        check=False,
        env=ENV,
        cwd=lab.path.parent,
    )


def contract_problems(proc: subprocess.CompletedProcess[str]) -> list[str]:
    """The problems the contract task failed with; asserts it failed there, before any host was looked at."""
    assert proc.returncode != 0, proc.stdout[-3000:]
    task = proc.stdout.split(CONTRACT_TASK, 1)[1]
    fatal = next(line for line in task.splitlines() if line.startswith("fatal: [spark-head]: FAILED! => "))
    assert "TASK [Preflight | Gather platform and network facts]" not in proc.stdout  # refused before any host
    problems: list[str] = json.loads(fatal.split(" => ", 1)[1])["problems"]
    return problems


def test_the_labs_shape_passes_the_preflight(lab: Lab) -> None:
    proc = preflight(lab)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert f"{CONTRACT_TASK} ***" in proc.stdout


@pytest.mark.parametrize(
    ("subnet", "word"),
    [("0.0.0.0/0", "too wide"), ("0.0.0.0/4", "too wide"), ("127.0.0.0/8", "loopback"), ("224.0.0.0/24", "multicast")],
)
def test_unusable_fabric_subnet_is_refused(lab: Lab, subnet: str, word: str) -> None:
    problems = contract_problems(preflight(lab, "-e", f"sparkops_fabric_subnet={subnet}"))
    assert any(p.startswith(f"sparkops_fabric_subnet {subnet} ") and word in p for p in problems), problems


def test_fabric_subnet_over_a_management_address_is_refused(lab: Lab) -> None:
    problems = contract_problems(preflight(lab, "-e", f"ansible_host={lab.spare}"))
    assert len(problems) == 2, problems  # neither host is reached at its own fabric address
    for problem, host in zip(problems, ("spark-head", "spark-worker1"), strict=True):
        assert problem.startswith(f"host {host}: ") and f"ansible_host {lab.spare}" in problem and f"sparkops_fabric_subnet {lab.subnet}" in problem


@pytest.mark.parametrize(
    ("port", "word"), [(22, "SSH"), (6379, "ray_cluster_port 6379"), (10001, "Ray's client server"), (29501, "vllm_serve_master_port 29501")]
)
def test_serve_port_on_a_port_in_use_is_refused(lab: Lab, port: int, word: str) -> None:
    problems = contract_problems(preflight(lab, "-e", f"sparkops_serve_port={port}"))
    assert len(problems) == 1 and f"sparkops_serve_port {port} " in problems[0] and word in problems[0], problems


def test_role_ports_from_extra_vars_reach_the_contract(lab: Lab) -> None:
    problems = contract_problems(preflight(lab, "-e", "vllm_serve_group_port=8000"))
    assert len(problems) == 1 and "vllm_serve_group_port 8000" in problems[0] and "sparkops_serve_port 8000" in problems[0], problems


def test_two_problems_are_reported_together(lab: Lab) -> None:
    problems = contract_problems(preflight(lab, "-e", "sparkops_fabric_subnet=0.0.0.0/0", "-e", "sparkops_serve_port=22"))
    assert len(problems) == 2, problems
    assert problems[0].startswith("sparkops_fabric_subnet 0.0.0.0/0 ")
    assert problems[1].startswith("sparkops_serve_port 22 ")
