# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests for the _cgroup_owner module util: units and containers from /proc/<pid>/cgroup, v1 and v2."""

from __future__ import annotations

import pytest
from ansible_collections.sparkops.inference.plugins.module_utils._cgroup_owner import CgroupOwner, cgroup_path, owner
from proc_tree import fixture_text

DOCKER_ID = "3f2a9c1b7d4e5f60718293a4b5c6d7e83f2a9c1b7d4e5f60718293a4b5c6d7e8"
PODMAN_ID = "9b8a7c6d5e4f30211203f4e5d6c7b8a9ab0c1d2e3f405162738495a6b7c8d9e0"
CRI_ID = "0a1b2c3d4e5f60718293a4b5c6d7e8f9a0b1c2d3e4f5061728394a5b6c7d8e9f"
# The spark lab's host-container (a podman container, cgroupfs driver, cgroup v1), as seen in a lab node.
LAB_ID = "f34b53432211dea8f8a6724306859508fb61cdeee080dd646a9c03f48d617a99"
LAB_ROOT = f"/libpod_parent/libpod-{LAB_ID}"


def lab_cgroup(inner: str) -> str:
    """A lab node's /proc/<pid>/cgroup: v1 controllers at the container root, name=systemd with the unit inside."""
    return f"12:memory:{LAB_ROOT}\n9:name=systemd:{LAB_ROOT}{inner}\n8:pids:{LAB_ROOT}\n3:cpu,cpuacct:{LAB_ROOT}\n0::{LAB_ROOT}\n"


def test_v2_service() -> None:
    who = owner("0::/system.slice/vllm-cluster.service\n")
    assert who == CgroupOwner(
        cgroup="/system.slice/vllm-cluster.service", unit="vllm-cluster.service", user_unit=False, container_id=None, container_runtime=None
    )
    assert who.service == "vllm-cluster.service"
    assert who.as_dict() == {
        "cgroup": "/system.slice/vllm-cluster.service",
        "unit": "vllm-cluster.service",
        "user_unit": False,
        "service": "vllm-cluster.service",
        "container_id": None,
        "container_runtime": None,
    }


def test_docker_systemd_driver_scope() -> None:
    who = owner(f"0::/system.slice/docker-{DOCKER_ID}.scope\n")
    assert (who.unit, who.service, who.container_id, who.container_runtime) == (f"docker-{DOCKER_ID}.scope", None, DOCKER_ID, "docker")


def test_podman_libpod_scope() -> None:
    who = owner(f"0::/machine.slice/libpod-{PODMAN_ID}.scope\n")
    assert (who.unit, who.container_id, who.container_runtime) == (f"libpod-{PODMAN_ID}.scope", PODMAN_ID, "podman")


def test_podman_scope_with_container_subgroup() -> None:
    """crun puts the payload in a ``container`` child of the scope; the scope still names the container."""
    who = owner(f"0::/machine.slice/libpod-{PODMAN_ID}.scope/container\n")
    assert (who.unit, who.container_id, who.container_runtime) == (f"libpod-{PODMAN_ID}.scope", PODMAN_ID, "podman")


def test_cri_containerd_under_kubepods() -> None:
    path = f"/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod1d2c3b4a_5e6f_7a8b_9c0d_1e2f3a4b5c6d.slice/cri-containerd-{CRI_ID}.scope"
    who = owner(f"0::{path}\n")
    assert who.cgroup == path
    assert (who.unit, who.user_unit, who.container_id, who.container_runtime) == (f"cri-containerd-{CRI_ID}.scope", False, CRI_ID, "containerd")


def test_crio_scope() -> None:
    who = owner(f"0::/kubepods.slice/crio-{CRI_ID}.scope\n")
    assert (who.container_id, who.container_runtime) == (CRI_ID, "cri-o")


def test_docker_cgroupfs_driver() -> None:
    who = owner(f"0::/docker/{DOCKER_ID}\n")
    assert (who.unit, who.service, who.container_id, who.container_runtime) == (None, None, DOCKER_ID, "docker")


def test_docker_cgroupfs_needs_a_full_id() -> None:
    assert owner("0::/docker/buildkit\n").container_id is None


def test_login_session_scope() -> None:
    who = owner("0::/user.slice/user-1000.slice/session-3.scope\n")
    assert (who.unit, who.user_unit, who.service, who.container_id) == ("session-3.scope", False, None, None)


def test_user_unit() -> None:
    who = owner("0::/user.slice/user-1000.slice/user@1000.service/app.slice/jupyter.service\n")
    assert (who.unit, who.user_unit, who.service, who.container_id) == ("jupyter.service", True, "jupyter.service", None)


