# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests for the _node_recon module util, over fake procfs, sysfs and venv trees and canned command outputs."""

from __future__ import annotations

import json
import os
import typing as t
from pathlib import Path

import pytest
from ansible_collections.sparkops.inference.plugins.module_utils._docker_cli import PS_ARGS, Container
from ansible_collections.sparkops.inference.plugins.module_utils._node_recon import (
    MIB,
    SYSTEMCTL_ACTIVE,
    SYSTEMCTL_ENABLED,
    Host,
    Options,
    ReconError,
    Sources,
    check_options,
    container_entries,
    disk_info,
    dist_info,
    fabric_info,
    gpu_info,
    installed,
    ip_addresses,
    matches,
    memory_info,
    nearest_existing,
    normalise,
    os_info,
    package_version,
    parse_cuda_version,
    parse_os_release,
    parse_systemctl_units,
    recon,
    systemd_units,
    unit_entries,
    venv_packages,
    versions,
)
from ansible_collections.sparkops.inference.plugins.module_utils._nvidia_smi import query_args
from ansible_collections.sparkops.inference.plugins.module_utils._roce import IP_ADDR
from ansible_collections.sparkops.inference.plugins.module_utils._version_drift import COMPONENTS
from proc_tree import GB10_PROCS, JUPYTER_ID, fixture_text, make_proc
from sysfs_tree import materialise as make_sysfs

FABRIC_IP = "192.168.200.11"
TWIN_IP = "192.168.201.11"
ADDRESSES: dict[str, list[str]] = {"lo": ["127.0.0.1"], "enP7s7": ["10.0.0.5"], "enp1s0f1np1": [FABRIC_IP], "enP2p1s0f1np1": [TWIN_IP]}
NVSMI = "/usr/bin/nvidia-smi"
JUPYTER = Container(id=JUPYTER_ID, names=("jupyter",), image="nvcr.io/nvidia/pytorch:25.09-py3", state="running")

OS_RELEASE = """PRETTY_NAME="Ubuntu 24.04.3 LTS"
NAME="Ubuntu"
VERSION_ID="24.04"
VERSION="24.04.3 LTS (Noble Numbat)"
# a comment
ID=ubuntu
ID_LIKE=debian
HOME_URL='https://www.ubuntu.com/'
"""

# systemd 255 (Ubuntu 24.04): list-unit-files prints UNIT FILE, STATE, PRESET; list-units UNIT, LOAD, ACTIVE, SUB, DESCRIPTION.
UNIT_FILES = """ssh.service                            enabled enabled
vllm-cluster.service                   enabled enabled
ray-head.service                       enabled enabled
xray.service                           enabled enabled
docker.socket                          enabled enabled
"""
ACTIVE_UNITS = """docker.service                 loaded active running Docker Application Container Engine
ollama.service                 loaded active running Ollama Service
ray-head.service               loaded active running Ray head
sparkops-vllm-rank@0.service   loaded active running vLLM rank 0
● jupyter.service              loaded active running JupyterLab
-.mount                        loaded active mounted Root Mount
"""


def runner(answers: dict[tuple[str, ...], tuple[int, str, str]]) -> tuple[t.Callable[[list[str]], tuple[int, str, str]], list[list[str]]]:
    """A run stand-in answering argv (without the command itself) from ``answers``, and the argvs it got."""
    calls: list[list[str]] = []

    def run(argv: list[str]) -> tuple[int, str, str]:
        calls.append(argv)
        key = tuple(argv[1:])
        if key not in answers:
            raise AssertionError(f"unexpected command {argv}")
        return answers[key]

    return run, calls


GB10_ANSWERS: dict[tuple[str, ...], tuple[int, str, str]] = {
    tuple(query_args("gpu")): (0, fixture_text("gb10_query_gpu_csv.txt"), ""),
    (): (0, fixture_text("gb10_table.txt"), ""),
    tuple(query_args("compute-apps")): (0, fixture_text("gb10_apps_busy.txt"), ""),
}


