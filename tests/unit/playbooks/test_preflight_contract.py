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


# --- sparkops_deployments (issue 36): the contract reads the list from the inventory -------------------------------
MODEL_VARS = {  # each to the entry's key that replaces it
    "sparkops_model_repo": "model",
    "sparkops_model_revision": "revision",
    "sparkops_served_model_name": "served_model_name",
    "sparkops_tensor_parallel_size": "tensor_parallel_size",
    "sparkops_pipeline_parallel_size": "pipeline_parallel_size",
}


def test_one_listed_deployment_replaces_the_model_s_cluster_variables(lab: Lab, tmp_path: Path) -> None:
    """The plan's deployment is what the roles serve: the whole preflight passes with the list and no model
    variables, and the plan it prints (-v) carries the entry with its defaults."""
    path = tmp_path / "hosts.yml"
    listed = [{"name": "big", "model": "Qwen/Qwen3.5-122B-A10B-FP8", "served_model_name": "qwen", "extra_args": ["--enforce-eager"]}]
    head_vars = {"sparkops_fabric_ip": str(lab.head), "ansible_host": "198.51.100.7"}
    worker = [host for host in lab.subnet.hosts() if host != lab.head][0]
    write_inventory(path, lab.subnet, head_vars, {"sparkops_fabric_ip": str(worker), "ansible_host": str(worker)},
                    cluster={**dict.fromkeys(MODEL_VARS), "sparkops_deployments": listed})  # fmt: skip
    proc = play_head(path, PREFLIGHT, "-v")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    plan = json.loads(proc.stdout.split(CONTRACT_TASK, 1)[1].split("ok: [spark-head] => ", 1)[1].split("\n\n", 1)[0])["cluster"]
    assert plan["deployments"] == [{
        "name": "big", "model": "Qwen/Qwen3.5-122B-A10B-FP8", "revision": "main", "served_model_name": "qwen", "nodes": ["spark-head", "spark-worker1"],
        "head": "spark-head", "tensor_parallel_size": 2, "pipeline_parallel_size": 1, "port": 8000, "gpu_memory_utilization": 0.8,
        "extra_args": ["--enforce-eager"], "env": {},
    }]  # fmt: skip


def test_deployments_the_roles_cannot_serve_are_refused_with_every_problem(lab: Lab) -> None:
    listed = [{"name": "big", "model": "org/big", "gpu_memory_utilization": 0.6}, {"name": "small", "model": "org/small", "nodes": ["spark-worker1"]}]
    problems = contract_problems(preflight(lab, "-e", json.dumps({"sparkops_deployments": listed})))
    assert problems == [
        *(f"{name} is set beside sparkops_deployments: each deployment names its own {key}; move it into the list's entries"
          for name, key in MODEL_VARS.items()),
        "host spark-worker1: the deployments on it take 1.4 of its memory in gpu_memory_utilization (big 0.6, small 0.8), more than all of it; "
        "lower them so they add up to at most 1 (on unified memory, leave the system room: about 0.9)",
        "sparkops_deployments lists 2 deployments (big, small): the roles serve one deployment across every node so far; list one (nodes: all), "
        "or leave the variable unset and use the cluster variables",
        "sparkops_deployments[0] (big) port 8000 (vLLM's API of deployment big) clashes with sparkops_deployments[1] (small) port 8000 "
        "(vLLM's API of deployment small): every service needs its own port",
    ]  # fmt: skip
