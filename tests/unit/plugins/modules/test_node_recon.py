# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests for the node_recon module: main() over fake /proc, /sys, os-release and venvs, commands mocked."""

from __future__ import annotations

import json
import platform
import typing as t
from pathlib import Path
from unittest.mock import MagicMock, patch

import pytest
from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.testing import patch_module_args
from ansible_collections.sparkops.inference.plugins.module_utils._docker_cli import PS_ARGS
from ansible_collections.sparkops.inference.plugins.module_utils._node_recon import SYSTEMCTL_ACTIVE, SYSTEMCTL_ENABLED
from ansible_collections.sparkops.inference.plugins.module_utils._nvidia_smi import query_args
from ansible_collections.sparkops.inference.plugins.module_utils._roce import IP_ADDR
from ansible_collections.sparkops.inference.plugins.module_utils._version_drift import COMPONENTS
from ansible_collections.sparkops.inference.plugins.modules import node_recon
from module_main import run_main
from proc_tree import GB10_PROCS, JUPYTER_ID, fixture_text, make_proc
from sysfs_tree import materialise as make_sysfs

FABRIC_IP = "192.168.200.11"
BINS = {"nvidia-smi": "/usr/bin/nvidia-smi", "docker": "/usr/bin/docker", "systemctl": "/usr/bin/systemctl", "ip": "/usr/sbin/ip"}
ADDRESSES = {"lo": ["127.0.0.1"], "enP7s7": ["10.0.0.5"], "enp1s0f1np1": [FABRIC_IP], "enP2p1s0f1np1": ["192.168.201.11"]}
IP_JSON = json.dumps([{"ifname": name, "addr_info": [{"family": "inet", "local": a, "prefixlen": 24} for a in addrs]} for name, addrs in ADDRESSES.items()])
DOCKER_PS = json.dumps({"ID": JUPYTER_ID, "Names": "jupyter", "Image": "nvcr.io/nvidia/pytorch:25.09-py3", "State": "running", "Status": "Up 2 hours"})
ANSWERS: dict[tuple[str, ...], tuple[int, str, str]] = {
    tuple(query_args("gpu")): (0, fixture_text("gb10_query_gpu_csv.txt"), ""),
    (): (0, fixture_text("gb10_table.txt"), ""),
    tuple(query_args("compute-apps")): (0, fixture_text("gb10_apps_busy.txt"), ""),
    PS_ARGS: (0, DOCKER_PS + "\n", ""),
    IP_ADDR: (0, IP_JSON, ""),
    SYSTEMCTL_ENABLED: (0, "vllm-cluster.service enabled enabled\nssh.service enabled enabled\n", ""),
    SYSTEMCTL_ACTIVE: (0, "vllm-cluster.service loaded active running vLLM\n", ""),
}


class Run(t.NamedTuple):
    result: dict[str, t.Any]
    run_command: MagicMock


def run_module(args: dict[str, t.Any], capsys: pytest.CaptureFixture[str], bins: dict[str, str] | None = None) -> Run:
    """Run main(); commands are answered from ANSWERS (by argv without the command), binaries found from ``bins``."""
    found = BINS if bins is None else bins

    def run_command(argv: list[str], **_kwargs: t.Any) -> tuple[int, str, str]:
        key = tuple(argv[1:])
        if key not in ANSWERS:
            raise AssertionError(f"unexpected command {argv}")
        return ANSWERS[key]

    return Run(*run_main(node_recon.main, args, capsys, found, run_command))