@pytest.fixture
def gb10_proc(tmp_path: Path) -> Path:
    return make_proc(tmp_path / "proc", GB10_PROCS, fixture_text("gb10_meminfo.txt"))


def write_dist(site: Path, directory: str, name: str | None, version: str | None) -> None:
    """A ``*.dist-info`` directory; METADATA only when ``name`` is given."""
    dist = site / directory
    dist.mkdir(parents=True)
    if name is not None:
        body = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\nSummary: x\n\nName: not-a-header\n"
        (dist / "METADATA").write_text(body, encoding="utf-8")


@pytest.fixture
def venvs(tmp_path: Path) -> tuple[Path, Path]:
    """A Ray venv (ray, vllm, NCCL for CUDA 12, as pip names the directories) and an hf venv (another ray, NCCL cu13)."""
    ray = tmp_path / "opt" / "ray"
    site = ray / "lib" / "python3.12" / "site-packages"
    write_dist(site, "nvidia_nccl_cu12-2.27.3.dist-info", "nvidia-nccl-cu12", "2.27.3")
    write_dist(site, "ray-2.49.1.dist-info", "ray", "2.49.1")
    write_dist(site, "vllm-0.30.0.dist-info", None, None)  # no METADATA: name and version from the directory
    write_dist(site, "Jinja2-3.1.6.dist-info", "Jinja2", "3.1.6")
    (site / "ray").mkdir()
    hf = tmp_path / "opt" / "hf"
    hf_site = hf / "lib" / "python3.12" / "site-packages"
    write_dist(hf_site, "ray-2.40.0.dist-info", "ray", "2.40.0")
    write_dist(hf_site, "nvidia_nccl_cu13-2.28.3.dist-info", "nvidia-nccl-cu13", "2.28.3")
    write_dist(hf_site, "huggingface_hub-0.35.0.dist-info", "huggingface_hub", "0.35.0")
    return ray, hf


# ---------------------------------------------------------------------------------------------------------------
# Options and OS


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"fabric_ip": "192.168.200.11/24"}, "fabric_ip '192.168.200.11/24' is not an IPv4 address"),
        ({"fabric_ip": "spark-head"}, "fabric_ip 'spark-head' is not an IPv4 address"),
        ({"model_dir": "hub"}, "model_dir 'hub' is not an absolute path"),
        ({"top_processes": -1}, "top_processes must be 0 or more, not -1"),
        ({"venvs": ("venv",)}, "venvs: 'venv' is not an absolute path"),
        ({"unit_patterns": ("vllm", " ")}, "unit_patterns holds an empty pattern"),
    ],
)
def test_bad_options(changes: dict[str, t.Any], message: str) -> None:
    options = Options(**{"fabric_ip": FABRIC_IP, "model_dir": "/root/.cache/huggingface/hub", **changes})
    with pytest.raises(ReconError) as caught:
        check_options(options)
    assert str(caught.value).startswith(message)


def test_parse_os_release() -> None:
    values = parse_os_release(OS_RELEASE)
    assert (values["id"], values["version_id"], values["pretty_name"]) == ("ubuntu", "24.04", "Ubuntu 24.04.3 LTS")
    assert values["home_url"] == "https://www.ubuntu.com/"
    assert "# a comment" not in values


def test_os_info(tmp_path: Path) -> None:
    (tmp_path / "os-release").write_text(OS_RELEASE, encoding="utf-8")
    notes: list[str] = []
    assert os_info(tmp_path / "os-release", notes) == {"id": "ubuntu", "version_id": "24.04", "pretty_name": "Ubuntu 24.04.3 LTS"}
    assert notes == []
    assert os_info(tmp_path / "absent", notes) == {"id": None, "version_id": None, "pretty_name": None}
    assert notes == [f"os: cannot read {tmp_path / 'absent'}"]


# ---------------------------------------------------------------------------------------------------------------
# GPU


