# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests for the _gpu_info module util: the report over a fake /proc, with docker's containers as given."""

from __future__ import annotations

from pathlib import Path

import pytest
from ansible_collections.sparkops.inference.plugins.module_utils._docker_cli import Container
from ansible_collections.sparkops.inference.plugins.module_utils._gpu_info import (
    GpuInfoError,
    collect,
    describe_process,
    gpu_report,
    memory_summary,
    top_memory,
)
from ansible_collections.sparkops.inference.plugins.module_utils._meminfo import parse_meminfo
from ansible_collections.sparkops.inference.plugins.module_utils._nvidia_smi import ComputeApp, parse_compute_apps, parse_gpus
from proc_tree import GB10_PROCS, JUPYTER_ID, Proc, fixture_text, make_proc

PODMAN_ID = "9b8a7c6d5e4f30211203f4e5d6c7b8a9ab0c1d2e3f405162738495a6b7c8d9e0"
GB10_UUID = "GPU-2dee1e25-b3b5-007e-2b55-79f2d0f2ebe5"
JUPYTER = Container(id=JUPYTER_ID, names=("jupyter",), image="nvcr.io/nvidia/pytorch:25.09-py3", state="running", status="Up 2 hours")


def app(pid: int, name: str = "python3", used: int | None = 100, uuid: str = GB10_UUID) -> ComputeApp:
    return ComputeApp(pid=pid, gpu_uuid=uuid, used_mib=used, name=name)


@pytest.fixture
def gb10_proc(tmp_path: Path) -> Path:
    return make_proc(tmp_path / "proc", GB10_PROCS, fixture_text("gb10_meminfo.txt"))


def test_gb10_report(gb10_proc: Path) -> None:
    gpus = parse_gpus(fixture_text("gb10_query_gpu_csv.txt"))
    apps = parse_compute_apps(fixture_text("gb10_apps_busy.txt"))
    meminfo = parse_meminfo(fixture_text("gb10_meminfo.txt"))
    report = gpu_report(gpus, apps, meminfo, gb10_proc, [JUPYTER], top_count=3)
    assert report["unified_memory"] is True
    assert (report["total_mib"], report["available_mib"]) == (124610, 115787)  # MemTotal, MemAvailable
    assert report["used_mib"] == 18 + 6 + 19135 + 87212
    assert report["meminfo"]["page_cache_mib"] == 20111
    assert report["gpus"] == [gpus[0].as_dict()]
    by_pid = {p["pid"]: p for p in report["processes"]}
    assert list(by_pid) == [2741, 3046, 114687, 118211]
    assert by_pid[118211] == {
        "pid": 118211,
        "name": "VLLM::EngineCore",
        "used_mib": 87212,
        "gpu_uuid": GB10_UUID,
        "running": True,
        "cmdline": "VLLM::EngineCore",
        "cgroup": "/system.slice/vllm-cluster.service",
        "unit": "vllm-cluster.service",
        "user_unit": False,
        "service": "vllm-cluster.service",
        "container_id": None,
        "container_runtime": None,
        "container_name": None,
        "container_image": None,
        "container_running": None,
    }
    jupyter = by_pid[114687]
    assert jupyter["cmdline"] == "/usr/local/bin/python -m jupyterlab"
    assert (jupyter["unit"], jupyter["service"], jupyter["container_id"], jupyter["container_runtime"]) == (
        f"docker-{JUPYTER_ID}.scope",
        None,
        JUPYTER_ID,
        "docker",
    )
    assert (jupyter["container_name"], jupyter["container_image"], jupyter["container_running"]) == ("jupyter", JUPYTER.image, True)
    assert by_pid[2741]["cmdline"] == "/usr/lib/xorg/Xorg vt1 -displayfd 3"
    assert by_pid[2741]["unit"] == "session-c1.scope"
    assert [(p["pid"], p["rss_mib"]) for p in report["top_memory"]] == [(118211, 4394), (114687, 2050), (3046, 244)]


