# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The nccl_env role as Ansible runs it (the whole role, its argument specs included), on three local "nodes" whose
sysfs is a fixture tree (fixtures/sysfs, via nccl_env_sysfs_root): the fabric link gate passes healthy links, fails a
degraded link or a different MTU naming the node before any node's environment is written, refuses nonsense settings
naming the variable, and the NCCL library choice reaches the environment file (or fails naming the node and path)."""

from __future__ import annotations

import subprocess
import sys
import typing as t
from pathlib import Path

import pytest
import yaml
from ansible_run import play
from sysfs_tree import materialise

NODES = {"spark-head": "192.168.200.11", "spark-worker1": "192.168.200.12", "spark-worker2": "192.168.200.13"}
PLAY = yaml.safe_dump(
    [{"name": "nccl_env", "hosts": "all", "gather_facts": False, "any_errors_fatal": True, "roles": [{"role": "sparkops.inference.nccl_env"}]}],
    sort_keys=False,
)


def node_sysfs(tmp_path: Path, host: str, case: str, **attributes: str) -> str:
    root = materialise(case, tmp_path / "sysfs" / host)
    for name, value in attributes.items():
        (root / "class" / "net" / "enp1s0f1np1" / name).write_text(value + "\n", encoding="utf-8")
        twin = root / "class" / "net" / "enP2p1s0f1np1"
        if twin.is_dir() and name == "mtu":
            (twin / name).write_text(value + "\n", encoding="utf-8")
    return str(root)


def run_role(
    tmp_path: Path, case: str = "both_halves", links: dict[str, dict[str, str]] | None = None, **extra: t.Any
) -> tuple[subprocess.CompletedProcess[str], str]:
    out = tmp_path / "etc"
    hosts = {
        host: {
            "sparkops_fabric_ip": ip,
            "nccl_env_sysfs_root": node_sysfs(tmp_path, host, case, **(links or {}).get(host, {})),
            "nccl_env_dir": str(out / host),
            "nccl_env_file": str(out / host / "fabric.env"),
            "nccl_env_vllm_config_root": str(out / host / "vllm"),
        }
        for host, ip in NODES.items()
    }
    inventory = {
        "all": {
            "vars": {
                "ansible_connection": "local",
                "ansible_python_interpreter": sys.executable,
                "sparkops_fabric_subnet": "192.168.200.0/24",
                "nccl_env_interface": "enp1s0f1np1",
            },
            "children": {
                "spark_head": {"hosts": {"spark-head": hosts["spark-head"]}},
                "spark_workers": {"hosts": {h: hosts[h] for h in ("spark-worker1", "spark-worker2")}},
            },
        }
    }
    proc = play(tmp_path, inventory, PLAY, extra)
    return proc, " ".join((proc.stdout + proc.stderr).split())


def env_files(tmp_path: Path) -> list[Path]:
    return sorted((tmp_path / "etc").glob("*/fabric.env"))


def test_healthy_links_pass_and_the_environment_is_written(tmp_path: Path) -> None:
    proc, output = run_role(tmp_path, nccl_env_min_mtu=9000)
    assert proc.returncode == 0, output[-3000:]
    assert "fabric link gate: passed on 3 node(s); MTU 9000; speed check auto, expected 200000 Mb/s (at least 90 %)" in output
    assert len(env_files(tmp_path)) == 3
    assert "LD_PRELOAD" not in env_files(tmp_path)[0].read_text()
    assert "NCCL library: bundled with the engine's wheels" in output
    assert "NCCL all-reduce not run: /opt/sparkops/ray/bin/python is not on spark-head, spark-worker1, spark-worker2 yet" in output


def test_degraded_link_fails_naming_the_node_and_nothing_is_written(tmp_path: Path) -> None:
    proc, output = run_role(tmp_path, links={"spark-worker1": {"speed": "13000"}})
    assert proc.returncode != 0
    assert "spark-worker1: fabric link enp1s0f1np1 runs at 13000 Mb/s, expected 200000 (at least 90 %)" in output, output[-3000:]
    assert env_files(tmp_path) == []


def test_different_mtu_fails_naming_the_node(tmp_path: Path) -> None:
    proc, output = run_role(tmp_path, links={"spark-worker2": {"mtu": "1500"}})
    assert proc.returncode != 0
    assert (
        "spark-worker2: fabric link enp1s0f1np1 has MTU 1500, the other nodes 9000 (spark-head, spark-worker1): the fabric MTU must be the same on every node"
        in output
    ), output[-3000:]
    assert env_files(tmp_path) == []


def test_virtual_links_skip_the_speed_check_and_say_so(tmp_path: Path) -> None:
    proc, output = run_role(tmp_path, case="no_rdma")
    assert proc.returncode == 0, output[-3000:]
    assert "spark-worker2: fabric link enp1s0f1np1 is a virtual netdev (no PCI device, e.g. a veth) reporting 10000 Mb/s: speed not checked" in output
    assert (
        "NCCL all-reduce not run: socket mode: no RDMA device on spark-head, spark-worker1, spark-worker2: NCCL runs on TCP sockets there (NCCL_IB_DISABLE=1)"
        in output
    )


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("nccl_env_expected_speed_mbps", 0, "nccl_env_expected_speed_mbps must be a whole number of Mb/s above 0, got 0"),
        ("nccl_env_expected_speed_mbps", -200000, "nccl_env_expected_speed_mbps must be a whole number of Mb/s above 0, got -200000"),
        ("nccl_env_min_speed_fraction", 1.5, "nccl_env_min_speed_fraction must be a fraction above 0 and at most 1, got 1.5"),
        ("nccl_env_min_speed_fraction", 0, "nccl_env_min_speed_fraction must be a fraction above 0 and at most 1, got 0"),
        ("nccl_env_min_mtu", 100, "nccl_env_min_mtu must be a whole number of at least 576"),
        ("nccl_env_speed_check", "sometimes", "nccl_env_speed_check"),
        ("nccl_env_nccl_library", "conda", "nccl_env_nccl_library"),
    ],
)
def test_nonsense_settings_are_refused_naming_the_variable(tmp_path: Path, name: str, value: t.Any, message: str) -> None:
    proc, output = run_role(tmp_path, **{name: value})
    assert proc.returncode != 0
    assert message in output, output[-3000:]
    assert env_files(tmp_path) == []


def test_system_nccl_reaches_the_environment_file(tmp_path: Path) -> None:
    library = tmp_path / "libnccl.so.2"
    library.write_bytes(b"\x7fELF")
    proc, output = run_role(tmp_path, nccl_env_nccl_library="system", nccl_env_system_nccl_path=str(library))
    assert proc.returncode == 0, output[-3000:]
    for env in env_files(tmp_path):
        assert f"LD_PRELOAD={library}\n" in env.read_text() and f"VLLM_NCCL_SO_PATH={library}\n" in env.read_text()


def test_missing_system_nccl_fails_naming_node_and_path(tmp_path: Path) -> None:
    proc, output = run_role(tmp_path, nccl_env_nccl_library="system", nccl_env_system_nccl_path="/nonexistent/libnccl.so.2")
    assert proc.returncode != 0
    assert "host spark-head: nccl_env_nccl_library is system, but /nonexistent/libnccl.so.2 does not exist" in output, output[-3000:]
    assert env_files(tmp_path) == []


def fake_python(tmp_path: Path, log: str) -> str:
    """A stand-in for the engine's Python that prints a recorded log of the check, whatever it is asked to run."""
    fixture = Path(__file__).resolve().parents[1] / "fixtures" / "nccl_logs" / log
    stub = tmp_path / "python"
    stub.write_text(f"#!/bin/sh\ncat {fixture}\n", encoding="utf-8")
    stub.chmod(0o755)
    return str(stub)


