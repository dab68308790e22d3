# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests for the _reclaim_plan plugin util: each branch of the classification, in the docstring's order."""

from __future__ import annotations

import typing as t

import pytest
from ansible_collections.sparkops.inference.plugins.plugin_utils._reclaim_plan import (
    ReclaimSettingsError,
    Settings,
    owner_text,
    plan,
    process_table,
    unit_name,
)

VLLM_ID = "a91c7e2d44b05f3e6a7b8c9d0e1f2a3b4c5d6e7f8091a2b3c4d5e6f708192a3b"
OTHER_ID = "5c0ffee15c0ffee15c0ffee15c0ffee15c0ffee15c0ffee15c0ffee15c0ffee1"


def svc(state: str = "running", status: str = "enabled") -> dict[str, str]:
    return {"state": state, "status": status, "source": "systemd"}


# ansible_facts.services of a GB10 head node (service_facts lists .service units only).
SERVICES: dict[str, dict[str, str]] = {
    "sparkops-ray-head.service": {"name": "sparkops-ray-head.service", **svc()},
    "sparkops-vllm.service": {"name": "sparkops-vllm.service", **svc()},
    "vllm-cluster.service": {"name": "vllm-cluster.service", **svc()},
    "vllm-proxy.service": {"name": "vllm-proxy.service", **svc("stopped", "disabled")},
    "vllm-worker@.service": {"name": "vllm-worker@.service", **svc("inactive", "disabled")},  # a template: cannot be stopped
    "vllm-old.service": {"name": "vllm-old.service", **svc("stopped", "not-found")},  # only referenced: does not exist
    "ollama.service": {"name": "ollama.service", **svc()},
    "jupyter.service": {"name": "jupyter.service", **svc()},
    "ssh.service": {"name": "ssh.service", **svc()},
    "gdm.service": {"name": "gdm.service", **svc()},
}


def proc(
    pid: int,
    name: str = "python3",
    unit: str | None = None,
    used: int | None = 1024,
    cmdline: str | None = None,
    user_unit: bool = False,
    container_id: str | None = None,
    container_name: str | None = None,
    container_running: bool | None = None,
) -> dict[str, t.Any]:
    """One process of a gpu_info result."""
    return {
        "pid": pid,
        "name": name,
        "used_mib": used,
        "gpu_uuid": "GPU-2dee1e25-b3b5-007e-2b55-79f2d0f2ebe5",
        "running": True,
        "cmdline": name if cmdline is None else cmdline,
        "cgroup": f"/system.slice/{unit}" if unit else "",
        "unit": unit,
        "user_unit": user_unit,
        "service": unit if unit and unit.endswith(".service") else None,
        "container_id": container_id,
        "container_runtime": "docker" if container_id else None,
        "container_name": container_name,
        "container_image": "nvcr.io/nvidia/vllm:25.09-py3" if container_name else None,
        "container_running": container_running,
    }


def run(processes: list[dict[str, t.Any]], services: t.Mapping[str, t.Any] | None = None, **settings: t.Any) -> dict[str, t.Any]:
    return plan({"processes": processes}, SERVICES if services is None else services, Settings.from_mapping(settings)).as_dict()


def hows(result: dict[str, t.Any]) -> dict[int, str]:
    return {p["pid"]: p["by"] for p in result["freed"]}


# 1. allowed


def test_xorg_is_allowed_by_basename() -> None:
    result = run([proc(2741, "/usr/lib/xorg/Xorg", "session-c1.scope", 18), proc(3046, "/usr/bin/gnome-shell", "session-c1.scope", 6)])
    assert [(p["pid"], p["why"]) for p in result["kept"]] == [(2741, "allowed"), (3046, "allowed")]
    assert (result["freed"], result["refused"], result["processes"]) == ([], [], [])
    assert result["nothing_to_do"] is True


def test_allowed_comes_before_a_configured_unit() -> None:
    result = run([proc(2741, "/usr/lib/xorg/Xorg", "gdm.service", 18)], units=["gdm"])
    assert result["kept"][0]["why"] == "allowed"
    assert result["units"] == ["gdm.service"]  # configured: stopped all the same, it is the conflicting stack
    assert result["freed"] == []


