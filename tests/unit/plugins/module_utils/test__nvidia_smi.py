# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests for the _nvidia_smi module util: the real H200 captures and the GB10 outputs in tests/unit/fixtures/nvidia_smi."""

from __future__ import annotations

import typing as t

import pytest
from ansible_collections.sparkops.inference.plugins.module_utils._nvidia_smi import (
    ComputeApp,
    Gpu,
    NvidiaSmiError,
    parse_compute_apps,
    parse_csv,
    parse_gpus,
    query_args,
)
from proc_tree import fixture_text

H200_UUID = "GPU-ad56e735-2052-d611-0932-0ebd0c155c61"
GB10_UUID = "GPU-2dee1e25-b3b5-007e-2b55-79f2d0f2ebe5"
H200 = Gpu(
    index=0,
    name="NVIDIA H200",
    uuid=H200_UUID,
    bus_id="00000000:00:06.0",
    driver_version="580.159.04",
    memory_total_mib=143771,
    memory_used_mib=0,
    memory_free_mib=143156,
    compute_cap="9.0",
)
APPS_HEADER = "pid, process_name, used_gpu_memory [MiB], gpu_uuid, gpu_bus_id\n"


@pytest.mark.parametrize("fixture", ["h200_query_gpu_csv.txt", "h200_query_gpu_nounits.txt"])
def test_h200_gpu_with_and_without_units(fixture: str) -> None:
    assert parse_gpus(fixture_text(fixture)) == [H200]


def test_h200_gpu_is_not_unified() -> None:
    (gpu,) = parse_gpus(fixture_text("h200_query_gpu_nounits.txt"))
    assert gpu.unified is False
    assert gpu.as_dict() == {
        "index": 0,
        "name": "NVIDIA H200",
        "uuid": H200_UUID,
        "bus_id": "00000000:00:06.0",
        "driver_version": "580.159.04",
        "memory_total_mib": 143771,
        "memory_used_mib": 0,
        "memory_free_mib": 143156,
        "compute_cap": "9.0",
        "unified_memory": False,
    }


def test_gb10_memory_not_available_is_none_and_unified() -> None:
    (gpu,) = parse_gpus(fixture_text("gb10_query_gpu_csv.txt"))
    assert (gpu.index, gpu.name, gpu.uuid, gpu.bus_id, gpu.driver_version) == (0, "NVIDIA GB10", GB10_UUID, "0000000F:01:00.0", "580.95.05")
    assert (gpu.memory_total_mib, gpu.memory_used_mib, gpu.memory_free_mib) == (None, None, None)
    assert gpu.compute_cap == "12.1"
    assert gpu.unified is True
    assert gpu.as_dict()["unified_memory"] is True


def test_not_supported_is_none() -> None:
    text = "index, name, memory.total [MiB], memory.used [MiB], memory.free [MiB]\n0, NVIDIA GB10, [Not Supported], 12, [N/A]\n"
    (gpu,) = parse_gpus(text)
    assert (gpu.memory_total_mib, gpu.memory_used_mib, gpu.memory_free_mib) == (None, 12, None)
    assert (gpu.uuid, gpu.bus_id, gpu.driver_version) == ("", "", "")
    assert gpu.compute_cap is None  # no compute_cap field in that output


def test_query_asks_for_the_compute_capability() -> None:
    assert "compute_cap" in query_args("gpu")[0].split("=", 1)[1].split(",")


def test_h200_busy_app() -> None:
    assert parse_compute_apps(fixture_text("h200_apps_busy.txt")) == [ComputeApp(pid=442, gpu_uuid=H200_UUID, used_mib=21090, name="python3")]


def test_h200_idle_is_header_only() -> None:
    assert fixture_text("h200_apps_idle.txt").startswith("pid, process_name")
    assert parse_compute_apps(fixture_text("h200_apps_idle.txt")) == []


def test_gb10_busy_apps() -> None:
    apps = parse_compute_apps(fixture_text("gb10_apps_busy.txt"))
    assert [(a.pid, a.name, a.used_mib) for a in apps] == [
        (2741, "/usr/lib/xorg/Xorg", 18),
        (3046, "/usr/bin/gnome-shell", 6),
        (114687, "/usr/local/bin/python", 19135),
        (118211, "VLLM::EngineCore", 87212),
    ]
    assert {a.gpu_uuid for a in apps} == {GB10_UUID}