def test_parse_cuda_version() -> None:
    assert parse_cuda_version(fixture_text("gb10_table.txt")) == "13.0"
    assert parse_cuda_version(fixture_text("h200_table_busy.txt")) == "13.0"
    assert parse_cuda_version("    CUDA Version                          : 12.9\n") == "12.9"  # nvidia-smi -q
    assert parse_cuda_version("NVIDIA-SMI has failed") is None


def test_gpu_gb10(gb10_proc: Path) -> None:
    run, calls = runner(GB10_ANSWERS)
    notes: list[str] = []
    section, processes = gpu_info(run, NVSMI, gb10_proc, [JUPYTER], notes)
    assert section == {"driver": "580.95.05", "cuda": "13.0", "names": ["NVIDIA GB10"], "count": 1, "compute_caps": ["12.1"]}
    assert notes == []
    assert calls == [[NVSMI, *query_args("gpu")], [NVSMI], [NVSMI, *query_args("compute-apps")]]
    assert processes == [
        {"pid": 2741, "name": "/usr/lib/xorg/Xorg", "used_mib": 18, "unit": "session-c1.scope", "container_name": None},
        {"pid": 3046, "name": "/usr/bin/gnome-shell", "used_mib": 6, "unit": "session-c1.scope", "container_name": None},
        {"pid": 114687, "name": "/usr/local/bin/python", "used_mib": 19135, "unit": f"docker-{JUPYTER_ID}.scope", "container_name": "jupyter"},
        {"pid": 118211, "name": "VLLM::EngineCore", "used_mib": 87212, "unit": "vllm-cluster.service", "container_name": None},
    ]


def test_gpu_without_nvidia_smi(gb10_proc: Path) -> None:
    run, calls = runner({})
    notes: list[str] = []
    section, processes = gpu_info(run, None, gb10_proc, None, notes)
    assert section == {"driver": None, "cuda": None, "names": [], "count": None, "compute_caps": []}
    assert (processes, calls) == ([], [])
    assert notes == ["gpu: nvidia-smi not found (no NVIDIA driver?): driver, CUDA and GPUs not reported"]


def test_gpu_nvidia_smi_fails(gb10_proc: Path) -> None:
    stderr = "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n"
    run, calls = runner({tuple(query_args("gpu")): (9, "", stderr)})
    notes: list[str] = []
    section, processes = gpu_info(run, NVSMI, gb10_proc, None, notes)
    assert (section["driver"], section["count"], processes, len(calls)) == (None, None, [], 1)
    assert notes == [f"gpu: {NVSMI} --query-gpu failed (rc 9): {stderr.strip()}"]


def test_gpu_table_and_apps_fail_keep_the_gpu(gb10_proc: Path) -> None:
    answers = {**GB10_ANSWERS, (): (1, "", "boom\n"), tuple(query_args("compute-apps")): (2, "bad\nquery\n", "")}
    run, _calls = runner(answers)
    notes: list[str] = []
    section, processes = gpu_info(run, NVSMI, gb10_proc, None, notes)
    assert section == {"driver": "580.95.05", "cuda": None, "names": ["NVIDIA GB10"], "count": 1, "compute_caps": ["12.1"]}
    assert processes == []
    assert notes == [
        f"gpu: {NVSMI} failed (rc 1), CUDA version not reported: boom",
        f"gpu: {NVSMI} --query-compute-apps failed (rc 2), GPU processes not reported: bad | query",
    ]


# ---------------------------------------------------------------------------------------------------------------
# Fabric


def test_fabric_both_halves(tmp_path: Path) -> None:
    root = make_sysfs("both_halves", tmp_path)
    (root / "class" / "net" / "enp1s0f1np1" / "speed").write_text("200000\n", encoding="utf-8")
    notes: list[str] = []
    section = fabric_info(root, FABRIC_IP, ADDRESSES, notes)
    assert section == {
        "ip": FABRIC_IP,
        "interface": "enp1s0f1np1",
        "state": "up",
        "speed_mbps": 200000,
        "mtu": 9000,
        "gid_index": 3,
        "rdma_devices": [
            {"name": "rocep1s0f1", "port": 1, "state": "ACTIVE", "interface": "enp1s0f1np1"},
            {"name": "roceP2p1s0f1", "port": 1, "state": "ACTIVE", "interface": "enP2p1s0f1np1"},
        ],
    }
    assert notes == []


