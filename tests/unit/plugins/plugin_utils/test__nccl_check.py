# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests for the _nccl_check plugin util over recorded logs (tests/unit/fixtures/nccl_logs).

The h200-2026-12-03-* logs were captured on the lent single-GPU machine (docs/gpu-checks.md): the check with the
bundled NCCL, with the system one preloaded, with a wrong interface, and with two ranks on one GPU. The synthetic-*
logs are built from NCCL 2.28.9's format strings (their header says so): no RDMA machine was lent.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from ansible_collections.sparkops.inference.plugins.plugin_utils._nccl_check import nccl_verdict, parse_nccl_log

LOGS = Path(__file__).resolve().parents[2] / "fixtures" / "nccl_logs"


def log(name: str) -> str:
    return (LOGS / name).read_text(encoding="utf-8")


def test_bundled_run_on_the_h200() -> None:
    result = parse_nccl_log(log("h200-2026-12-03-bundled.log"))
    assert result.version == "2.28.9" and result.build == "2.28.9+cuda13.0"
    assert result.network == "Socket"
    assert result.interfaces == ["eth0"] and result.bootstrap_interface == "eth0"
    assert result.ok and result.error is None
    assert result.busbw_gbps == 0.0  # one rank: nccl-tests' all-reduce factor 2(n-1)/n is 0
    assert result.as_dict()["world_size"] == 1
    assert nccl_verdict(result, expect="socket") == []


def test_system_library_changes_the_version_nccl_reports() -> None:
    bundled = parse_nccl_log(log("h200-2026-12-03-bundled.log"))
    system = parse_nccl_log(log("h200-2026-12-03-system.log"))
    assert (bundled.version, system.version) == ("2.28.9", "2.28.3")
    # torch's own figure is the NCCL it was built with: it does not see the preloaded library
    assert system.as_dict()["torch_nccl_version"] == "2.28.9"
    assert system.ok


def test_wrong_interface_fails_with_nccls_own_error() -> None:
    result = parse_nccl_log(log("h200-2026-12-03-nosuch.log"))
    assert not result.ok
    assert result.warnings == ["Bootstrap : no socket interface found"]
    assert result.error is not None and result.error.endswith("Last error: Bootstrap : no socket interface found")
    (failure,) = nccl_verdict(result, expect="socket", node="h200")
    assert failure.startswith("h200: the NCCL all-reduce failed: DistBackendError") and "no socket interface found" in failure


def test_two_ranks_on_one_gpu_are_refused_by_nccl() -> None:
    result = parse_nccl_log(log("h200-2026-12-03-samegpu.log"))
    assert not result.ok
    assert len(result.results) == 2
    assert "Duplicate GPU detected : rank 0 and rank 1 both on CUDA device 60" in result.warnings


def test_roce_run_passes_with_ib_and_enough_bandwidth() -> None:
    result = parse_nccl_log(log("synthetic-roce-2node.log"))
    assert result.network == "IB"
    assert result.ib_devices == ["rocep1s0f1", "roceP2p1s0f1"]
    assert result.interfaces == ["enp1s0f1np1"]
    assert result.transports == ["NET/IB"]
    assert result.busbw_gbps == 11.0
    assert nccl_verdict(result, expect="ib", min_busbw_gbps=10) == []
    assert nccl_verdict(result, expect="ib", min_busbw_gbps=20, node="spark-head") == [
        "spark-head: NCCL all-reduce bus bandwidth 11.0 GB/s, expected at least 20 GB/s"
    ]


def test_socket_fallback_fails_a_roce_gate() -> None:
    result = parse_nccl_log(log("synthetic-socket-fallback-2node.log"))
    assert result.transports == ["NET/Socket"]
    assert nccl_verdict(result, expect="ib", min_busbw_gbps=10, node="spark-head") == [
        "spark-head: NCCL used network Socket, expected IB (NCCL 2.28.9)",
        "spark-head: NCCL channels ran via NET/Socket, expected NET/IB only",
        "spark-head: NCCL all-reduce bus bandwidth 1.4 GB/s, expected at least 10 GB/s",
    ]


@pytest.mark.parametrize(
    ("line", "transport"),
    [
        ("h:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC", "P2P/IPC"),
        ("h:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM/read", "P2P/CUMEM"),
        ("h:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via SHM/direct/direct", "SHM"),
        ("h:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] [send] via NET/IB/0/GDRDMA", "NET/IB"),
        ("h:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] [send] via NET/IB/1(0)/Shared", "NET/IB"),
    ],
)
def test_channel_transports(line: str, transport: str) -> None:
    assert parse_nccl_log(line).transports == [transport]


def test_no_result_line() -> None:
    (failure,) = nccl_verdict(parse_nccl_log("x NCCL WARN Cuda failure 'out of memory'\n"), expect="ib")
    assert failure == "the NCCL check printed no result line (SPARKOPS_NCCL_CHECK); NCCL's warnings: Cuda failure 'out of memory'"


def test_bad_expectation_is_refused() -> None:
    with pytest.raises(ValueError, match="expect must be ib or socket"):
        nccl_verdict(parse_nccl_log(""), expect="nvlink")


def test_library_switch_reaches_torch_and_vllms_own_wrapper() -> None:
    # second run: the environment files rendered for nccl_env_nccl_library bundled and system (LD_PRELOAD and
    # VLLM_NCCL_SO_PATH); pynccl is what vLLM 0.30's find_nccl_library + ctypes.CDLL load reports
    bundled = parse_nccl_log(log("h200-2026-12-03-switch-bundled.log")).as_dict()
    system = parse_nccl_log(log("h200-2026-12-03-switch-system.log")).as_dict()
    assert (bundled["nccl_version"], bundled["pynccl_version"], bundled["torch_nccl_version"]) == ("2.28.9", "2.28.9", "2.28.9")
    assert (system["nccl_version"], system["pynccl_version"], system["torch_nccl_version"]) == ("2.28.3", "2.28.3", "2.28.9")
    assert bundled["ok"] and system["ok"]