def test_rc_trailer_lines_are_skipped() -> None:
    text = fixture_text("h200_apps_busy.txt")
    assert text.rstrip().endswith("# rc=0")
    without = "\n".join(line for line in text.splitlines() if not line.startswith("#"))
    assert parse_compute_apps(text) == parse_compute_apps(without)
    assert parse_csv(text, "compute-apps") == [
        {"pid": "442", "process_name": "python3", "used_memory": "21090 MiB", "gpu_uuid": H200_UUID, "gpu_bus_id": "00000000:00:06.0"}
    ]


def test_empty_output_is_no_rows() -> None:
    assert parse_compute_apps("") == []
    assert parse_gpus("# rc=0\n") == []


def test_too_few_fields_quotes_the_line() -> None:
    with pytest.raises(NvidiaSmiError, match=r"printed 2 fields, expected 5: '442, python3'"):
        parse_compute_apps(APPS_HEADER + "442, python3\n")


def test_memory_not_a_number_quotes_the_line() -> None:
    with pytest.raises(NvidiaSmiError, match=r"not a number of MiB: '442, python3, lots MiB, GPU-x, 0000'"):
        parse_compute_apps(APPS_HEADER + "442, python3, lots MiB, GPU-x, 0000\n")


def test_pid_not_a_number_quotes_the_line() -> None:
    with pytest.raises(NvidiaSmiError) as caught:
        parse_compute_apps(APPS_HEADER + "x442, python3, 5 MiB, GPU-x, 0000\n")
    assert "pid that is not a number ('x442')" in str(caught.value)
    assert "'x442, python3, 5 MiB, GPU-x, 0000'" in str(caught.value)


def test_gpu_index_not_a_number() -> None:
    text = fixture_text("h200_query_gpu_nounits.txt").replace("\n0, NVIDIA", "\nGPU0, NVIDIA")
    with pytest.raises(NvidiaSmiError, match=r"GPU index that is not a number \('GPU0'\): 'GPU0, NVIDIA H200"):
        parse_gpus(text)


@pytest.mark.parametrize(
    ("fixture", "parse"),
    [("h200_apps_busy_noheader_nounits.txt", parse_compute_apps), ("h200_query_gpu_noheader_nounits.txt", parse_gpus)],
)
def test_output_without_header_is_an_error(fixture: str, parse: t.Callable[[str], t.Sequence[object]]) -> None:
    """Run with noheader, the first row would be taken for the header and the output read as empty."""
    with pytest.raises(NvidiaSmiError, match=r"in its header line: '(442|0), "):
        parse(fixture_text(fixture))


def test_process_name_with_comma_space_stays_whole() -> None:
    text = APPS_HEADER + "9001, python3 -c import a, b, 512 MiB, GPU-x, 0000:01:00.0\n"
    assert parse_compute_apps(text) == [ComputeApp(pid=9001, gpu_uuid="GPU-x", used_mib=512, name="python3 -c import a, b")]


def test_process_name_with_comma_space_last_field() -> None:
    """In the module's own field order the name is last; the folding follows the header, not a position."""
    text = "pid, gpu_uuid, used_gpu_memory [MiB], process_name\n77, GPU-y, 3, ray::Worker, rank 0\n"
    assert parse_compute_apps(text) == [ComputeApp(pid=77, gpu_uuid="GPU-y", used_mib=3, name="ray::Worker, rank 0")]


def test_too_many_fields_without_process_name_is_an_error() -> None:
    text = "index, name, memory.total [MiB]\n0, NVIDIA, H200, 143771\n"
    with pytest.raises(NvidiaSmiError, match=r"printed 4 fields, expected 3: '0, NVIDIA, H200, 143771'"):
        parse_gpus(text)


def test_query_args() -> None:
    assert query_args("gpu") == [
        "--query-gpu=index,name,uuid,pci.bus_id,driver_version,compute_cap,memory.total,memory.used,memory.free",
        "--format=csv,nounits",
    ]
    assert query_args("compute-apps") == ["--query-compute-apps=pid,gpu_uuid,used_memory,process_name", "--format=csv,nounits"]
    with pytest.raises(ValueError, match="unknown nvidia-smi query 'apps'"):
        query_args("apps")


def test_module_field_order_round_trip() -> None:
    """What nvidia-smi prints for query_args('compute-apps'): used_memory comes back as used_gpu_memory [MiB]."""
    text = "pid, gpu_uuid, used_gpu_memory [MiB], process_name\n118211, " + GB10_UUID + ", 87212, VLLM::EngineCore\n"
    assert parse_compute_apps(text) == [ComputeApp(pid=118211, gpu_uuid=GB10_UUID, used_mib=87212, name="VLLM::EngineCore")]