def test_nccl_all_reduce_over_roce_passes(tmp_path: Path) -> None:
    python = fake_python(tmp_path, "synthetic-roce-2node.log")
    proc, output = run_role(tmp_path, nccl_env_nccl_check_python=python)
    assert proc.returncode == 0, output[-3000:]
    assert (
        "NCCL all-reduce over 3 nodes: passed; NCCL 2.28.3, network IB on enp1s0f1np1 (rocep1s0f1,roceP2p1s0f1), channels via NET/IB, "
        "bus bandwidth 11.0 GB/s (at least 10)"
    ) in output, output[-3000:]
    assert not list((tmp_path / "etc").glob("*/nccl-check.*"))  # the program is removed


def test_nccl_all_reduce_on_sockets_fails_the_roce_gate(tmp_path: Path) -> None:
    python = fake_python(tmp_path, "synthetic-socket-fallback-2node.log")
    proc, output = run_role(tmp_path, nccl_env_nccl_check_python=python)
    assert proc.returncode != 0
    assert "spark-head: NCCL used network Socket, expected IB (NCCL 2.28.9); spark-head: NCCL channels ran via NET/Socket, expected NET/IB only" in output, (
        output[-3000:]
    )
    assert "spark-head: NCCL all-reduce bus bandwidth 1.4 GB/s, expected at least 10 GB/s" in output
    assert not list((tmp_path / "etc").glob("*/nccl-check.*"))  # removed before the verdict


def test_nccl_all_reduce_off(tmp_path: Path) -> None:
    proc, output = run_role(tmp_path, nccl_env_nccl_check="off")
    assert proc.returncode == 0, output[-3000:]
    assert "NCCL all-reduce not run: nccl_env_nccl_check is off" in output