def test_allowed_is_by_name_not_by_substring() -> None:
    result = run([proc(12, "/opt/evil/Xorg-miner", "session-2.scope")])
    assert result["kept"] == []
    assert result["refused"][0]["pid"] == 12


# 2. own


def test_own_service_is_kept() -> None:
    result = run([proc(501, "ray::IDLE", "sparkops-ray-head.service", 300)])
    assert [(p["pid"], p["why"]) for p in result["kept"]] == [(501, "own")]
    assert (result["own_units"], result["units"], result["processes"], result["refused"]) == ([], [], [], [])
    assert result["nothing_to_do"] is True


def test_include_own_stops_own_units() -> None:
    result = run([proc(501, "ray::IDLE", "sparkops-ray-head.service", 300), proc(502, "raylet", "sparkops-ray-head.service")], include_own=True)
    assert result["own_units"] == ["sparkops-ray-head.service"]
    assert hows(result) == {501: "stopping own unit sparkops-ray-head.service", 502: "stopping own unit sparkops-ray-head.service"}
    assert (result["units"], result["kept"], result["processes"]) == ([], [], [])
    assert result["nothing_to_do"] is False


def test_own_pattern_in_a_user_unit_is_not_own() -> None:
    """A user's service manager cannot be driven by the system's: such a process is not the collection's own."""
    result = run([proc(600, "python3", "sparkops-vllm.service", user_unit=True)])
    assert result["kept"] == []
    assert result["refused"][0]["why"] == "unknown consumer"


# 3. configured units


def test_configured_unit_by_name_without_suffix() -> None:
    result = run([proc(1500, "ollama_llama_server", "ollama.service", 9000)], units=["ollama"])
    assert result["units"] == ["ollama.service"]
    assert hows(result) == {1500: "stopping unit ollama.service"}
    assert (result["units_absent"], result["refused"]) == ([], [])


def test_configured_unit_by_glob() -> None:
    result = run([proc(118211, "VLLM::EngineCore", "vllm-cluster.service", 87212)], units=["vllm-*"])
    # vllm-proxy holds no GPU memory but is configured: stopped too. The template and the not-found unit are skipped.
    assert result["units"] == ["vllm-cluster.service", "vllm-proxy.service"]
    assert hows(result) == {118211: "stopping unit vllm-cluster.service"}
    assert result["units_absent"] == []


def test_configured_own_pattern_is_never_in_units() -> None:
    result = run([proc(501, "ray::IDLE", "sparkops-ray-head.service")], units=["sparkops-*", "sparkops-vllm"])
    assert (result["units"], result["units_absent"], result["own_units"]) == ([], [], [])
    assert result["kept"][0]["why"] == "own"
    # The pattern is reported; the exact name is an error the role fails on, naming gpu_reclaim_units.
    assert result["units_protected"] == [
        {"unit": "sparkops-ray-head.service", "configured": "sparkops-*"},
        {"unit": "sparkops-vllm.service", "configured": "sparkops-*"},
    ]
    assert result["units_protected_named"] == ["sparkops-vllm"]


# Host units a configured pattern may match (issue 15): remote access, the network, the bus, the container engines,
# the collection's own, consoles and cron must never be stopped and disabled.
HOST_SERVICES: dict[str, dict[str, str]] = {
    name: {"name": name, **svc()}
    for name in (
        "ssh.service",
        "sshd.service",
        "systemd-journald.service",
        "systemd-logind.service",
        "systemd-networkd.service",
        "systemd-resolved.service",
        "dbus.service",
        "networking.service",
        "NetworkManager.service",
        "docker.service",
        "containerd.service",
        "podman.service",
        "sparkops-vllm.service",
        "sparkops-ray-head.service",
        "getty@tty1.service",
        "serial-getty@ttyS0.service",
        "cron.service",
        "atd.service",
        "nvidia-persistenced.service",
        "snapd.service",
        "spark-old-stack.service",
        "nim-old.service",
    )
}


