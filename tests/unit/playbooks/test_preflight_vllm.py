# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""playbooks/preflight.yml refuses a vLLM build the host cannot run, Ray's removed docker runtime, and Ray's dashboard
where the backend (mp by default) runs no Ray cluster, naming the variable, before anything changes; the vllm_serve
role used alone refuses the docker runtime with the Ray backend, the ray_cluster role alone the docker runtime.

Runs ansible-playbook against this machine (local connection, nothing is changed: the preflight only reads facts,
and the role stops at its first task). The head's fabric address is one this machine has, so the preflight passes
when the settings are good. This machine is not aarch64: the Spark-only rows are tested in
tests/unit/plugins/plugin_utils/test__vllm_support.py.
"""

from __future__ import annotations

import ipaddress
from pathlib import Path

import pytest
from preflight_run import PREFLIGHT, local_ipv4, play_head, write_inventory


@pytest.fixture(scope="module")
def inventory(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A head (this machine) and a worker at another address of the same /24; only the head is played."""
    head = ipaddress.IPv4Address(local_ipv4())
    subnet = ipaddress.IPv4Network(f"{head}/24", strict=False)
    worker = next(host for host in subnet.hosts() if host != head)
    path = tmp_path_factory.mktemp("preflight") / "hosts.yml"
    write_inventory(path, subnet, {"sparkops_fabric_ip": str(head)}, {"sparkops_fabric_ip": str(worker)})
    return path


def test_preflight_passes_the_role_defaults(inventory: Path) -> None:
    proc = play_head(inventory, PREFLIGHT)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "TASK [Preflight | Check this host can run the vLLM build the settings give]" in proc.stdout


@pytest.mark.parametrize(
    ("extra", "words"),
    [
        (["-e", "vllm_serve_version=0.11.0", "-e", "vllm_serve_backend=mp"], ["vllm_serve_version 0.11.0 with vllm_serve_backend mp", "since 0.11.1"]),
        (["-e", "vllm_serve_version=latest"], ["vllm_serve_version must be one exact vLLM release", "'latest'"]),
        # vllm_serve_backend mp is the role's default: Ray is asked for.
        (
            ["-e", "vllm_serve_version=0.35.0", "-e", "vllm_serve_backend=ray"],
            ["vllm_serve_version 0.35.0 with vllm_serve_backend ray", "up to 0.34.0", "vllm_serve_backend mp"],
        ),
        (
            ["-e", "vllm_serve_runtime=docker", "-e", "vllm_serve_backend=ray", "-e", "vllm_serve_image=nvcr.io/nvidia/vllm:26.10-py3"],
            ["vllm_serve_runtime docker with vllm_serve_backend ray is not supported"],
        ),
        (
            ["-e", "vllm_serve_runtime=docker", "-e", "vllm_serve_backend=mp", "-e", "vllm_serve_image=nvcr.io/nvidia/vllm:25.10-py3"],
            ["vllm_serve_image nvcr.io/nvidia/vllm:25.10-py3 (vLLM 0.10.2) with vllm_serve_backend mp"],
        ),
    ],
)
def test_preflight_refuses_naming_the_variable(inventory: Path, extra: list[str], words: list[str]) -> None:
    proc = play_head(inventory, PREFLIGHT, *extra)
    assert proc.returncode != 0, proc.stdout[-3000:]
    failed = [line for line in proc.stdout.splitlines() if line.startswith("fatal: [spark-head]")]
    assert len(failed) == 1 and "host spark-head (x86_64): " in failed[0], proc.stdout[-3000:]
    assert all(word in failed[0] for word in words), failed[0]
    assert "Check the fabric address" not in proc.stdout  # refused before the next check


def test_the_role_alone_refuses_docker_with_ray(inventory: Path) -> None:
    playbook = inventory.parent / "role.yml"
    playbook.write_text("- name: The vllm_serve role alone\n  hosts: spark-head\n  gather_facts: false\n  roles:\n    - role: sparkops.inference.vllm_serve\n")
    docker = ("-e", "vllm_serve_runtime=docker", "-e", "vllm_serve_image=nvcr.io/nvidia/vllm:26.10-py3")
    proc = play_head(inventory, playbook, "--check", "-e", "vllm_serve_backend=ray", *docker)
    assert proc.returncode != 0, proc.stdout[-3000:]
    assert "TASK [sparkops.inference.vllm_serve : settings_check | Check the settings]" in proc.stdout
    failed = [line for line in proc.stdout.splitlines() if line.startswith("failed: [spark-head]")]
    assert len(failed) == 1 and "(item=vllm_serve_runtime)" in failed[0], proc.stdout[-3000:]
    assert "host spark-head: vllm_serve_runtime: the docker runtime needs vllm_serve_backend mp" in failed[0], failed[0]