def test_fabric_link_down_notes(tmp_path: Path) -> None:
    root = make_sysfs("link_down", tmp_path)
    (root / "class" / "net" / "enp1s0f1np1" / "speed").write_text("-1\n", encoding="utf-8")
    notes: list[str] = []
    section = fabric_info(root, FABRIC_IP, {"enp1s0f1np1": [FABRIC_IP]}, notes)
    assert (section["interface"], section["state"], section["speed_mbps"]) == ("enp1s0f1np1", "down", None)
    assert notes == ["fabric: enp1s0f1np1 is not up (operstate down, carrier 0)", "fabric: rocep1s0f1 port 1 is DOWN, not ACTIVE"]


def test_fabric_ip_on_no_interface(tmp_path: Path) -> None:
    root = make_sysfs("single_port", tmp_path)
    notes: list[str] = []
    section = fabric_info(root, "192.168.200.99", ADDRESSES, notes)
    assert section == {"ip": "192.168.200.99", "interface": None, "state": None, "speed_mbps": None, "mtu": None, "gid_index": None, "rdma_devices": []}
    assert notes == [
        "fabric: no interface holds 192.168.200.99; interfaces with IPv4: enP2p1s0f1np1 (192.168.201.11), enP7s7 (10.0.0.5), "
        "enp1s0f1np1 (192.168.200.11), lo (127.0.0.1)"
    ]


def test_ip_addresses(tmp_path: Path) -> None:
    root = make_sysfs("single_port", tmp_path)
    ip_json = json.dumps([{"ifname": "lo", "addr_info": [{"family": "inet", "local": "127.0.0.1"}]}, {}])
    run, calls = runner({IP_ADDR: (0, ip_json, "")})
    notes: list[str] = []
    assert ip_addresses(run, "/usr/sbin/ip", root, notes) == {"lo": ["127.0.0.1"]}
    assert (calls, notes) == ([["/usr/sbin/ip", "-j", "-4", "addr", "show"]], [])
    assert ip_addresses(run, None, root, notes) == {"enp1s0f1np1": [FABRIC_IP]}
    assert notes == ["fabric: ip not found; IPv4 addresses taken from the RoCE v2 GIDs in sysfs"]
    failing, _calls = runner({IP_ADDR: (1, "", "Cannot open netlink socket\n")})
    notes.clear()
    assert ip_addresses(failing, "/usr/sbin/ip", root, notes) == {"enp1s0f1np1": [FABRIC_IP]}
    assert notes == ["fabric: ip -j -4 addr show failed (rc 1: Cannot open netlink socket); IPv4 addresses taken from the RoCE v2 GIDs in sysfs"]


# ---------------------------------------------------------------------------------------------------------------
# Memory and disk


def test_memory_gb10(gb10_proc: Path) -> None:
    notes: list[str] = []
    gpu_processes = [{"pid": 1, "name": "x", "used_mib": 1, "unit": None, "container_name": None}]
    section = memory_info(gb10_proc, 2, gpu_processes, notes)
    assert (section["total_bytes"], section["available_bytes"]) == (124610 * MIB, 115787 * MIB)
    assert section["top_processes"] == [
        {"pid": 118211, "name": "VLLM::EngineCore", "rss_bytes": 4394 * MIB, "unit": "vllm-cluster.service"},
        {"pid": 114687, "name": "python", "rss_bytes": 2050 * MIB, "unit": f"docker-{JUPYTER_ID}.scope"},
    ]
    assert section["gpu_processes"] is gpu_processes
    assert notes == []


