# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests for the _meminfo module util: /proc/meminfo of a GB10 and of the H200 machine, in MiB."""

from __future__ import annotations

import pytest
from ansible_collections.sparkops.inference.plugins.module_utils._meminfo import Meminfo, MeminfoError, parse_meminfo
from proc_tree import fixture_text


def test_gb10() -> None:
    info = parse_meminfo(fixture_text("gb10_meminfo.txt"))
    # 127600748 kB MemTotal, 118566368 kB MemAvailable, Cached 20512324 + Buffers 81536 kB.
    assert info == Meminfo(total_mib=124610, available_mib=115787, free_mib=96399, page_cache_mib=20111, shmem_mib=352, swap_free_mib=16383)
    assert info.as_dict() == {
        "total_mib": 124610,
        "available_mib": 115787,
        "free_mib": 96399,
        "page_cache_mib": 20111,
        "shmem_mib": 352,
        "swap_free_mib": 16383,
    }


def test_h200() -> None:
    info = parse_meminfo(fixture_text("h200_proc_meminfo.txt"))
    assert info == Meminfo(total_mib=128887, available_mib=127927, free_mib=126279, page_cache_mib=1864, shmem_mib=17, swap_free_mib=0)


def test_lines_without_kb_and_odd_lines_are_ignored() -> None:
    text = "MemTotal:  2048 kB\nHugePages_Total:       0\nnonsense\nMemAvailable: 1024 kB\nActive(anon):  52 kB\n"
    assert parse_meminfo(text) == Meminfo(total_mib=2, available_mib=1, free_mib=0, page_cache_mib=0, shmem_mib=0, swap_free_mib=0)


def test_missing_memavailable_is_an_error() -> None:
    text = "\n".join(line for line in fixture_text("gb10_meminfo.txt").splitlines() if not line.startswith("MemAvailable:"))
    with pytest.raises(MeminfoError, match=r"^/proc/meminfo has no MemAvailable \(kernel older than 3\.14\?\)$"):
        parse_meminfo(text)


def test_empty_is_an_error_naming_both() -> None:
    with pytest.raises(MeminfoError, match="has no MemTotal or MemAvailable"):
        parse_meminfo("")