def test_preflight_refuses_rays_removed_docker_runtime(inventory: Path) -> None:
    proc = play_head(inventory, PREFLIGHT, "-e", "ray_cluster_runtime=docker")
    assert proc.returncode != 0, proc.stdout[-3000:]
    failed = [line for line in proc.stdout.splitlines() if line.startswith("fatal: [spark-head]")]
    assert len(failed) == 1 and "host spark-head: ray_cluster_runtime docker is no longer supported" in failed[0], proc.stdout[-3000:]
    assert "vllm_serve_runtime docker with vllm_serve_backend mp" in failed[0], failed[0]
    assert "Gather platform and network facts" not in proc.stdout  # refused first


def test_preflight_refuses_rays_removed_fence_subnet_naming_what_replaced_it(inventory: Path) -> None:
    proc = play_head(inventory, PREFLIGHT, "-e", "ray_cluster_fabric_subnet=192.168.100.0/24")
    assert proc.returncode != 0, proc.stdout[-3000:]
    failed = [line for line in proc.stdout.splitlines() if line.startswith("fatal: [spark-head]")]
    assert len(failed) == 1 and "host spark-head: ray_cluster_fabric_subnet (192.168.100.0/24) is no longer read" in failed[0], proc.stdout[-3000:]
    assert "ray_cluster_allowed_addresses" in failed[0], failed[0]
    assert "Gather platform and network facts" not in proc.stdout  # refused first


DASHBOARD_TASK = "TASK [Preflight | Refuse Ray's dashboard where no Ray cluster runs]"


def test_preflight_refuses_rays_dashboard_with_the_default_backend_and_accepts_it_with_ray(inventory: Path, tmp_path: Path) -> None:
    dashboard = ("-e", '{"ray_cluster_dashboard": true}')
    proc = play_head(inventory, PREFLIGHT, *dashboard)
    assert proc.returncode != 0, proc.stdout[-3000:]
    failed = [line for line in proc.stdout.splitlines() if line.startswith("fatal: [spark-head]")]
    assert len(failed) == 1 and "host spark-head: ray_cluster_dashboard is true but vllm_serve_backend is mp" in failed[0], proc.stdout[-3000:]
    assert ("TASK [" + proc.stdout.split(failed[0], 1)[0].rsplit("TASK [", 1)[1]).startswith(DASHBOARD_TASK)  # the failed task
    assert "Gather platform and network facts" not in proc.stdout  # refused before any host is looked at
    # The same dashboard where the inventory asks for the Ray backend (on every host: one backend for the cluster).
    head = ipaddress.IPv4Address(local_ipv4())
    subnet = ipaddress.IPv4Network(f"{head}/24", strict=False)
    worker = next(host for host in subnet.hosts() if host != head)
    ray_inventory = tmp_path / "hosts.yml"
    ray = {"vllm_serve_backend": "ray"}
    write_inventory(ray_inventory, subnet, {"sparkops_fabric_ip": str(head), **ray}, {"sparkops_fabric_ip": str(worker), **ray})
    proc = play_head(ray_inventory, PREFLIGHT, *dashboard)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert DASHBOARD_TASK in proc.stdout and "ray_cluster_dashboard is true" not in proc.stdout


def test_the_ray_role_alone_refuses_docker(inventory: Path) -> None:
    playbook = inventory.parent / "ray_role.yml"
    role = "  roles:\n    - role: sparkops.inference.ray_cluster\n"
    playbook.write_text("- name: The ray_cluster role alone\n  hosts: spark-head\n  gather_facts: false\n" + role)
    proc = play_head(inventory, playbook, "--check", "-e", "ray_cluster_runtime=docker")
    assert proc.returncode != 0, proc.stdout[-3000:]
    failed = [line for line in proc.stdout.splitlines() if line.startswith("fatal: [spark-head]")]
    assert len(failed) == 1 and "value of ray_cluster_runtime must be one of: venv, got: docker" in failed[0], proc.stdout[-3000:]