def test_memory_without_proc(tmp_path: Path) -> None:
    notes: list[str] = []
    section = memory_info(tmp_path / "noproc", 5, [], notes)
    assert (section["total_bytes"], section["available_bytes"], section["top_processes"]) == (None, None, [])
    assert notes[0] == f"memory: {tmp_path / 'noproc' / 'meminfo'}: /proc/meminfo has no MemTotal or MemAvailable (kernel older than 3.14?)"
    assert notes[1].startswith(f"memory: cannot list the processes in {tmp_path / 'noproc'}: ")


def test_nearest_existing(tmp_path: Path) -> None:
    (tmp_path / "root").mkdir()
    assert nearest_existing(str(tmp_path / "root" / ".cache" / "huggingface" / "hub")) == str(tmp_path / "root")
    assert nearest_existing(str(tmp_path / "root") + "/") == str(tmp_path / "root")
    assert nearest_existing("/") == "/"


class FakeStat(t.NamedTuple):
    f_bavail: int
    f_frsize: int
    f_blocks: int


def test_disk_model_dir_missing(tmp_path: Path) -> None:
    (tmp_path / "root").mkdir()
    wanted = str(tmp_path / "root" / ".cache" / "huggingface" / "hub")
    measured: list[str] = []

    def statvfs(path: str) -> os.statvfs_result:
        measured.append(path)
        return t.cast("os.statvfs_result", FakeStat(f_bavail=1000, f_frsize=4096, f_blocks=5000))

    notes: list[str] = []
    section = disk_info(wanted, notes, statvfs)
    assert section == {"path": wanted, "measured_path": str(tmp_path / "root"), "free_bytes": 4096000, "total_bytes": 20480000}
    assert measured == [str(tmp_path / "root")]
    assert notes == [f"disk: {wanted} does not exist yet; measured {tmp_path / 'root'}"]


def test_disk_real_statvfs(tmp_path: Path) -> None:
    notes: list[str] = []
    section = disk_info(str(tmp_path), notes)
    stats = os.statvfs(tmp_path)
    assert section["measured_path"] == str(tmp_path)
    assert section["total_bytes"] == stats.f_blocks * stats.f_frsize
    assert 0 < section["free_bytes"] <= section["total_bytes"]
    assert notes == []


def test_disk_statvfs_fails(tmp_path: Path) -> None:
    def statvfs(path: str) -> os.statvfs_result:
        raise PermissionError(13, "Permission denied")

    notes: list[str] = []
    section = disk_info(str(tmp_path), notes, statvfs)
    assert (section["free_bytes"], section["total_bytes"]) == (None, None)
    assert notes == [f"disk: cannot measure {tmp_path}: Permission denied"]


# ---------------------------------------------------------------------------------------------------------------
# Inference stacks


def test_parse_systemctl_units() -> None:
    assert parse_systemctl_units(UNIT_FILES) == ["ssh.service", "vllm-cluster.service", "ray-head.service", "xray.service", "docker.socket"]
    assert parse_systemctl_units(ACTIVE_UNITS) == [
        "docker.service",
        "ollama.service",
        "ray-head.service",
        "sparkops-vllm-rank@0.service",
        "jupyter.service",
        "-.mount",
    ]
    assert parse_systemctl_units("\n0 unit files listed.\n") == []


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("ray-head.service", True),
        ("sparkops-raylet.service", True),
        ("xray.service", False),
        ("ollama.service", True),  # by "ollama", not by "llama"
        ("llama-server.service", True),
        ("VLLM-Cluster.service", True),
        ("text-generation-inference.service", True),
        ("ssh.service", False),
        ("docker.socket", False),
    ],
)
def test_matches_default_patterns(name: str, expected: bool) -> None:
    assert matches(name, Options(FABRIC_IP, "/x").unit_patterns) is expected