def test_h200_report(tmp_path: Path) -> None:
    torch = Proc(442, ("python3", "-c", "import torch"), fixture_text("h200_proc_cgroup.txt"), "python3", 22_000_000)
    proc = make_proc(tmp_path / "proc", [torch], fixture_text("h200_proc_meminfo.txt"))
    gpus = parse_gpus(fixture_text("h200_query_gpu_nounits.txt"))
    apps = parse_compute_apps(fixture_text("h200_apps_busy.txt"))
    report = gpu_report(gpus, apps, parse_meminfo(fixture_text("h200_proc_meminfo.txt")), proc, None)
    assert report["unified_memory"] is False
    assert (report["total_mib"], report["available_mib"], report["used_mib"]) == (143771, 143156, 21090)
    assert report["meminfo"]["total_mib"] == 128887  # the host's, reported beside the GPU's
    (process,) = report["processes"]
    assert (process["pid"], process["cgroup"], process["unit"], process["container_id"]) == (442, "/process_api/f95119ecc6bc23d209df5f906f600ee9", None, None)
    assert process["container_running"] is None
    assert report["top_memory"] == []  # top_count defaults to 0


def test_discrete_gpus_sum_free_memory() -> None:
    text = "index, name, memory.total [MiB], memory.used [MiB], memory.free [MiB]\n0, NVIDIA H200, 143771, 21099, 122058\n1, NVIDIA H200, 143771, 0, 143156\n"
    meminfo = parse_meminfo(fixture_text("h200_proc_meminfo.txt"))
    assert memory_summary(parse_gpus(text), meminfo) == {"unified_memory": False, "total_mib": 287542, "available_mib": 265214}


def test_no_gpu_reads_as_unified() -> None:
    meminfo = parse_meminfo(fixture_text("gb10_meminfo.txt"))
    assert memory_summary([], meminfo) == {"unified_memory": True, "total_mib": 124610, "available_mib": 115787}


@pytest.mark.parametrize(
    ("containers", "name", "image", "running"),
    [
        ([JUPYTER], "jupyter", JUPYTER.image, True),
        ([Container(id=JUPYTER_ID, names=("jupyter",), image="img", state="paused")], "jupyter", "img", True),
        ([Container(id=JUPYTER_ID, names=("jupyter",), image="img", state="exited", status="Exited (0) 1 minute ago")], "jupyter", "img", False),
        ([Container(id="1" * 64, names=("other",), image="img", state="running")], None, None, False),  # id with no container: gone
        ([], None, None, False),
        (None, None, None, None),  # docker not asked
    ],
)
def test_container_resolution(gb10_proc: Path, containers: list[Container] | None, name: str | None, image: str | None, running: bool | None) -> None:
    described = describe_process(app(114687), gb10_proc, containers)
    assert described["container_id"] == JUPYTER_ID
    assert (described["container_name"], described["container_image"], described["container_running"]) == (name, image, running)


def test_container_of_another_runtime_is_not_called_gone(tmp_path: Path) -> None:
    """docker ps does not list podman's (or containerd's) containers: their state is unknown, not gone."""
    proc = make_proc(tmp_path, [Proc(51, ("python3",), f"0::/machine.slice/libpod-{PODMAN_ID}.scope/container\n", "python3", 10)])
    described = describe_process(app(51), proc, [JUPYTER])
    assert (described["container_runtime"], described["container_id"]) == ("podman", PODMAN_ID)
    assert (described["container_name"], described["container_running"]) == (None, None)


def test_podman_container_listed_by_a_docker_compatible_cli(tmp_path: Path) -> None:
    """With podman-docker, ``docker ps`` lists podman's containers: then their state is known."""
    proc = make_proc(tmp_path, [Proc(51, ("python3",), f"0::/machine.slice/libpod-{PODMAN_ID}.scope\n", "python3", 10)])
    listed = Container(id=PODMAN_ID, names=("vllm",), image="vllm", state="exited")
    assert describe_process(app(51), proc, [listed])["container_running"] is False


