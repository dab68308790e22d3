# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The nccl_check filter: wiring to the _nccl_check module util over a recorded log, and errors that name the filter."""

from __future__ import annotations

import typing as t
from pathlib import Path

import pytest
from ansible.errors import AnsibleFilterError
from ansible_collections.sparkops.inference.plugins.filter.nccl_check import FilterModule

nccl_check = FilterModule().filters()["nccl_check"]
LOGS = Path(__file__).resolve().parents[2] / "fixtures" / "nccl_logs"


def test_filter_reads_the_h200_log_and_judges_it() -> None:
    result = nccl_check((LOGS / "h200-2026-12-03-system.log").read_text(encoding="utf-8"), expect="socket")
    assert (result["nccl_version"], result["network"], result["interfaces"], result["failures"]) == ("2.28.3", "Socket", ["eth0"], [])
    failures = nccl_check((LOGS / "h200-2026-12-03-system.log").read_text(encoding="utf-8"), node="h200")
    assert failures["failures"] == ["h200: NCCL used network Socket, expected IB (NCCL 2.28.3)"]


@pytest.mark.parametrize(("value", "kwargs"), [(None, {}), (["log"], {}), ("", {"expect": "nvlink"}), ("", {"min_busbw_gbps": "fast"})])
def test_filter_errors_name_the_filter(value: t.Any, kwargs: dict[str, t.Any]) -> None:
    with pytest.raises(AnsibleFilterError, match="sparkops.inference.nccl_check"):
        nccl_check(value, **kwargs)
