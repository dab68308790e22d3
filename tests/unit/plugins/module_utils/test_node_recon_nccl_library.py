# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""node_recon's view of the NCCL library the engine's units load (nccl_env_nccl_library), and the drift gate on it."""

from __future__ import annotations

from pathlib import Path

from ansible_collections.sparkops.inference.plugins.module_utils._node_recon import Host, Options, Sources, nccl_library, recon, versions
from ansible_collections.sparkops.inference.plugins.module_utils._version_drift import version_drift
from ansible_collections.sparkops.inference.plugins.plugin_utils._fabric_env import render_env_file

HOST = Host(machine="aarch64", kernel="6.11.0-1016-nvidia", python="3.12.3")
WHEEL = [("/opt/sparkops/ray", {"nvidia-nccl-cu13": "2.28.9"})]


def system_lib(tmp_path: Path, version: str = "2.28.3") -> Path:
    real = tmp_path / "lib" / f"libnccl.so.{version}"
    real.parent.mkdir(parents=True, exist_ok=True)
    real.write_bytes(b"\x7fELF")
    (real.parent / "libnccl.so.2").symlink_to(real.name)
    return real.parent / "libnccl.so.2"


def env_file(tmp_path: Path, **env: str) -> Path:
    path = tmp_path / "fabric.env"
    path.write_text(render_env_file({"NCCL_SOCKET_IFNAME": "enp1s0f1np1", **env}, ["Managed by sparkops.inference"]), encoding="utf-8")
    return path


def test_no_file_or_no_variables_is_bundled(tmp_path: Path) -> None:
    notes: list[str] = []
    assert nccl_library(tmp_path / "absent.env", notes) == {"library": "bundled", "path": None, "version": None}
    assert nccl_library(env_file(tmp_path), notes)["library"] == "bundled"
    assert notes == []


def test_system_library_with_its_version_from_the_file_it_resolves_to(tmp_path: Path) -> None:
    lib = system_lib(tmp_path)
    notes: list[str] = []
    found = nccl_library(env_file(tmp_path, LD_PRELOAD=str(lib), VLLM_NCCL_SO_PATH=str(lib)), notes)
    assert found == {"library": "system", "path": str(lib), "version": "2.28.3"}
    assert nccl_library(env_file(tmp_path, LD_PRELOAD=f"/usr/lib/libfoo.so {lib}"), notes)["version"] == "2.28.3"
    assert notes == []


def test_missing_system_library_is_a_note(tmp_path: Path) -> None:
    notes: list[str] = []
    found = nccl_library(env_file(tmp_path, VLLM_NCCL_SO_PATH="/usr/lib/aarch64-linux-gnu/libnccl.so.2"), notes)
    assert found == {"library": "system", "path": "/usr/lib/aarch64-linux-gnu/libnccl.so.2", "version": None}
    assert notes == [f"versions: {tmp_path / 'fabric.env'} names /usr/lib/aarch64-linux-gnu/libnccl.so.2 as the NCCL library, which does not exist"]


def test_versions_name_the_system_library() -> None:
    assert versions(HOST, {}, WHEEL)["nccl"] == "2.28.9"
    assert versions(HOST, {}, WHEEL, {"library": "bundled", "path": None, "version": None})["nccl"] == "2.28.9"
    assert versions(HOST, {}, WHEEL, {"library": "system", "path": "/x/libnccl.so.2", "version": "2.28.3"})["nccl"] == "2.28.3 (system)"
    assert versions(HOST, {}, WHEEL, {"library": "system", "path": "/x/libnccl.so.2", "version": None})["nccl"] == "unknown (system)"


def test_drift_gate_tells_a_node_on_another_library_apart() -> None:
    head = versions(HOST, {}, WHEEL, {"library": "system", "path": "/x/libnccl.so.2", "version": "2.28.3"})
    worker = versions(HOST, {}, WHEEL)
    drift = version_drift("spark-head", {"spark-head": head, "spark-worker1": worker})
    assert not drift.matches
    wanted = ("spark-worker1", "nccl", "2.28.9", "2.28.3 (system)")
    assert any(all(word in problem for word in wanted) for problem in drift.problems), drift.problems
    assert version_drift("spark-head", {"spark-head": head, "spark-worker1": dict(head)}).matches


def test_recon_reports_the_library_in_fabric_and_versions(tmp_path: Path) -> None:
    lib = system_lib(tmp_path)
    sources = Sources(tmp_path / "proc", tmp_path / "sys", tmp_path / "os-release", fabric_env=env_file(tmp_path, LD_PRELOAD=str(lib)))
    result = recon(Options(fabric_ip="192.168.200.11", model_dir="/", venvs=()), sources, lambda argv: (127, "", ""), HOST)
    assert result["fabric"]["nccl_library"] == {"library": "system", "path": str(lib), "version": "2.28.3"}
    assert result["versions"]["nccl"] == "2.28.3 (system)"
