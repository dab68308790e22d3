# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests for the private plugin util _fabric_env: the environment that keeps traffic on the fabric."""

from __future__ import annotations

import typing as t

import pytest
from ansible_collections.sparkops.inference.plugins.plugin_utils._fabric_env import FabricEnvError, fabric_env, render_env_file

IB = {
    "interface": "enp1s0f1np1",
    "transport": "ib",
    "hca_list": ["rocep1s0f1", "roceP2p1s0f1"],
    "gid_index": 3,
    "link": {"up": True, "operstate": "up"},
}
SOCKET = {"interface": "enp1s0f1np1", "transport": "socket", "hca_list": [], "gid_index": None, "link": {"up": True}}
COMMON = {"fabric_ip": "192.168.200.12", "master_addr": "192.168.200.11", "vllm_config_root": "/etc/sparkops/vllm"}


def env(roce: t.Mapping[str, t.Any], **kwargs: t.Any) -> dict[str, str]:
    return fabric_env(roce, **{**COMMON, **kwargs})


def test_roce_host_gets_both_twins_and_its_gid_index() -> None:
    result = env(IB)
    assert result["NCCL_IB_DISABLE"] == "0"
    assert result["NCCL_IB_HCA"] == "rocep1s0f1,roceP2p1s0f1"
    assert result["NCCL_IB_GID_INDEX"] == "3"
    for name in ("NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME", "TP_SOCKET_IFNAME", "UCX_NET_DEVICES", "OMPI_MCA_btl_tcp_if_include"):
        assert result[name] == "enp1s0f1np1"
    assert result["VLLM_HOST_IP"] == "192.168.200.12"
    assert result["MASTER_ADDR"] == "192.168.200.11"
    assert result["VLLM_CONFIG_ROOT"] == "/etc/sparkops/vllm"
    assert result["NCCL_DEBUG"] == "WARN"


def test_host_without_rdma_uses_sockets_on_the_fabric() -> None:
    result = env(SOCKET)
    assert result["NCCL_IB_DISABLE"] == "1"
    assert "NCCL_IB_HCA" not in result and "NCCL_IB_GID_INDEX" not in result
    assert result["NCCL_SOCKET_IFNAME"] == "enp1s0f1np1"


def test_unknown_gid_index_is_left_to_nccl() -> None:
    result = env({**IB, "gid_index": None})
    assert "NCCL_IB_GID_INDEX" not in result
    assert result["NCCL_IB_DISABLE"] == "0"


@pytest.mark.parametrize(
    ("overrides", "name", "value"),
    [
        ({"interface": "enP2p1s0f1np1"}, "NCCL_SOCKET_IFNAME", "enP2p1s0f1np1"),
        ({"ib_hca": ["rocep1s0f1"]}, "NCCL_IB_HCA", "rocep1s0f1"),
        ({"ib_gid_index": 5}, "NCCL_IB_GID_INDEX", "5"),
        ({"ib_gid_index": "5"}, "NCCL_IB_GID_INDEX", "5"),
        ({"transport": "socket"}, "NCCL_IB_DISABLE", "1"),
        ({"nccl_debug": "INFO"}, "NCCL_DEBUG", "INFO"),
        ({"extra": {"NCCL_IB_SUBNET_AWARE_ROUTING": 1}}, "NCCL_IB_SUBNET_AWARE_ROUTING", "1"),
    ],
)
def test_every_detected_value_can_be_overridden(overrides: dict[str, t.Any], name: str, value: str) -> None:
    assert env(IB, **overrides)[name] == value


def test_forcing_ib_without_devices_is_refused() -> None:
    with pytest.raises(FabricEnvError, match="transport ib needs RDMA devices"):
        env(SOCKET, transport="ib")


def test_forcing_ib_with_given_devices_works() -> None:
    assert env(SOCKET, transport="ib", ib_hca=["rocep1s0f1"])["NCCL_IB_HCA"] == "rocep1s0f1"


