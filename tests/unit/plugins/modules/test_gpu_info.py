# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests for the gpu_info module: main() over a fake /proc, nvidia-smi and docker mocked with the fixtures.

The fixtures were captured with the fields in another order than the module asks for; the parsers read the header,
so the module's result must not depend on it.
"""

from __future__ import annotations

import json
import typing as t
from pathlib import Path
from unittest.mock import MagicMock, call, patch

import pytest
from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.testing import patch_module_args
from ansible_collections.sparkops.inference.plugins.module_utils._docker_cli import PS_ARGS
from ansible_collections.sparkops.inference.plugins.module_utils._nvidia_smi import query_args
from ansible_collections.sparkops.inference.plugins.modules import gpu_info
from proc_tree import GB10_PROCS, JUPYTER_ID, Proc, fixture_text, make_proc

NVSMI = "/usr/bin/nvidia-smi"
DOCKER = "/usr/bin/docker"
DOCKER_PS = "\n".join(
    json.dumps(line)
    for line in (
        {"ID": JUPYTER_ID, "Names": "jupyter", "Image": "nvcr.io/nvidia/pytorch:25.09-py3", "State": "running", "Status": "Up 2 hours"},
        {"ID": "7" * 64, "Names": "old_vllm", "Image": "vllm/vllm-openai:v0.10.1", "State": "exited", "Status": "Exited (137) 3 days ago"},
    )
)


INSPECT_ARGS = ("container", "inspect")
# What `docker container inspect` prints for them (the part gpu_info reads): State.Pid of the main process, 0 when stopped.
INSPECTED = {
    JUPYTER_ID: {"Id": JUPYTER_ID, "Name": "/jupyter", "State": {"Status": "running", "Running": True, "Pid": 114687}},
    "7" * 64: {"Id": "7" * 64, "Name": "/old_vllm", "State": {"Status": "exited", "Running": False, "Pid": 0}},
}


def inspect_answer(ids: list[str]) -> tuple[int, str, str]:
    """docker container inspect: the JSON array of the containers found, an error line for each missing one (rc 1)."""
    found = [INSPECTED[i] for i in ids if i in INSPECTED]
    missing = "".join(f"Error response from daemon: No such container: {i}\n" for i in ids if i not in INSPECTED)
    return (1 if missing else 0, json.dumps(found, indent=4) + "\n", missing)


class Run(t.NamedTuple):
    result: dict[str, t.Any]
    warnings: list[str]
    run_command: MagicMock
    get_bin_path: MagicMock


def commands(
    gpu: str, apps: str, docker: tuple[int, str, str] = (0, DOCKER_PS, ""), nvsmi_rc: tuple[int, str] = (0, "")
) -> t.Callable[[list[str]], tuple[int, str, str]]:
    """A run_command stand-in answering nvidia-smi's two queries and docker ps."""

    def run_command(argv: list[str]) -> tuple[int, str, str]:
        if argv[1:] == query_args("gpu"):
            return (nvsmi_rc[0], gpu, nvsmi_rc[1])
        if argv[1:] == query_args("compute-apps"):
            return (0, apps, "")
        if argv[1:] == list(PS_ARGS):
            return docker
        if tuple(argv[1:3]) == INSPECT_ARGS:
            return inspect_answer(argv[3:])
        raise AssertionError(f"unexpected command {argv}")

    return run_command


def run_module(
    args: dict[str, t.Any],
    capsys: pytest.CaptureFixture[str],
    run_command: t.Callable[[list[str]], tuple[int, str, str]],
    bins: dict[str, str | None] | None = None,
) -> Run:
    """Run main() and return its JSON result, its warnings and the mocks (AnsibleModule.warn recorded, as in test_roce_info)."""
    found = {"nvidia-smi": NVSMI, "docker": DOCKER} if bins is None else bins
    get_bin_path = MagicMock(side_effect=lambda name, *_args, **_kwargs: found.get(name))
    runner = MagicMock(side_effect=run_command)
    warn = MagicMock()
    with (
        patch_module_args(args),
        patch.object(AnsibleModule, "get_bin_path", get_bin_path),
        patch.object(AnsibleModule, "run_command", runner),
        patch.object(AnsibleModule, "warn", warn),
        pytest.raises(SystemExit),
    ):
        gpu_info.main()
    return Run(json.loads(capsys.readouterr().out), [c.args[0] for c in warn.call_args_list], runner, get_bin_path)