def test_glob_pattern_never_plans_protected_units() -> None:
    """ATTACK (issue 15): gpu_reclaim_units ['s*'] stopped and disabled ssh, systemd-*, the collection's own units."""
    result = run([], HOST_SERVICES, units=["s*", "n*", "*d", "*"])
    planned = set(result["units"])
    assert planned == {"snapd.service", "spark-old-stack.service", "nim-old.service"}, sorted(planned)
    protected = {p["unit"] for p in result["units_protected"]}
    assert {"ssh.service", "sshd.service", "systemd-journald.service", "sparkops-vllm.service", "networking.service"} <= protected
    assert {"NetworkManager.service", "nvidia-persistenced.service", "dbus.service", "docker.service", "getty@tty1.service"} <= protected
    assert {"cron.service", "atd.service", "containerd.service", "podman.service", "serial-getty@ttyS0.service"} <= protected
    assert {"unit": "ssh.service", "configured": "s*"} in result["units_protected"]
    assert not planned & protected
    assert result["units_protected_named"] == []  # patterns are reported, not an error
    assert result["units_absent"] == []


@pytest.mark.parametrize("configured", ["ssh", "sshd.service", "systemd-journald", "dbus", "NetworkManager", "docker", "containerd", "sparkops-vllm", "cron"])
def test_protected_unit_named_exactly_is_an_error(configured: str) -> None:
    """ATTACK (issue 15): a protected unit named exactly is never planned, and is an error (the role fails naming
    gpu_reclaim_units), whether the host has it or not."""
    result = run([], HOST_SERVICES, units=[configured, "spark-old-stack"])
    assert result["units"] == ["spark-old-stack.service"]
    assert result["units_protected_named"] == [configured]
    assert result["units_absent"] == []


def test_protected_named_unit_the_host_lacks_is_an_error_too() -> None:
    result = run([], {}, units=["sshd"])
    assert (result["units"], result["units_protected_named"], result["units_absent"]) == ([], ["sshd"], [])


@pytest.mark.parametrize("unit", ["NetworkManager.service", "systemd-networkd.service", "nvidia-persistenced.service", "podman.service", "dbus.service"])
def test_unknown_consumer_in_a_protected_unit_is_ended_never_the_unit_stopped(unit: str) -> None:
    """ATTACK (issue 15): end_unknown_consumers stopped and disabled NetworkManager (not in the old list) to free GPU memory."""
    result = run([proc(6100, "python3", unit)], HOST_SERVICES, end_unknown_consumers=True)
    assert result["units"] == []
    assert result["processes"] == [{"pid": 6100, "name": "python3", "why": "unknown consumer", "start_time": None}]


def test_absent_configured_unit() -> None:
    result = run([], units=["tgi", "vllm-old", "vllm-worker@", "nim-*"])
    assert result["units_absent"] == ["tgi", "vllm-old", "vllm-worker@", "nim-*"]
    assert result["units"] == []
    assert result["nothing_to_do"] is True


def test_not_found_and_template_units_are_absent() -> None:
    services = {"vllm-old.service": svc("stopped", "not-found"), "vllm-worker@.service": svc("inactive", "static")}
    result = run([], services, units=["vllm-old", "vllm-worker@.service", "vllm-*"])
    assert (result["units"], result["units_absent"]) == ([], ["vllm-old", "vllm-worker@.service", "vllm-*"])


def test_template_instances_are_units() -> None:
    services = {"vllm-worker@1.service": svc(), "vllm-worker@.service": svc("inactive", "disabled")}
    assert run([], services, units=["vllm-worker@*"])["units"] == ["vllm-worker@1.service"]


def test_unit_name() -> None:
    assert [unit_name(n) for n in ("vllm-cluster", "vllm-cluster.service", "vllm.socket", "vllm-*", "ray.head")] == [
        "vllm-cluster.service",
        "vllm-cluster.service",
        "vllm.socket",
        "vllm-*",
        "ray.head.service",
    ]


# 4. containers