def test_h200_process_api_has_no_unit() -> None:
    text = fixture_text("h200_proc_cgroup.txt")
    who = owner(text)
    assert who == CgroupOwner(cgroup="/process_api/f95119ecc6bc23d209df5f906f600ee9", unit=None, user_unit=False, container_id=None, container_runtime=None)


def test_v1_name_systemd_line_wins() -> None:
    text = "12:memory:/system.slice/ollama.service\n4:devices:/system.slice/ollama.service\n1:name=systemd:/system.slice/ollama.service\n0::/init.scope\n"
    assert cgroup_path(text) == "/system.slice/ollama.service"
    assert owner(text).unit == "ollama.service"


def test_v1_without_systemd_hierarchy_has_no_path() -> None:
    assert cgroup_path("12:memory:/foo\n4:devices:/foo\n") == ""
    assert owner("12:memory:/foo\n").unit is None


def test_unreadable_cgroup_is_nobody() -> None:
    assert owner("") == CgroupOwner(cgroup="", unit=None, user_unit=False, container_id=None, container_runtime=None)


def test_lab_service_inside_the_host_container() -> None:
    who = owner(lab_cgroup("/system.slice/t1.service"))
    assert who.cgroup == f"{LAB_ROOT}/system.slice/t1.service"
    assert (who.unit, who.service, who.user_unit) == ("t1.service", "t1.service", False)
    # The host-container's own cgroup is not a container on the lab node.
    assert (who.container_id, who.container_runtime) == (None, None)


def test_lab_docker_container_inside_the_host_container() -> None:
    who = owner(lab_cgroup(f"/system.slice/docker-{DOCKER_ID}.scope"))
    assert (who.unit, who.container_id, who.container_runtime) == (f"docker-{DOCKER_ID}.scope", DOCKER_ID, "docker")


def test_lab_process_at_the_host_container_root() -> None:
    who = owner(lab_cgroup(""))
    assert who.cgroup == LAB_ROOT
    assert (who.unit, who.container_id, who.container_runtime) == (None, None, None)


@pytest.mark.parametrize(
    ("line", "unit"),
    [
        ("0::/system.slice/vllm-worker@1.service", "vllm-worker@1.service"),
        ("0::/system.slice/system-vllm.slice/vllm-worker@2.service", "vllm-worker@2.service"),
        ("0::/system.slice/sparkops-ray-head.service/payload", "sparkops-ray-head.service"),
        ("0::/init.scope", "init.scope"),
    ],
)
def test_innermost_unit(line: str, unit: str) -> None:
    assert owner(line).unit == unit


def test_host_container_run_by_docker_cgroupfs_is_not_a_container() -> None:
    """A node that is itself a docker container (cgroupfs driver): only a /docker/<id> inside its unit part counts."""
    who = owner(f"1:name=systemd:/docker/{DOCKER_ID}/system.slice/t1.service\n0::/docker/{DOCKER_ID}\n")
    assert (who.unit, who.container_id, who.container_runtime) == ("t1.service", None, None)


@pytest.mark.parametrize(
    ("line", "container_cgroup", "delegated"),
    [
        (f"0::/system.slice/docker-{DOCKER_ID}.scope", f"/system.slice/docker-{DOCKER_ID}.scope", False),
        (f"0::/machine.slice/libpod-{PODMAN_ID}.scope/container", f"/machine.slice/libpod-{PODMAN_ID}.scope", False),
        (f"0::/docker/{DOCKER_ID}", f"/docker/{DOCKER_ID}", False),
        (f"1:name=systemd:{LAB_ROOT}/system.slice/docker-{DOCKER_ID}.scope", f"{LAB_ROOT}/system.slice/docker-{DOCKER_ID}.scope", False),
        # What a user can make in the subtree systemd delegates to their service manager (and where rootless runtimes live).
        (
            f"0::/user.slice/user-1000.slice/user@1000.service/app.slice/docker-{DOCKER_ID}.scope",
            f"/user.slice/user-1000.slice/user@1000.service/app.slice/docker-{DOCKER_ID}.scope",
            True,
        ),
        (f"0::/user.slice/user-1000.slice/user@1000.service/docker/{DOCKER_ID}", f"/user.slice/user-1000.slice/user@1000.service/docker/{DOCKER_ID}", True),
        # A unit's processes may name cgroups below it (Delegate=yes); systemd's own scopes sit in slices.
        (f"0::/system.slice/jobs.service/docker-{DOCKER_ID}.scope", f"/system.slice/jobs.service/docker-{DOCKER_ID}.scope", True),
        ("0::/system.slice/vllm-cluster.service", None, False),
    ],
)
def test_container_cgroup_and_delegation(line: str, container_cgroup: str | None, delegated: bool) -> None:
    who = owner(line + "\n")
    assert (who.container_cgroup, who.delegated) == (container_cgroup, delegated)