@pytest.fixture
def gb10_proc(tmp_path: Path) -> Path:
    return make_proc(tmp_path / "proc", GB10_PROCS, fixture_text("gb10_meminfo.txt"))


@pytest.fixture
def h200_proc(tmp_path: Path) -> Path:
    torch = Proc(442, ("python3", "-c", "import torch"), fixture_text("h200_proc_cgroup.txt"), "python3", 22_000_000)
    return make_proc(tmp_path / "proc", [torch], fixture_text("h200_proc_meminfo.txt"))


GB10 = commands(fixture_text("gb10_query_gpu_csv.txt"), fixture_text("gb10_apps_busy.txt"))
H200 = commands(fixture_text("h200_query_gpu_nounits.txt"), fixture_text("h200_apps_busy.txt"))


def test_gb10(gb10_proc: Path, capsys: pytest.CaptureFixture[str]) -> None:
    result, warnings, run_command, _bins = run_module({"proc_root": str(gb10_proc)}, capsys, GB10)
    assert not result.get("failed"), result
    assert run_command.call_args_list == [
        call([NVSMI, *query_args("gpu")]),
        call([NVSMI, *query_args("compute-apps")]),
        call([DOCKER, *PS_ARGS]),
        call([DOCKER, *INSPECT_ARGS, JUPYTER_ID]),
    ]
    assert (result["changed"], warnings, result["docker_available"]) == (False, [], True)
    assert result["unified_memory"] is True
    assert (result["total_mib"], result["available_mib"], result["used_mib"]) == (124610, 115787, 106371)
    assert result["gpus"][0]["name"] == "NVIDIA GB10"
    assert result["gpus"][0]["memory_total_mib"] is None
    assert [(p["pid"], p["name"], p["unit"]) for p in result["processes"]] == [
        (2741, "/usr/lib/xorg/Xorg", "session-c1.scope"),
        (3046, "/usr/bin/gnome-shell", "session-c1.scope"),
        (114687, "/usr/local/bin/python", f"docker-{JUPYTER_ID}.scope"),
        (118211, "VLLM::EngineCore", "vllm-cluster.service"),
    ]
    jupyter = result["processes"][2]
    assert (jupyter["container_name"], jupyter["container_image"], jupyter["container_running"]) == ("jupyter", "nvcr.io/nvidia/pytorch:25.09-py3", True)
    assert jupyter["container_confirmed"] is True
    assert result["processes"][3]["container_running"] is None
    assert [p["pid"] for p in result["top_memory"]] == [118211, 114687, 3046, 2741, 900]


