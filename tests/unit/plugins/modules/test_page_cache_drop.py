# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests for the page_cache_drop module: main() with /proc/meminfo and drop_caches as files in tmp_path."""

from __future__ import annotations

import json
import typing as t
from pathlib import Path
from unittest.mock import MagicMock, patch

import pytest
from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.testing import patch_module_args
from ansible_collections.sparkops.inference.plugins.modules import page_cache_drop

MEMINFO = "MemTotal: 127600748 kB\nMemAvailable: 118566368 kB\nBuffers: {buffers} kB\nCached: {cached} kB\n"


class Run(t.NamedTuple):
    result: dict[str, t.Any]
    warnings: list[str]
    sync: MagicMock


def run_module(args: dict[str, t.Any], tmp_path: Path, capsys: pytest.CaptureFixture[str], writable: bool = True) -> Run:
    meminfo = tmp_path / "meminfo"
    meminfo.write_text(MEMINFO.format(buffers=1024, cached=20 * 1024 * 1024))
    drop = tmp_path / "drop_caches"
    if writable:
        drop.write_text("0\n")
    else:
        drop.mkdir()  # writing a directory fails like a read-only /proc/sys

    def dropped(*_args: t.Any, **_kwargs: t.Any) -> None:
        meminfo.write_text(MEMINFO.format(buffers=0, cached=512 * 1024))

    warn = MagicMock()
    sync = MagicMock(side_effect=dropped if writable else None)
    with (
        patch_module_args(args),
        patch.object(page_cache_drop, "MEMINFO", meminfo),
        patch.object(page_cache_drop, "DROP_CACHES", drop),
        patch.object(page_cache_drop.os, "sync", sync),
        patch.object(AnsibleModule, "warn", warn),
        pytest.raises(SystemExit),
    ):
        page_cache_drop.main()
    result = json.loads(capsys.readouterr().out)
    if writable and not result.get("failed") and not args.get("_ansible_check_mode"):
        assert drop.read_text() == "3\n"
    return Run(result, [c.args[0] for c in warn.call_args_list], sync)


def test_drops_and_reports_what_it_freed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = run_module({}, tmp_path, capsys)
    assert run.result["dropped"] is True and run.result["changed"] is False
    assert run.result["page_cache_before_mib"] == 20481
    assert run.result["page_cache_after_mib"] == 512
    assert run.result["freed_mib"] == 20481 - 512
    run.sync.assert_called_once()


def test_check_mode_drops_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = run_module({"_ansible_check_mode": True}, tmp_path, capsys)
    assert run.result["dropped"] is False and run.result["freed_mib"] == 0
    assert (tmp_path / "drop_caches").read_text() == "0\n"
    run.sync.assert_not_called()


def test_read_only_proc_sys_warns(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = run_module({}, tmp_path, capsys, writable=False)
    assert run.result["dropped"] is False and not run.result.get("failed")
    assert len(run.warnings) == 1 and "page cache not dropped: cannot write" in run.warnings[0]


def test_read_only_proc_sys_fails_when_required(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = run_module({"required": True}, tmp_path, capsys, writable=False)
    assert run.result["failed"] is True
    assert "page cache not dropped: cannot write" in run.result["msg"]