@pytest.mark.parametrize(
    ("overrides", "fragment"),
    [
        ({"transport": "rdma"}, "transport must be one of"),
        ({"fabric_ip": "spark-head"}, "fabric_ip must be an IPv4 address"),
        ({"master_addr": "192.168.200"}, "master_addr must be an IPv4 address"),
        ({"interface": "bad name"}, "fabric interface must be a network interface name"),
        ({"ib_gid_index": -1}, "NCCL_IB_GID_INDEX must be a non-negative integer"),
        ({"ib_gid_index": True}, "NCCL_IB_GID_INDEX must be a non-negative integer"),
        ({"extra": {"1BAD": "x"}}, "is not a valid name"),
        ({"extra": {"GOOD": "two\nlines"}}, "must be one line"),
        ({"nccl_debug": "INFO\nNCCL_IB_DISABLE=1"}, "must be one line"),
    ],
)
def test_bad_input_names_the_value(overrides: dict[str, t.Any], fragment: str) -> None:
    with pytest.raises(FabricEnvError, match=fragment):
        env(IB, **overrides)


def test_missing_interface_is_refused() -> None:
    with pytest.raises(FabricEnvError, match="fabric interface"):
        env({"transport": "socket"})


def test_env_file_round_trips_through_a_shell() -> None:
    import subprocess

    values = {"PLAIN": "enp1s0f1np1", "SPACED": "a b", "QUOTED": 'say "hi"', "DOLLAR": "$HOME", "BACK": "a\\b"}
    text = render_env_file(values, ["header line"])
    assert text.startswith("# header line\n") and text.endswith("\n")
    script = "set -a; . /dev/stdin; " + "; ".join(f'printf "%s\\0" "${name}"' for name in values)
    out = subprocess.run(["bash", "-c", script], input=text, capture_output=True, text=True, check=True).stdout
    assert out.split("\0")[:-1] == list(values.values())


def test_env_file_refuses_bad_names_and_line_breaks() -> None:
    with pytest.raises(FabricEnvError):
        render_env_file({"BAD NAME": "x"})
    with pytest.raises(FabricEnvError):
        render_env_file({"GOOD": "x\ny"})
    with pytest.raises(FabricEnvError, match="single quote"):
        render_env_file({"GOOD": "it's"})


@pytest.mark.parametrize("line", ["managed\nLD_PRELOAD=/tmp/x.so", "managed\rLD_PRELOAD=/tmp/x.so", "managed\r\n LD_PRELOAD=/tmp/x.so"])
def test_a_header_line_with_a_line_break_stays_a_comment(line: str) -> None:
    """A line break in a header line ended the comment: the rest was a line of its own, an assignment for systemd and
    a command for a shell that reads the file (the image rollback's header put " runs (an upgrade ...)" there)."""
    lines = render_env_file({"GOOD": "x"}, ["first", line]).splitlines()
    assert lines[:2] == ["# first", "# managed"] and lines[-1] == "GOOD=x", lines
    assert len(lines) == 4 and lines[2].startswith("#") and lines[2].strip("# ") == "LD_PRELOAD=/tmp/x.so", lines


def test_a_header_line_with_a_nul_is_refused() -> None:
    with pytest.raises(FabricEnvError, match="NUL"):
        render_env_file({"GOOD": "x"}, ["nul\0"])


def test_bundled_nccl_sets_no_library_variables() -> None:
    result = env(IB)
    assert "LD_PRELOAD" not in result and "VLLM_NCCL_SO_PATH" not in result
    assert env(IB, nccl_library="bundled") == result


def test_system_nccl_is_preloaded_for_torch_and_named_for_vllm() -> None:
    result = env(IB, nccl_library="system", system_nccl_path="/usr/lib/aarch64-linux-gnu/libnccl.so.2")
    assert result["LD_PRELOAD"] == "/usr/lib/aarch64-linux-gnu/libnccl.so.2"
    assert result["VLLM_NCCL_SO_PATH"] == "/usr/lib/aarch64-linux-gnu/libnccl.so.2"
    assert "LD_PRELOAD=/usr/lib/aarch64-linux-gnu/libnccl.so.2\n" in render_env_file(result)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"nccl_library": "conda"}, "nccl_library must be one of bundled, system, got 'conda'"),
        ({"nccl_library": "system"}, "nccl_library system needs the absolute path of the system's libnccl.so.2, got None"),
        ({"nccl_library": "system", "system_nccl_path": "libnccl.so.2"}, "needs the absolute path"),
        ({"nccl_library": "system", "system_nccl_path": "/opt/a b/libnccl.so.2"}, "must be one path without spaces, colons or quotes"),
        ({"nccl_library": "system", "system_nccl_path": "/a/libnccl.so.2:/b/libc.so"}, "must be one path without spaces, colons or quotes"),
    ],
)
def test_bad_library_choice_is_refused(kwargs: dict[str, t.Any], message: str) -> None:
    with pytest.raises(FabricEnvError, match=message):
        env(IB, **kwargs)