def test_gb10_top_processes_and_check_mode(gb10_proc: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = {"proc_root": str(gb10_proc), "top_processes": 1, "_ansible_check_mode": True}
    result = run_module(args, capsys, GB10).result
    assert not result.get("failed"), result
    assert [(p["pid"], p["rss_mib"]) for p in result["top_memory"]] == [(118211, 4394)]


def test_h200_without_docker(h200_proc: Path, capsys: pytest.CaptureFixture[str]) -> None:
    result, warnings, run_command, _bins = run_module({"proc_root": str(h200_proc)}, capsys, H200, {"nvidia-smi": NVSMI, "docker": None})
    assert not result.get("failed"), result
    assert run_command.call_count == 2  # no docker ps
    assert (result["docker_available"], warnings) == (False, [])
    assert (result["unified_memory"], result["total_mib"], result["available_mib"], result["used_mib"]) == (False, 143771, 143156, 21090)
    assert result["meminfo"]["available_mib"] == 127927
    (process,) = result["processes"]
    assert (process["pid"], process["name"], process["used_mib"], process["cmdline"]) == (442, "python3", 21090, "python3 -c import torch")
    assert (process["cgroup"], process["unit"], process["container_running"]) == ("/process_api/f95119ecc6bc23d209df5f906f600ee9", None, None)


def test_h200_idle(h200_proc: Path, capsys: pytest.CaptureFixture[str]) -> None:
    idle = commands(fixture_text("h200_query_gpu_csv.txt"), fixture_text("h200_apps_idle.txt"))
    result = run_module({"proc_root": str(h200_proc), "top_processes": 0}, capsys, idle).result
    assert not result.get("failed"), result
    assert (result["processes"], result["used_mib"], result["top_memory"]) == ([], 0, [])


def test_nvidia_smi_missing(h200_proc: Path, capsys: pytest.CaptureFixture[str]) -> None:
    result, _warnings, run_command, _bins = run_module({"proc_root": str(h200_proc)}, capsys, H200, {"docker": DOCKER})
    assert result["failed"] is True
    assert result["msg"] == "nvidia-smi not found on this host: is the NVIDIA driver installed? (set nvidia_smi to its path)"
    run_command.assert_not_called()


def test_nvidia_smi_path_given(h200_proc: Path, capsys: pytest.CaptureFixture[str]) -> None:
    result, _warnings, run_command, get_bin_path = run_module({"proc_root": str(h200_proc), "nvidia_smi": "/opt/nv/nvidia-smi"}, capsys, H200, {"docker": None})
    assert not result.get("failed"), result
    assert run_command.call_args_list[0] == call(["/opt/nv/nvidia-smi", *query_args("gpu")])
    assert [c.args[0] for c in get_bin_path.call_args_list] == ["docker"]


def test_nvidia_smi_fails(h200_proc: Path, capsys: pytest.CaptureFixture[str]) -> None:
    stderr = "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA driver is installed and running.\n"
    failing = commands("", "", nvsmi_rc=(9, stderr))
    result = run_module({"proc_root": str(h200_proc)}, capsys, failing).result
    assert result["failed"] is True
    assert result["rc"] == 9
    assert result["msg"] == f"{NVSMI} --query-gpu failed (rc 9): {stderr.strip()}"


def test_nvidia_smi_error_on_stdout(h200_proc: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """nvidia-smi prints a bad query on stdout (h200_bad_field.txt, rc 2): the message quotes it when stderr is empty."""
    printed = "".join(line for line in fixture_text("h200_bad_field.txt").splitlines(keepends=True) if not line.startswith("#"))

    def run_command(argv: list[str]) -> tuple[int, str, str]:
        return (2, printed, "")

    result = run_module({"proc_root": str(h200_proc)}, capsys, run_command).result
    assert result["failed"] is True
    assert result["msg"] == f'{NVSMI} --query-gpu failed (rc 2): Field "nosuch.field" is not a valid field to query.'


def test_nvidia_smi_unreadable_output(h200_proc: Path, capsys: pytest.CaptureFixture[str]) -> None:
    broken = commands(fixture_text("h200_query_gpu_nounits.txt"), "pid, process_name, used_gpu_memory [MiB]\n442, python3\n")
    result = run_module({"proc_root": str(h200_proc)}, capsys, broken).result
    assert result["failed"] is True
    assert result["msg"] == "nvidia-smi --query-compute-apps printed 2 fields, expected 3: '442, python3'"


def test_meminfo_missing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    result = run_module({"proc_root": str(make_proc(tmp_path / "proc", []))}, capsys, H200).result
    assert result["failed"] is True
    assert result["msg"] == "/proc/meminfo has no MemTotal or MemAvailable (kernel older than 3.14?)"


def test_docker_ps_fails_is_a_warning(gb10_proc: Path, capsys: pytest.CaptureFixture[str]) -> None:
    no_daemon = (1, "", "Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?\n")
    run_command = commands(fixture_text("gb10_query_gpu_csv.txt"), fixture_text("gb10_apps_busy.txt"), docker=no_daemon)
    result, warnings, _runner, _bins = run_module({"proc_root": str(gb10_proc)}, capsys, run_command)
    assert not result.get("failed"), result
    assert result["docker_available"] is False
    assert warnings == [
        "container names not reported: docker ps -a failed (rc 1): Cannot connect to the Docker daemon at unix:///var/run/docker.sock. "
        "Is the docker daemon running?"
    ]
    jupyter = result["processes"][2]
    assert (jupyter["container_id"], jupyter["container_name"], jupyter["container_running"]) == (JUPYTER_ID, None, None)


def test_container_gone(gb10_proc: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The jupyter container was removed but its python lives on: docker ps no longer lists it."""
    only_old = "\n".join(line for line in DOCKER_PS.splitlines() if JUPYTER_ID not in line)
    run_command = commands(fixture_text("gb10_query_gpu_csv.txt"), fixture_text("gb10_apps_busy.txt"), docker=(0, only_old, ""))
    result, _warnings, runner, _bins = run_module({"proc_root": str(gb10_proc), "docker_cli": "/opt/docker"}, capsys, run_command)
    assert not result.get("failed"), result
    assert runner.call_args_list[-1] == call(["/opt/docker", *PS_ARGS])
    jupyter = result["processes"][2]
    assert (jupyter["container_id"], jupyter["container_name"], jupyter["container_running"]) == (JUPYTER_ID, None, False)


USER_ID = "e" * 64


def test_user_made_cgroups_are_not_containers(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """ATTACK (issue 15): user 1000 runs GPU processes in cgroups of their own delegated subtree named like docker's:
    one like the jupyter container's scope (the plan then removed jupyter), one like a container docker does not list
    (the plan then ended it as a worker that outlived its container). docker's listing and docker container inspect
    (jupyter's main process is in the system's scope) decide: neither is a container of docker's."""
    delegated = "0::/user.slice/user-1000.slice/user@1000.service/app.slice"
    procs = [
        *GB10_PROCS,
        Proc(7777, ("python3", "mine.py"), f"{delegated}/docker-{JUPYTER_ID}.scope\n", "python3", 1000, 990_001),
        Proc(7778, ("python3", "mine.py"), f"{delegated}/docker-{USER_ID}.scope\n", "python3", 1000, 990_002),
    ]
    proc = make_proc(tmp_path / "proc", procs, fixture_text("gb10_meminfo.txt"))
    gpu = fixture_text("gb10_query_gpu_csv.txt")
    apps = fixture_text("gb10_apps_busy.txt") + "".join(
        f"{pid}, python3, 512 MiB, GPU-2dee1e25-b3b5-007e-2b55-79f2d0f2ebe5, 0000000F:01:00.0\n" for pid in (7777, 7778)
    )
    result, warnings, runner, _bins = run_module({"proc_root": str(proc)}, capsys, commands(gpu, apps))
    assert not result.get("failed"), result
    by_pid = {p["pid"]: p for p in result["processes"]}
    assert (by_pid[114687]["container_name"], by_pid[114687]["container_running"]) == ("jupyter", True)
    for pid in (7777, 7778):
        assert by_pid[pid]["container_runtime"] == "docker"
        assert (by_pid[pid]["container_name"], by_pid[pid]["container_running"]) == (None, None), by_pid[pid]
    assert warnings == []


def test_docker_inspect_failing_leaves_containers_unconfirmed(gb10_proc: Path, capsys: pytest.CaptureFixture[str]) -> None:
    def run_command(argv: list[str]) -> tuple[int, str, str]:
        if tuple(argv[1:3]) == INSPECT_ARGS:
            return (1, "", "permission denied while trying to connect to the Docker daemon socket\n")
        return GB10(argv)

    result, warnings, _runner, _bins = run_module({"proc_root": str(gb10_proc)}, capsys, run_command)
    assert not result.get("failed"), result
    jupyter = result["processes"][2]
    assert (jupyter["container_name"], jupyter["container_running"], jupyter["container_confirmed"]) == (None, None, False)
    assert warnings == [
        "containers not confirmed (a process is attributed to a container only when docker names its main process): "
        "docker container inspect failed (rc 1): permission denied while trying to connect to the Docker daemon socket"
    ]


def test_redacted_command_lines_in_the_result(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """ATTACK (issue 15): the old stack's API key and Hub token were in gpu_info's result (and so in Ansible's output)."""
    argv = ("python3", "-m", "vllm.entrypoints.openai.api_server", "--api-key", "sk-live-0123456789", "--hf-token", "hf_AbCdEf0123")
    procs = [Proc(118211, argv, "0::/system.slice/vllm-cluster.service\n", "python3", 1000, 5)]
    proc = make_proc(tmp_path / "proc", procs, fixture_text("gb10_meminfo.txt"))
    result = run_module({"proc_root": str(proc)}, capsys, GB10).result
    assert not result.get("failed"), result
    text = json.dumps(result)
    assert "sk-live-0123456789" not in text and "hf_AbCdEf0123" not in text
    assert result["processes"][3]["cmdline"] == "python3 -m vllm.entrypoints.openai.api_server --api-key ******** --hf-token ********"