def test_matches_glob_and_word_start() -> None:
    assert matches("my-ray.service", ["ray"]) is True
    assert matches("xray.service", ["ray"]) is False
    assert matches("xray.service", ["*ray*"]) is True
    assert matches("ray-head.service", ["ray-*.timer"]) is False
    assert matches("ollama.service", ["llama"]) is False


def test_unit_entries() -> None:
    entries = unit_entries(parse_systemctl_units(UNIT_FILES), parse_systemctl_units(ACTIVE_UNITS), Options(FABRIC_IP, "/x").unit_patterns)
    assert entries == [
        {"unit": "ollama.service", "enabled": False, "active": True},
        {"unit": "ray-head.service", "enabled": True, "active": True},
        {"unit": "sparkops-vllm-rank@0.service", "enabled": False, "active": True},
        {"unit": "vllm-cluster.service", "enabled": True, "active": False},
    ]


def test_systemd_units_commands() -> None:
    run, calls = runner({SYSTEMCTL_ENABLED: (0, UNIT_FILES, ""), SYSTEMCTL_ACTIVE: (0, ACTIVE_UNITS, "")})
    notes: list[str] = []
    units = systemd_units(run, "/usr/bin/systemctl", ["vllm"], notes)
    assert units == [
        {"unit": "sparkops-vllm-rank@0.service", "enabled": False, "active": True},
        {"unit": "vllm-cluster.service", "enabled": True, "active": False},
    ]
    assert calls == [
        ["/usr/bin/systemctl", "list-unit-files", "--state=enabled", "--no-legend", "--plain"],
        ["/usr/bin/systemctl", "list-units", "--state=active", "--no-legend", "--plain"],
    ]
    assert notes == []


def test_systemd_units_empty_rc_1_and_failure() -> None:
    run, _calls = runner({SYSTEMCTL_ENABLED: (1, "", ""), SYSTEMCTL_ACTIVE: (0, ACTIVE_UNITS, "")})
    notes: list[str] = []
    assert systemd_units(run, "/bin/systemctl", ["ray"], notes) == [{"unit": "ray-head.service", "enabled": False, "active": True}]
    assert notes == []
    failing, _calls = runner({SYSTEMCTL_ENABLED: (1, "", "System has not been booted with systemd as init system (PID 1). Can't operate.\n")})
    assert systemd_units(failing, "/bin/systemctl", ["ray"], notes) == []
    assert notes == [
        "inference: systemctl list-unit-files --state=enabled --no-legend --plain failed (rc 1): "
        "System has not been booted with systemd as init system (PID 1). Can't operate."
    ]
    notes.clear()
    assert systemd_units(failing, None, ["ray"], notes) == []
    assert notes == ["inference: systemctl not found: systemd units not reported"]


def test_container_entries() -> None:
    containers = [
        JUPYTER,
        Container(id="7" * 64, names=("old",), image="vllm/vllm-openai:v0.10.1", state="exited"),
        Container(id="8" * 64, names=("ray-worker",), image="rayproject/ray:2.49.1", state="running"),
    ]
    assert container_entries(containers, ["vllm", "ray"]) == [
        {"name": "jupyter", "image": "nvcr.io/nvidia/pytorch:25.09-py3", "state": "running", "inference": False},
        {"name": "old", "image": "vllm/vllm-openai:v0.10.1", "state": "exited", "inference": True},
        {"name": "ray-worker", "image": "rayproject/ray:2.49.1", "state": "running", "inference": True},
    ]
    assert container_entries(None, ["vllm"]) == []


# ---------------------------------------------------------------------------------------------------------------
# Versions


def test_normalise() -> None:
    assert normalise("nvidia_nccl_cu12") == normalise("Nvidia.NCCL-cu12") == "nvidia-nccl-cu12"