def test_configured_container_by_name() -> None:
    process = proc(3101, "VLLM::EngineCore", f"docker-{VLLM_ID}.scope", 80000, container_id=VLLM_ID, container_name="vllm_node", container_running=True)
    result = run([process], containers=["vllm_node"], remove_gpu_containers=False)
    assert result["containers"] == ["vllm_node"]
    assert hows(result) == {3101: "removing container vllm_node"}
    assert result["refused"] == []


def test_configured_container_by_full_id() -> None:
    process = proc(3101, "python3", f"docker-{VLLM_ID}.scope", container_id=VLLM_ID, container_name="vllm_node", container_running=True)
    result = run([process], containers=[VLLM_ID], remove_gpu_containers=False)
    assert result["containers"] == [VLLM_ID]
    assert hows(result) == {3101: f"removing container {VLLM_ID}"}


@pytest.mark.parametrize("configured", [VLLM_ID[:12], VLLM_ID[:4], "a91c7e2d"])
def test_configured_id_prefix_or_hex_name_does_not_match_a_container(configured: str) -> None:
    """ATTACK (issue 15): an entry of gpu_reclaim_containers that names no container (an old name made of hex digits, a
    short id) must not take another container by id prefix: only an exact name or the full 64-hex id matches."""
    process = proc(3101, "python3", f"docker-{VLLM_ID}.scope", container_id=VLLM_ID, container_name="vllm_node", container_running=True)
    result = run([process], containers=[configured], remove_gpu_containers=False)
    assert hows(result) == {}
    assert [(p["pid"], p["why"]) for p in result["refused"]] == [(3101, "unknown consumer")]
    assert result["containers"] == [configured]  # still handed to container_remove, which matches it exactly (absent)


def test_configured_container_is_removed_even_without_gpu_process() -> None:
    result = run([], containers=["vllm_node"])
    assert result["containers"] == ["vllm_node"]
    assert result["nothing_to_do"] is False


def test_unconfigured_running_container_removed_with_remove_gpu_containers() -> None:
    process = proc(4000, "python", f"docker-{OTHER_ID}.scope", container_id=OTHER_ID, container_name="jupyter", container_running=True)
    result = run([process])  # remove_gpu_containers defaults to true
    assert result["containers"] == ["jupyter"]
    assert hows(result) == {4000: "removing container jupyter"}


def test_unnamed_running_container_is_removed_by_id() -> None:
    process = proc(4000, "python", f"docker-{OTHER_ID}.scope", container_id=OTHER_ID, container_running=True)
    assert run([process])["containers"] == [OTHER_ID]


def test_unconfigured_running_container_refused_without_remove_gpu_containers() -> None:
    process = proc(4000, "VLLM::EngineCore", f"docker-{OTHER_ID}.scope", container_id=OTHER_ID, container_name="jupyter", container_running=True)
    result = run([process], remove_gpu_containers=False, end_leftover_processes=True)
    # Not removed, and not ended as a leftover either: its container is alive.
    assert (result["containers"], result["processes"], result["freed"]) == ([], [], [])
    assert [(p["pid"], p["why"]) for p in result["refused"]] == [(4000, "unknown consumer")]
    assert "container jupyter" in result["refused_table"]


def test_own_container_is_never_removed() -> None:
    """ATTACK (issue 15): with the docker runtime the collection's own vLLM runs in container sparkops-vllm (in its docker
    scope, not in sparkops-vllm.service): every rerun planned it for removal (remove_gpu_containers)."""
    vllm = proc(3200, "VLLM::EngineCore", f"docker-{VLLM_ID}.scope", 80000, container_id=VLLM_ID, container_name="sparkops-vllm", container_running=True)
    ray = proc(3300, "ray::IDLE", f"docker-{OTHER_ID}.scope", 900, container_id=OTHER_ID, container_name="sparkops-ray", container_running=True)
    for settings in ({}, {"end_unknown_consumers": True}, {"end_leftover_processes": True}):
        result = run([vllm, ray], **settings)
        assert (result["containers"], result["processes"], result["units"], result["refused"]) == ([], [], [], []), settings
        assert [(p["pid"], p["why"]) for p in result["kept"]] == [(3200, "own"), (3300, "own")]
        assert result["nothing_to_do"] is True


