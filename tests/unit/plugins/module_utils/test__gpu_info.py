# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests for the _gpu_info module util: the report over a fake /proc, with docker's containers as given."""

from __future__ import annotations

import json
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
# docker's word on which process is the jupyter container's (docker container inspect: State.Pid).
JUPYTER_MAIN = {JUPYTER_ID: 114687}
# A cgroup any user can make in the subtree systemd delegates to their service manager, named like jupyter's scope.
USER_MADE_SCOPE = f"0::/user.slice/user-1000.slice/user@1000.service/app.slice/docker-{JUPYTER_ID}.scope\n"


def app(pid: int, name: str = "python3", used: int | None = 100, uuid: str = GB10_UUID) -> ComputeApp:
    return ComputeApp(pid=pid, gpu_uuid=uuid, used_mib=used, name=name)


@pytest.fixture
def gb10_proc(tmp_path: Path) -> Path:
    return make_proc(tmp_path / "proc", GB10_PROCS, fixture_text("gb10_meminfo.txt"))


def test_gb10_report(gb10_proc: Path) -> None:
    gpus = parse_gpus(fixture_text("gb10_query_gpu_csv.txt"))
    apps = parse_compute_apps(fixture_text("gb10_apps_busy.txt"))
    meminfo = parse_meminfo(fixture_text("gb10_meminfo.txt"))
    asked: list[list[str]] = []
    report = gpu_report(gpus, apps, meminfo, gb10_proc, [JUPYTER], top_count=3, main_pids=lambda ids: asked.append(ids) or JUPYTER_MAIN)
    assert asked == [[JUPYTER_ID]]  # docker is asked once, for the running containers the cgroups name
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
        "container_confirmed": None,
        "start_time": 912377,
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
    assert (jupyter["container_confirmed"], jupyter["start_time"]) == (True, 811042)
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
    described = describe_process(app(114687), gb10_proc, containers, JUPYTER_MAIN)
    assert described["container_id"] == JUPYTER_ID
    assert (described["container_name"], described["container_image"], described["container_running"]) == (name, image, running)


def test_running_container_docker_does_not_confirm_is_not_attributed(gb10_proc: Path) -> None:
    """docker inspect was not answered, or named no main process: the cgroup's name alone does not make it jupyter's."""
    for main_pids in ({}, {JUPYTER_ID: 0}, {JUPYTER_ID: 424242}):
        described = describe_process(app(114687), gb10_proc, [JUPYTER], main_pids)
        assert described["container_id"] == JUPYTER_ID
        assert (described["container_name"], described["container_running"], described["container_confirmed"]) == (None, None, False)


def test_gpu_report_always_asks_for_confirmation(gb10_proc: Path) -> None:
    """gpu_info's report (what the reclaim plan acts on): without a way to ask docker, running containers stay unconfirmed."""
    apps = parse_compute_apps(fixture_text("gb10_apps_busy.txt"))
    report = gpu_report([], apps, parse_meminfo(fixture_text("gb10_meminfo.txt")), gb10_proc, [JUPYTER])
    jupyter = report["processes"][2]
    assert (jupyter["container_name"], jupyter["container_running"], jupyter["container_confirmed"]) == (None, None, False)


def test_describe_without_asking_docker_takes_the_listing(gb10_proc: Path) -> None:
    """main_pids None (node_recon's report, which acts on nothing): the listing names the container, unconfirmed."""
    described = describe_process(app(114687), gb10_proc, [JUPYTER])
    assert (described["container_name"], described["container_running"], described["container_confirmed"]) == ("jupyter", True, None)


def test_user_made_docker_scope_is_not_that_container(tmp_path: Path) -> None:
    """ATTACK (issue 15): a user's GPU process in a cgroup they made and named docker-<jupyter's id>.scope was taken for
    jupyter's, and the plan removed the jupyter container (remove_gpu_containers). docker's main process of jupyter is
    elsewhere: not confirmed, not attributed."""
    jupyter, attacker = GB10_PROCS[2], Proc(7777, ("python3", "mine.py"), USER_MADE_SCOPE, "python3", 1000, 990_001)
    proc = make_proc(tmp_path / "proc", [jupyter, attacker])
    described = describe_process(app(7777), proc, [JUPYTER], JUPYTER_MAIN)
    assert (described["container_runtime"], described["container_id"]) == ("docker", JUPYTER_ID)
    assert (described["container_name"], described["container_image"], described["container_running"]) == (None, None, None)
    assert described["container_confirmed"] is False
    assert describe_process(app(7777), proc, [JUPYTER])["container_running"] is None  # nor with docker not asked
    # The real one is confirmed.
    assert describe_process(app(114687), proc, [JUPYTER], JUPYTER_MAIN)["container_running"] is True