def test_dist_info_names(tmp_path: Path) -> None:
    write_dist(tmp_path, "nvidia_nccl_cu12-2.27.3.dist-info", None, None)
    write_dist(tmp_path, "Jinja2-3.1.6.dist-info", "Jinja2", "3.1.6")
    write_dist(tmp_path, "weird-1.0.dist-info", "Weird_Name", "1.0.post1")
    assert dist_info(tmp_path / "nvidia_nccl_cu12-2.27.3.dist-info") == ("nvidia-nccl-cu12", "2.27.3")
    assert dist_info(tmp_path / "Jinja2-3.1.6.dist-info") == ("jinja2", "3.1.6")
    assert dist_info(tmp_path / "weird-1.0.dist-info") == ("weird-name", "1.0.post1")  # METADATA wins over the directory
    (tmp_path / "broken.dist-info").mkdir()
    assert dist_info(tmp_path / "broken.dist-info") is None


def test_installed(venvs: tuple[Path, Path]) -> None:
    ray, _hf = venvs
    assert installed(ray) == {"nvidia-nccl-cu12": "2.27.3", "ray": "2.49.1", "vllm": "0.30.0", "jinja2": "3.1.6"}


def test_venv_versions_first_venv_wins(venvs: tuple[Path, Path], tmp_path: Path) -> None:
    ray, hf = venvs
    notes: list[str] = []
    packages = venv_packages([str(tmp_path / "absent"), str(ray), str(hf)], notes)
    assert [venv for venv, _found in packages] == [str(ray), str(hf)]
    assert notes == [f"versions: venv {tmp_path / 'absent'} does not exist"]
    assert package_version(packages, "ray") == "2.49.1"
    assert package_version(packages, "nvidia-nccl-cu13", "nvidia-nccl-cu12") == "2.27.3"  # the first venv has cu12
    assert package_version(packages, "huggingface-hub") == "0.35.0"
    assert package_version(packages, "torch") is None
    reversed_order = venv_packages([str(hf), str(ray)], notes)
    assert package_version(reversed_order, "ray") == "2.40.0"
    assert package_version(reversed_order, "nvidia-nccl-cu13", "nvidia-nccl-cu12") == "2.28.3"