def test_own_container_configured_is_an_error_and_not_planned() -> None:
    """ATTACK (issue 15): gpu_reclaim_containers naming the collection's own container (by name or full id)."""
    vllm = proc(3200, "VLLM::EngineCore", f"docker-{VLLM_ID}.scope", container_id=VLLM_ID, container_name="sparkops-vllm", container_running=True)
    result = run([vllm], containers=["sparkops-ray", VLLM_ID, "vllm_node"])
    assert result["containers"] == ["vllm_node"]
    assert result["containers_protected_named"] == ["sparkops-ray", VLLM_ID]
    assert result["kept"][0]["why"] == "own"


def test_own_container_with_include_own_stops_its_unit_not_the_container() -> None:
    services = {**SERVICES, "sparkops-ray-worker.service": {"name": "sparkops-ray-worker.service", **svc("stopped", "disabled")}}
    vllm = proc(3200, "VLLM::EngineCore", f"docker-{VLLM_ID}.scope", container_id=VLLM_ID, container_name="sparkops-vllm", container_running=True)
    ray = proc(3300, "ray::IDLE", f"docker-{OTHER_ID}.scope", container_id=OTHER_ID, container_name="sparkops-ray", container_running=True)
    result = run([vllm, ray], services, include_own=True)
    assert result["containers"] == []
    # sparkops-ray runs in the head's unit here (the worker unit is stopped): the running own unit named for it.
    assert result["own_units"] == ["sparkops-vllm.service", "sparkops-ray-head.service"]
    assert hows(result) == {3200: "stopping own unit sparkops-vllm.service", 3300: "stopping own unit sparkops-ray-head.service"}


def test_own_container_with_include_own_and_no_unit_is_refused() -> None:
    vllm = proc(3200, "VLLM::EngineCore", f"docker-{VLLM_ID}.scope", container_id=VLLM_ID, container_name="sparkops-vllm", container_running=True)
    result = run([vllm], {}, include_own=True)
    assert (result["containers"], result["own_units"]) == ([], [])
    assert [(p["pid"], p["why"]) for p in result["refused"]] == [(3200, "own container sparkops-vllm, run by no own unit")]


def test_container_not_confirmed_by_docker_is_not_removed() -> None:
    """gpu_info could not confirm the container from docker (container_running None, container_confirmed False)."""
    process = {**proc(4000, "python", f"docker-{OTHER_ID}.scope", container_id=OTHER_ID), "container_confirmed": False}
    result = run([process], end_leftover_processes=True)
    assert (result["containers"], result["processes"]) == ([], [])
    assert result["refused"][0]["why"] == "unknown consumer"
    assert result["refused_table"].splitlines()[1].endswith(f"container {OTHER_ID[:12]}, not confirmed by docker")


def test_container_of_unknown_state_is_not_removed_through_docker() -> None:
    """container_running None: docker was not asked, or the container is podman's/containerd's."""
    process = proc(4000, "VLLM::EngineCore", f"libpod-{OTHER_ID}.scope", container_id=OTHER_ID, container_running=None)
    result = run([process], end_leftover_processes=True)
    assert (result["containers"], result["processes"]) == ([], [])
    assert result["refused"][0]["why"] == "unknown consumer"


# 5. leftovers


def test_container_gone_is_a_leftover_refused_by_default() -> None:
    process = proc(3101, "VLLM::Worker", f"docker-{VLLM_ID}.scope", container_id=VLLM_ID, container_running=False)
    result = run([process])
    assert [(p["pid"], p["why"]) for p in result["refused"]] == [(3101, "leftover (end_leftover_processes is off)")]
    assert (result["processes"], result["containers"]) == ([], [])
    assert result["refused_table"].splitlines()[1].endswith(f"container {VLLM_ID[:12]}, gone")