def test_vanished_pid(gb10_proc: Path) -> None:
    described = describe_process(app(424242, name="python3", used=512), gb10_proc, [JUPYTER])
    assert described["running"] is False
    owner = {key: described[key] for key in ("cmdline", "cgroup", "unit", "container_id", "container_running")}
    assert owner == {"cmdline": "", "cgroup": "", "unit": None, "container_id": None, "container_running": None}
    assert (described["pid"], described["name"], described["used_mib"]) == (424242, "python3", 512)


def test_top_memory_order_and_count(gb10_proc: Path) -> None:
    top = top_memory(gb10_proc, 10)
    # Largest first; kthreadd (no VmRSS) and the non-pid entries are skipped.
    assert [p["pid"] for p in top] == [118211, 114687, 3046, 2741, 900]
    assert top[0] == {"pid": 118211, "name": "VLLM::EngineCore", "rss_mib": 4394, "unit": "vllm-cluster.service", "container_id": None}
    assert top[1]["container_id"] == JUPYTER_ID
    assert [p["pid"] for p in top_memory(gb10_proc, 2)] == [118211, 114687]
    assert top_memory(gb10_proc, 0) == []


def test_top_memory_skips_sub_mib_and_survives_an_empty_name(tmp_path: Path) -> None:
    proc = make_proc(tmp_path, [Proc(7, ("x",), "0::/init.scope\n", "", 4096), Proc(8, ("y",), "", "tiny", 1000)])
    assert top_memory(proc, 5) == [{"pid": 7, "name": "", "rss_mib": 4, "unit": "init.scope", "container_id": None}]


def test_collect_asks_nvidia_smi_then_docker_and_reports(gb10_proc: Path) -> None:
    calls: list[str] = []
    outputs = {"--query-gpu": fixture_text("gb10_query_gpu_csv.txt"), "--query-compute-apps": fixture_text("gb10_apps_busy.txt")}

    def run(argv: list[str]) -> tuple[int, str, str]:
        flag = next(arg.split("=")[0] for arg in argv if arg.startswith("--query"))
        calls.append(flag)
        return 0, outputs[flag], ""

    def containers() -> list[Container]:
        calls.append("docker ps")
        return [JUPYTER]

    report = collect(run, "/usr/bin/nvidia-smi", gb10_proc, containers, top_count=2)
    assert calls == ["--query-gpu", "--query-compute-apps", "docker ps"]
    assert report["unified_memory"] is True and report["used_mib"] == 18 + 6 + 19135 + 87212
    assert len(report["top_memory"]) == 2


def test_collect_names_the_failed_query_and_asks_docker_nothing(gb10_proc: Path) -> None:
    def run(argv: list[str]) -> tuple[int, str, str]:
        return (9, "", "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.") if "--query-gpu" in argv[1] else (0, "", "")

    with pytest.raises(GpuInfoError, match=r"^/usr/bin/nvidia-smi --query-gpu failed \(rc 9\): NVIDIA-SMI has failed") as caught:
        collect(run, "/usr/bin/nvidia-smi", gb10_proc, lambda: pytest.fail("docker asked after a failure"))
    assert caught.value.rc == 9


def test_collect_names_unreadable_output(tmp_path: Path) -> None:
    proc = make_proc(tmp_path / "proc", GB10_PROCS, "MemFree: 1 kB\n")
    outputs = {"gpu": fixture_text("gb10_query_gpu_csv.txt"), "compute-apps": fixture_text("gb10_apps_busy.txt")}
    with pytest.raises(GpuInfoError, match="MemTotal or MemAvailable") as caught:
        collect(lambda argv: (0, outputs["gpu" if "--query-gpu" in argv[1] else "compute-apps"], ""), "nvidia-smi", proc)
    assert caught.value.rc is None