def test_venv_without_site_packages(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    notes: list[str] = []
    assert venv_packages([str(tmp_path / "empty")], notes) == []
    assert notes == [f"versions: venv {tmp_path / 'empty'} has no lib/python*/site-packages"]


def test_versions_keys(venvs: tuple[Path, Path]) -> None:
    ray, hf = venvs
    packages = venv_packages([str(ray), str(hf)], [])
    found = versions(Host(machine="aarch64", kernel="6.11.0-1016-nvidia", python="3.12.3"), {"driver": "580.95.05", "cuda": "13.0"}, packages)
    assert tuple(found) == COMPONENTS
    assert found == {
        "kernel": "6.11.0-1016-nvidia",
        "driver": "580.95.05",
        "cuda": "13.0",
        "nccl": "2.27.3",
        "python": "3.12.3",
        "ray": "2.49.1",
        "vllm": "0.30.0",
    }


# ---------------------------------------------------------------------------------------------------------------
# All of it


def test_recon_whole(tmp_path: Path, gb10_proc: Path, venvs: tuple[Path, Path]) -> None:
    sysfs = make_sysfs("both_halves", tmp_path)
    (tmp_path / "os-release").write_text(OS_RELEASE, encoding="utf-8")
    (tmp_path / "root").mkdir()
    docker_ps = json.dumps({"ID": JUPYTER_ID, "Names": "jupyter", "Image": JUPYTER.image, "State": "running"})
    ip_json = json.dumps([{"ifname": name, "addr_info": [{"family": "inet", "local": a} for a in addrs]} for name, addrs in ADDRESSES.items()])
    answers = {
        **GB10_ANSWERS,
        PS_ARGS: (0, docker_ps + "\n", ""),
        IP_ADDR: (0, ip_json, ""),
        SYSTEMCTL_ENABLED: (0, UNIT_FILES, ""),
        SYSTEMCTL_ACTIVE: (0, ACTIVE_UNITS, ""),
    }
    run, _calls = runner(answers)
    options = Options(fabric_ip=FABRIC_IP, model_dir=str(tmp_path / "root" / "hub"), venvs=tuple(str(v) for v in venvs), top_processes=1)
    sources = Sources(gb10_proc, sysfs, tmp_path / "os-release", NVSMI, "/usr/bin/docker", "/usr/bin/systemctl", "/usr/sbin/ip")
    result = recon(options, sources, run, Host(machine="aarch64", kernel="6.11.0-1016-nvidia", python="3.12.3"))
    assert list(result) == ["os", "architecture", "kernel", "gpu", "fabric", "memory", "disk", "inference", "versions", "notes"]
    assert (result["architecture"], result["kernel"], result["os"]["id"]) == ("aarch64", "6.11.0-1016-nvidia", "ubuntu")
    assert result["gpu"]["names"] == ["NVIDIA GB10"]
    assert (result["fabric"]["interface"], [d["name"] for d in result["fabric"]["rdma_devices"]]) == ("enp1s0f1np1", ["rocep1s0f1", "roceP2p1s0f1"])
    assert [p["pid"] for p in result["memory"]["top_processes"]] == [118211]
    assert result["memory"]["gpu_processes"][2]["container_name"] == "jupyter"
    assert result["disk"]["measured_path"] == str(tmp_path / "root")
    assert [u["unit"] for u in result["inference"]["enabled_units"]] == [
        "ollama.service",
        "ray-head.service",
        "sparkops-vllm-rank@0.service",
        "vllm-cluster.service",
    ]
    assert result["inference"]["containers"] == [{"name": "jupyter", "image": JUPYTER.image, "state": "running", "inference": False}]
    assert result["versions"]["vllm"] == "0.30.0"
    assert result["notes"] == [f"disk: {tmp_path / 'root' / 'hub'} does not exist yet; measured {tmp_path / 'root'}"]
    json.dumps(result)  # the module returns it as is


def test_recon_bare_host(tmp_path: Path) -> None:
    """No commands at all, no trees: every section is there, empty, and the notes say why."""
    run, calls = runner({})
    options = Options(fabric_ip=FABRIC_IP, model_dir="/", venvs=(str(tmp_path / "venv"),))
    sources = Sources(tmp_path / "proc", tmp_path / "sys", tmp_path / "os-release")
    result = recon(options, sources, run, Host(machine="x86_64", kernel="6.8.0", python="3.11.9"))
    assert calls == []
    assert result["gpu"] == {"driver": None, "cuda": None, "names": [], "count": None, "compute_caps": []}
    assert result["fabric"]["interface"] is None
    assert result["versions"] == {"kernel": "6.8.0", "driver": None, "cuda": None, "nccl": None, "python": "3.11.9", "ray": None, "vllm": None}
    assert result["inference"] == {"enabled_units": [], "containers": []}
    assert result["disk"]["free_bytes"] is not None
    prefixes = [note.split(":", 1)[0] for note in result["notes"]]
    assert prefixes == ["os", "inference", "gpu", "fabric", "fabric", "memory", "memory", "inference", "versions"]


def test_model_present_bytes_counts_whole_blobs_of_the_repo_only(tmp_path: Path) -> None:
    from ansible_collections.sparkops.inference.plugins.module_utils._node_recon import model_present_bytes

    blobs = tmp_path / "models--org--name" / "blobs"
    blobs.mkdir(parents=True)
    (blobs / "aaa").write_bytes(b"x" * 100)
    (blobs / "bbb").write_bytes(b"x" * 23)
    (blobs / "ccc.0a1b.incomplete").write_bytes(b"x" * 1000)
    (tmp_path / "models--org--other" / "blobs").mkdir(parents=True)
    (tmp_path / "models--org--other" / "blobs" / "zzz").write_bytes(b"x" * 7)
    assert model_present_bytes(str(tmp_path), "org/name") == 123
    assert model_present_bytes(str(tmp_path), "org/missing") == 0
