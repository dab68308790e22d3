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
import subprocess
from pathlib import Path

import pytest
from preflight_run import PREFLIGHT, local_ipv4, play_head, write_inventory

CONTRACT_TASK = "TASK [Preflight | Check the inventory contract and plan the cluster]"


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
    # The head at its management address, the worker reached over the fabric at its own address.
    head_vars = {"sparkops_fabric_ip": str(head), "ansible_host": str(management)}
    write_inventory(path, subnet, head_vars, {"sparkops_fabric_ip": str(worker), "ansible_host": str(worker)})
    return Lab(path, subnet, head, spare)


def preflight(lab: Lab, *args: str) -> subprocess.CompletedProcess[str]:
    return play_head(lab.path, PREFLIGHT, *args)


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
    ("port", "word"), [(22, "SSH"), (6379, "sparkops_ray_port 6379"), (10001, "Ray's client server"), (29501, "vllm_serve_master_port 29501")]
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