@pytest.fixture
def host(tmp_path: Path) -> dict[str, t.Any]:
    """Module arguments over a GB10 head's fake trees: /proc, /sys (both halves of the CX-7 port), os-release, a venv."""
    proc = make_proc(tmp_path / "proc", GB10_PROCS, fixture_text("gb10_meminfo.txt"))
    sysfs = make_sysfs("both_halves", tmp_path)
    (sysfs / "class" / "net" / "enp1s0f1np1" / "speed").write_text("200000\n", encoding="utf-8")
    (tmp_path / "os-release").write_text('ID=ubuntu\nVERSION_ID="24.04"\nPRETTY_NAME="Ubuntu 24.04.3 LTS"\n', encoding="utf-8")
    site = tmp_path / "venv" / "lib" / "python3.12" / "site-packages"
    for directory, name, version in (("vllm-0.30.0.dist-info", "vllm", "0.30.0"), ("nvidia_nccl_cu12-2.27.3.dist-info", "nvidia-nccl-cu12", "2.27.3")):
        (site / directory).mkdir(parents=True)
        (site / directory / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n\n", encoding="utf-8")
    (tmp_path / "home").mkdir()
    return {
        "fabric_ip": FABRIC_IP,
        "model_dir": str(tmp_path / "home" / "hub"),
        "venvs": [str(tmp_path / "venv"), str(tmp_path / "nothere")],
        "proc_root": str(proc),
        "sys_root": str(sysfs),
        "os_release": str(tmp_path / "os-release"),
        "top_processes": 2,
    }


def test_gb10_head(host: dict[str, t.Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    result, run_command = run_module(host, capsys)
    assert not result.get("failed"), result
    assert result["changed"] is False
    recon = result["recon"]
    assert recon["os"] == {"id": "ubuntu", "version_id": "24.04", "pretty_name": "Ubuntu 24.04.3 LTS"}
    assert (recon["architecture"], recon["kernel"]) == (platform.machine(), platform.release())
    assert recon["gpu"] == {"driver": "580.95.05", "cuda": "13.0", "names": ["NVIDIA GB10"], "count": 1, "compute_caps": ["12.1"]}
    fabric = recon["fabric"]
    assert (fabric["ip"], fabric["interface"], fabric["state"], fabric["speed_mbps"], fabric["mtu"]) == (FABRIC_IP, "enp1s0f1np1", "up", 200000, 9000)
    assert [(d["name"], d["state"]) for d in fabric["rdma_devices"]] == [("rocep1s0f1", "ACTIVE"), ("roceP2p1s0f1", "ACTIVE")]
    assert (recon["memory"]["total_bytes"], recon["memory"]["available_bytes"]) == (124610 * 2**20, 115787 * 2**20)
    assert [p["pid"] for p in recon["memory"]["top_processes"]] == [118211, 114687]
    assert [(p["pid"], p["container_name"]) for p in recon["memory"]["gpu_processes"]][2] == (114687, "jupyter")
    assert (recon["disk"]["path"], recon["disk"]["measured_path"]) == (host["model_dir"], str(tmp_path / "home"))
    assert recon["inference"]["enabled_units"] == [{"unit": "vllm-cluster.service", "enabled": True, "active": True}]
    assert recon["inference"]["containers"] == [{"name": "jupyter", "image": "nvcr.io/nvidia/pytorch:25.09-py3", "state": "running", "inference": False}]
    assert list(recon["versions"]) == list(COMPONENTS)
    assert recon["versions"] == {
        "kernel": platform.release(),
        "driver": "580.95.05",
        "cuda": "13.0",
        "nccl": "2.27.3",
        "python": platform.python_version(),
        "ray": None,
        "vllm": "0.30.0",
    }
    assert recon["notes"] == [
        f"disk: {host['model_dir']} does not exist yet; measured {tmp_path / 'home'}",
        f"versions: venv {tmp_path / 'nothere'} does not exist",
    ]
    commands = [c.args[0] for c in run_command.call_args_list]
    assert [argv[0] for argv in commands] == ["/usr/bin/docker", *["/usr/bin/nvidia-smi"] * 3, "/usr/sbin/ip", "/usr/bin/systemctl", "/usr/bin/systemctl"]
    assert all(c.kwargs == {"handle_exceptions": False} for c in run_command.call_args_list)


def test_check_mode(host: dict[str, t.Any], capsys: pytest.CaptureFixture[str]) -> None:
    result = run_module({**host, "_ansible_check_mode": True}, capsys).result
    assert not result.get("failed"), result
    assert result["recon"]["gpu"]["count"] == 1


def test_missing_nvidia_smi_and_docker(host: dict[str, t.Any], capsys: pytest.CaptureFixture[str]) -> None:
    bins = {"systemctl": "/usr/bin/systemctl", "ip": "/usr/sbin/ip"}
    result, run_command = run_module(host, capsys, bins)
    assert not result.get("failed"), result
    recon = result["recon"]
    assert recon["gpu"] == {"driver": None, "cuda": None, "names": [], "count": None, "compute_caps": []}
    assert (recon["versions"]["driver"], recon["versions"]["cuda"]) == (None, None)
    assert (recon["memory"]["gpu_processes"], recon["inference"]["containers"]) == ([], [])
    assert "gpu: nvidia-smi not found (no NVIDIA driver?): driver, CUDA and GPUs not reported" in recon["notes"]
    assert "inference: docker not found: containers not reported" in recon["notes"]
    assert {c.args[0][0] for c in run_command.call_args_list} == {"/usr/bin/systemctl", "/usr/sbin/ip"}


def test_nvidia_smi_path_not_there(host: dict[str, t.Any], capsys: pytest.CaptureFixture[str]) -> None:
    """A path given that cannot run is a note (the run wrapper turns the OSError into rc 127), not a failure."""

    def run_command(argv: list[str], **_kwargs: t.Any) -> tuple[int, str, str]:
        if argv[0] == "/opt/nv/nvidia-smi":
            raise FileNotFoundError(2, "No such file or directory")
        return ANSWERS[tuple(argv[1:])]

    with (
        patch_module_args({**host, "nvidia_smi": "/opt/nv/nvidia-smi"}),
        patch.object(AnsibleModule, "get_bin_path", MagicMock(side_effect=lambda name, *_a, **_k: BINS.get(name))),
        patch.object(AnsibleModule, "run_command", MagicMock(side_effect=run_command)),
        pytest.raises(SystemExit),
    ):
        node_recon.main()
    result = json.loads(capsys.readouterr().out)
    assert not result.get("failed"), result
    assert result["recon"]["gpu"]["driver"] is None
    assert "gpu: /opt/nv/nvidia-smi --query-gpu failed (rc 127): cannot run /opt/nv/nvidia-smi: No such file or directory" in result["recon"]["notes"]


def test_fabric_ip_on_no_interface(host: dict[str, t.Any], capsys: pytest.CaptureFixture[str]) -> None:
    result = run_module({**host, "fabric_ip": "192.168.200.99"}, capsys).result
    assert not result.get("failed"), result
    assert result["recon"]["fabric"]["interface"] is None
    assert any(note.startswith("fabric: no interface holds 192.168.200.99;") for note in result["recon"]["notes"])


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"fabric_ip": "fabric"}, "fabric_ip 'fabric' is not an IPv4 address"),
        ({"top_processes": -2}, "top_processes must be 0 or more, not -2"),
    ],
)
def test_bad_options_fail(host: dict[str, t.Any], capsys: pytest.CaptureFixture[str], changes: dict[str, t.Any], message: str) -> None:
    result, run_command = run_module({**host, **changes}, capsys)
    assert result["failed"] is True
    assert result["msg"].startswith(message)
    run_command.assert_not_called()


def test_required_options(capsys: pytest.CaptureFixture[str]) -> None:
    result = run_module({"fabric_ip": FABRIC_IP}, capsys).result
    assert result["failed"] is True
    assert result["msg"] == "missing required arguments: model_dir"


def test_the_fabric_env_option_says_which_nccl_the_units_load(host: dict[str, t.Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lib = tmp_path / "lib" / "libnccl.so.2.28.3"
    lib.parent.mkdir()
    lib.write_bytes(b"")
    (lib.parent / "libnccl.so.2").symlink_to(lib.name)
    env_file = tmp_path / "fabric.env"
    env_file.write_text(f"NCCL_SOCKET_IFNAME=enp1s0f1np1\nVLLM_NCCL_SO_PATH={lib.parent / 'libnccl.so.2'}\n", encoding="utf-8")
    result = run_module({**host, "fabric_env": str(env_file)}, capsys).result
    assert result["recon"]["fabric"]["nccl_library"] == {"library": "system", "path": str(lib.parent / "libnccl.so.2"), "version": "2.28.3"}
    missing = run_module({**host, "fabric_env": str(tmp_path / "none.env")}, capsys).result
    assert missing["recon"]["fabric"]["nccl_library"] == {"library": "bundled", "path": None, "version": None}