@pytest.mark.parametrize(
    "cgroup",
    [
        f"0::/user.slice/user-1000.slice/user@1000.service/app.slice/docker-{'e' * 64}.scope\n",
        f"0::/user.slice/user-1000.slice/user@1000.service/docker/{'e' * 64}\n",
        f"0::/system.slice/docker-{JUPYTER_ID[:12]}.scope\n",
    ],
)
def test_user_made_docker_cgroup_of_no_container_is_not_a_gone_container(tmp_path: Path, cgroup: str) -> None:
    """ATTACK (issue 15): a cgroup named like a docker container docker does not list was called a gone container, so
    its process was ended as a worker that outlived its container. docker's daemon puts containers in neither a user's
    service manager nor a scope named by a short id: unknown, not gone."""
    proc = make_proc(tmp_path / "proc", [Proc(7777, ("python3",), cgroup, "python3", 1000, 990_001)])
    described = describe_process(app(7777), proc, [JUPYTER], JUPYTER_MAIN)
    assert (described["container_name"], described["container_running"]) == (None, None)


def test_container_is_matched_by_its_full_id_only(tmp_path: Path) -> None:
    """ATTACK (issue 15): a cgroup naming a short id was matched to the listed container whose id starts with it."""
    proc = make_proc(tmp_path / "proc", [Proc(51, ("python3",), f"0::/system.slice/docker-{JUPYTER_ID[:12]}.scope\n", "python3", 10, 5)])
    described = describe_process(app(51), proc, [JUPYTER], {JUPYTER_ID: 51})
    assert (described["container_name"], described["container_running"]) == (None, None)


def test_start_time_is_read_from_stat(tmp_path: Path) -> None:
    """Issue 15: the process's identity is (pid, start time): process_end compares it before signalling."""
    proc = make_proc(tmp_path / "proc", [Proc(51, ("python3",), "0::/system.slice/a.service\n", "python3", 10, 4_242_424), Proc(52, ("x",))])
    assert describe_process(app(51), proc, None)["start_time"] == 4242424
    assert describe_process(app(52), proc, None)["start_time"] is None  # no stat
    assert describe_process(app(53), proc, None)["start_time"] is None  # gone


SECRET_ARGV = (
    "python3",
    "-m",
    "vllm.entrypoints.openai.api_server",
    "--api-key",
    "sk-live-0123456789",
    "--hf-token=hf_AbCdEf0123",
    "--port",
    "8000",
    "--token",
    "tok-4567",
    "--password",
    "hunter2 with spaces",
    "HF_TOKEN=hf_env_secret",
    "OPENAI_API_KEY=sk-env-key",
    "AWS_SECRET=aws-secret-value",
    "DB_PASSWORD=db-pass-value",
    "--redis-password=r3d1s-value",
    "sh -c 'vllm serve model --api-key sk-in-shell --max-num-batched-tokens 8192'",
    "--max-num-batched-tokens",
    "8192",
    "--tokenizer",
    "Qwen/Qwen3",
)
SECRETS = ("sk-live-0123456789", "hf_AbCdEf0123", "tok-4567", "hunter2", "hf_env_secret", "sk-env-key", "aws-secret-value", "db-pass-value", "r3d1s-value")


def test_secret_flag_values_are_redacted(tmp_path: Path) -> None:
    """ATTACK (issue 15): gpu_info returned an old stack's --api-key sk-... (and tokens, passwords) into Ansible's output."""
    proc = make_proc(tmp_path / "proc", [Proc(61, SECRET_ARGV, "0::/system.slice/vllm-old.service\n", "python3", 10, 7)])
    described = describe_process(app(61), proc, None)
    text = json.dumps(described)
    leaked = [secret for secret in (*SECRETS, "sk-in-shell") if secret in text]
    assert leaked == [], described["cmdline"]
    assert described["cmdline"] == (
        "python3 -m vllm.entrypoints.openai.api_server --api-key ******** --hf-token=******** --port 8000 --token ******** "
        "--password ******** HF_TOKEN=******** OPENAI_API_KEY=******** AWS_SECRET=******** DB_PASSWORD=******** "
        "--redis-password=******** sh -c 'vllm serve model --api-key ******** --max-num-batched-tokens 8192' "
        "--max-num-batched-tokens 8192 --tokenizer Qwen/Qwen3"
    )


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

    def main_pids(ids: list[str]) -> dict[str, int]:
        calls.append("docker container inspect " + " ".join(ids))
        return JUPYTER_MAIN

    report = collect(run, "/usr/bin/nvidia-smi", gb10_proc, containers, top_count=2, main_pids=main_pids)
    assert calls == ["--query-gpu", "--query-compute-apps", "docker ps", f"docker container inspect {JUPYTER_ID}"]
    assert report["processes"][2]["container_running"] is True
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