def test_container_gone_is_ended_with_end_leftover_processes() -> None:
    process = proc(3101, "VLLM::Worker", f"docker-{VLLM_ID}.scope", container_id=VLLM_ID, container_running=False)
    result = run([process], end_leftover_processes=True)
    assert result["processes"] == [{"pid": 3101, "name": "VLLM::Worker", "why": "outlived its container", "start_time": None}]
    assert hows(result) == {3101: "ending pid 3101 (outlived its container)"}
    assert result["containers"] == []


def test_ray_worker_in_a_session_scope_is_a_leftover() -> None:
    worker = proc(7001, "ray::RayWorkerWrapper", "session-5.scope", 4000)
    assert run([worker])["refused"][0]["why"] == "leftover (end_leftover_processes is off)"
    result = run([worker], end_leftover_processes=True)
    assert result["processes"] == [{"pid": 7001, "name": "ray::RayWorkerWrapper", "why": "leftover", "start_time": None}]
    assert result["refused"] == []


def test_leftover_by_command_line() -> None:
    api = proc(7002, "python3", "session-5.scope", cmdline="python3 -m vllm.entrypoints.openai.api_server --port 8000")
    assert run([api], end_leftover_processes=True)["processes"] == [{"pid": 7002, "name": "python3", "why": "leftover", "start_time": None}]


def test_leftover_pattern_in_a_service_is_not_a_leftover() -> None:
    result = run([proc(7003, "ray::RayWorkerWrapper", "jupyter.service")], end_leftover_processes=True)
    assert result["processes"] == []
    assert result["refused"][0]["why"] == "unknown consumer"


# 6. unknown consumers


def test_python_in_unconfigured_service_is_refused_naming_the_unit() -> None:
    result = run([proc(4242, "python3", "jupyter.service", 20480)], units=["vllm-*"])
    assert [(p["pid"], p["why"]) for p in result["refused"]] == [(4242, "unknown consumer")]
    assert result["refused_table"] == " PID    MiB  NAME     OWNER\n4242  20480  python3  unit jupyter.service"
    assert "jupyter.service" not in result["units"]


def test_end_unknown_consumers_stops_the_service() -> None:
    result = run([proc(4242, "python3", "jupyter.service"), proc(4243, "python3", "jupyter.service")], end_unknown_consumers=True)
    assert result["units"] == ["jupyter.service"]
    assert hows(result) == {4242: "stopping unit jupyter.service (unknown consumer)", 4243: "stopping unit jupyter.service (unknown consumer)"}
    assert (result["refused"], result["processes"]) == ([], [])


def test_end_unknown_consumers_ends_a_process_in_no_service() -> None:
    result = run([proc(5150, "python3", "session-9.scope"), proc(5151, "python3", None)], end_unknown_consumers=True)
    assert result["processes"] == [
        {"pid": 5150, "name": "python3", "why": "unknown consumer", "start_time": None},
        {"pid": 5151, "name": "python3", "why": "unknown consumer", "start_time": None},
    ]


def test_processes_to_end_carry_their_start_time() -> None:
    """ATTACK (issue 15): process_end is handed (pid, start time) as gpu_info read them, so a reused pid is never ended."""
    worker = {**proc(7001, "ray::RayWorkerWrapper", "session-5.scope"), "start_time": 812345}
    result = run([worker], end_leftover_processes=True)
    assert result["processes"] == [{"pid": 7001, "name": "ray::RayWorkerWrapper", "why": "leftover", "start_time": 812345}]
    assert result["units"] == []


def test_end_unknown_consumers_removes_a_running_container() -> None:
    process = proc(4000, "python", f"docker-{OTHER_ID}.scope", container_id=OTHER_ID, container_name="jupyter", container_running=True)
    result = run([process], remove_gpu_containers=False, end_unknown_consumers=True)
    assert result["containers"] == ["jupyter"]


def test_unit_neither_configured_nor_holding_gpu_is_never_touched() -> None:
    result = run(
        [proc(4242, "python3", "jupyter.service")],
        units=["ollama"],
        end_unknown_consumers=True,
        end_leftover_processes=True,
        include_own=True,
    )
    assert result["units"] == ["ollama.service", "jupyter.service"]
    for untouched in ("ssh.service", "gdm.service", "vllm-cluster.service", "sparkops-ray-head.service"):
        assert untouched not in result["units"]
        assert untouched not in result["own_units"]


def test_mixed_host() -> None:
    processes = [
        proc(2741, "/usr/lib/xorg/Xorg", "session-c1.scope", 18),
        proc(501, "ray::IDLE", "sparkops-ray-head.service", 300),
        proc(118211, "VLLM::EngineCore", "vllm-cluster.service", 87212),
        proc(3101, "VLLM::EngineCore", f"docker-{VLLM_ID}.scope", 500, container_id=VLLM_ID, container_name="vllm_node", container_running=True),
        proc(7001, "ray::RayWorkerWrapper", "session-5.scope", 4000),
        proc(4242, "python3", "jupyter.service", 20480),
    ]
    result = run(processes, units=["vllm-*"], containers=["vllm_node"])
    assert [p["pid"] for p in result["kept"]] == [2741, 501]
    assert hows(result) == {118211: "stopping unit vllm-cluster.service", 3101: "removing container vllm_node"}
    assert [(p["pid"], p["why"]) for p in result["refused"]] == [(7001, "leftover (end_leftover_processes is off)"), (4242, "unknown consumer")]
    assert result["refused_table"].splitlines() == [
        " PID    MiB  NAME                   OWNER",
        "7001   4000  ray::RayWorkerWrapper  unit session-5.scope",
        "4242  20480  python3                unit jupyter.service",
    ]


# Settings


def test_settings_defaults() -> None:
    settings = Settings.from_mapping({})
    assert settings == Settings()
    switches = (settings.remove_gpu_containers, settings.include_own, settings.end_leftover_processes, settings.end_unknown_consumers)
    assert switches == (True, False, False, False)
    assert Settings.from_mapping({"units": ["a"], "include_own": True}) == Settings(units=("a",), include_own=True)


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"unit": ["vllm"]}, r"unknown reclaim setting\(s\): unit; known: allowed_processes, containers, "),
        ({"include_own": "yes"}, r"reclaim setting include_own must be true or false, got 'yes'"),
        ({"units": "vllm-cluster"}, r"reclaim setting units must be a list of strings, got 'vllm-cluster'"),
        ({"containers": ["a", 3]}, r"reclaim setting containers must be a list of strings, got \['a', 3\]"),
        ({"leftover_processes": None}, r"reclaim setting leftover_processes must be a list of strings, got None"),
    ],
)
def test_settings_errors_name_the_setting(values: dict[str, t.Any], message: str) -> None:
    with pytest.raises(ReclaimSettingsError, match=message):
        Settings.from_mapping(values)


@pytest.mark.parametrize("values", [["units"], "units", 3])
def test_settings_must_be_a_mapping(values: t.Any) -> None:
    with pytest.raises(ReclaimSettingsError, match=f"reclaim settings must be a dict, got {type(values).__name__}"):
        Settings.from_mapping(values)


# Reporting


def test_nothing_to_do() -> None:
    assert run([])["nothing_to_do"] is True
    assert run([proc(1, "/usr/lib/xorg/Xorg", "session-c1.scope")], units=["absent"])["nothing_to_do"] is True
    assert run([], units=["ollama"])["nothing_to_do"] is False
    assert run([proc(7001, "ray::X", "session-5.scope")], end_leftover_processes=True)["nothing_to_do"] is False
    # Refused processes alone are nothing to do: the role fails on them before stopping anything.
    refused = run([proc(4242, "python3", "jupyter.service")])
    assert (refused["nothing_to_do"], refused["refused_table"] != "") == (True, True)


def test_owner_text_and_table() -> None:
    assert owner_text({"unit": "app.service", "user_unit": True}) == "user unit app.service"
    assert owner_text({"container_id": VLLM_ID, "container_running": None}) == f"container {VLLM_ID[:12]}"
    assert owner_text({}) == "no unit"
    assert process_table([{"pid": 9, "used_mib": None, "name": "x"}]) == "PID  MiB  NAME  OWNER\n  9    ?  x     no unit"
