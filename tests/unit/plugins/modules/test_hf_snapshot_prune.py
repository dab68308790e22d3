# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests for the hf_snapshot_prune module: main() on a real hub cache of three snapshots (hf_prune_cache)."""

from __future__ import annotations

import json
import os
import typing as t
from pathlib import Path

import pytest
from ansible.module_utils.testing import patch_module_args
from ansible_collections.sparkops.inference.plugins.module_utils._hf_snapshot import check_snapshot
from ansible_collections.sparkops.inference.plugins.modules import hf_snapshot_prune
from ansible_collections.sparkops.inference.tests.unit.plugins.module_utils.hf_prune_cache import (
    CURRENT,
    INCOMPLETE,
    OLD,
    PARTIAL,
    PREVIOUS,
    ThreeSnapshots,
    build_three_snapshots,
)


@pytest.fixture
def cache(tmp_path: Path) -> ThreeSnapshots:
    return build_three_snapshots(tmp_path)


def run_module(args: dict[str, t.Any], capsys: pytest.CaptureFixture[str]) -> dict[str, t.Any]:
    """Run main() and return its JSON result."""
    with patch_module_args(args), pytest.raises(SystemExit):
        hf_snapshot_prune.main()
    return t.cast(dict[str, t.Any], json.loads(capsys.readouterr().out))


def args_for(cache: ThreeSnapshots, **extra: t.Any) -> dict[str, t.Any]:
    return {"repo_id": cache.repo_id, "cache_dir": str(cache.cache_dir), "keep": [CURRENT], **extra}


def test_prune_then_nothing_left_to_prune(cache: ThreeSnapshots, capsys: pytest.CaptureFixture[str]) -> None:
    only_old = cache.blobs_of(OLD) - cache.blobs_of(PREVIOUS, CURRENT)
    freed = cache.size(only_old)
    kept_blobs = cache.blob_names() - only_old

    result = run_module(args_for(cache), capsys)

    assert not result.get("failed"), result
    assert result["changed"] is True
    assert result["kept"] == [CURRENT, PREVIOUS]
    assert result["removed_snapshots"] == [OLD]
    assert result["removed_blobs"] == 2
    assert result["freed_bytes"] == freed
    assert result["removed_refs"] == ["refs/pr/1", "v0.9"]
    assert result["repo_dir"] == str(cache.repo_dir)
    assert "diff" not in result
    assert sorted(p.name for p in (cache.repo_dir / "snapshots").iterdir()) == [CURRENT, PREVIOUS]
    assert cache.blob_names() == kept_blobs
    assert cache.refs() == {"main", "v1.0"}
    assert (cache.blobs_dir / INCOMPLETE).is_file() and (cache.blobs_dir / PARTIAL).is_file()
    for commit in (CURRENT, PREVIOUS):
        assert check_snapshot(cache.repo_id, commit, cache_dir=str(cache.cache_dir)).complete

    tree = cache.tree()
    again = run_module(args_for(cache), capsys)
    assert not again.get("failed"), again
    assert again["changed"] is False
    assert again["kept"] == [CURRENT, PREVIOUS]
    assert again["removed_snapshots"] == [] and again["removed_refs"] == []
    assert again["removed_blobs"] == 0 and again["freed_bytes"] == 0
    assert cache.tree() == tree


def test_check_mode_reports_the_same_and_removes_nothing(cache: ThreeSnapshots, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tree = cache.tree()
    checked = run_module(args_for(cache, _ansible_check_mode=True, _ansible_diff=True), capsys)
    assert not checked.get("failed"), checked
    assert cache.tree() == tree

    real = run_module(args_for(cache, _ansible_diff=True), capsys)
    assert checked == real
    assert checked["changed"] is True
    assert checked["removed_snapshots"] == [OLD] and checked["removed_blobs"] == 2
    assert checked["diff"] == {
        "before_header": str(cache.repo_dir / "snapshots"),
        "after_header": str(cache.repo_dir / "snapshots"),
        "before": f"{CURRENT}\n{PREVIOUS}\n{OLD}\n",
        "after": f"{CURRENT}\n{PREVIOUS}\n",
    }
    assert cache.tree() != tree


def test_keep_previous_and_a_ref(cache: ThreeSnapshots, capsys: pytest.CaptureFixture[str]) -> None:
    result = run_module(args_for(cache, keep=["main"], keep_previous=0), capsys)
    assert result["kept"] == [CURRENT]
    assert result["removed_snapshots"] == [PREVIOUS, OLD]  # sorted
    assert result["removed_blobs"] == 4
    assert cache.refs() == {"main"}


def test_a_symlink_escaping_the_repo_is_refused(cache: ThreeSnapshots, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    outside = tmp_path / "secret"
    outside.write_text("not the cache's")
    link = cache.snapshot(PREVIOUS) / "escape.json"
    link.symlink_to(os.path.relpath(outside, link.parent))
    tree = cache.tree()
    result = run_module(args_for(cache), capsys)
    assert result["failed"] is True
    assert result["changed"] is False
    assert result["msg"] == f"{link} is a symlink out of the repo folder {cache.repo_dir} (to {outside}): refusing to prune"
    assert cache.tree() == tree
    assert outside.read_text() == "not the cache's"


def test_a_snapshot_entry_that_is_a_file_is_refused(cache: ThreeSnapshots, capsys: pytest.CaptureFixture[str]) -> None:
    entry = cache.repo_dir / "snapshots" / ("c" * 40)
    entry.write_text("x")
    result = run_module(args_for(cache), capsys)
    assert result["failed"] is True
    assert result["msg"] == f"{entry} is a file, not a snapshot folder: refusing to prune"
    assert cache.snapshot(OLD).is_dir()


def test_a_keep_that_names_no_snapshot_fails(cache: ThreeSnapshots, capsys: pytest.CaptureFixture[str]) -> None:
    result = run_module(args_for(cache, keep=["a" * 40]), capsys)
    assert result["failed"] is True
    assert "does not exist: refusing to prune what may be the snapshot meant to stay" in result["msg"]
    assert cache.snapshot(OLD).is_dir()


def test_a_model_not_in_the_cache(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    result = run_module({"repo_id": "acme/absent", "cache_dir": str(tmp_path), "keep": [CURRENT]}, capsys)
    assert not result.get("failed"), result
    assert result["changed"] is False and result["kept"] == [] and result["removed_snapshots"] == []


def test_a_removal_that_fails_says_so(cache: ThreeSnapshots, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    def denied(path: str) -> None:
        raise PermissionError(13, "Permission denied", path)

    monkeypatch.setattr(hf_snapshot_prune, "apply_prune", lambda plan: denied(str(cache.repo_dir / "refs" / "v0.9")))
    result = run_module(args_for(cache), capsys)
    assert result["failed"] is True
    assert result["msg"].startswith(f"pruning {cache.repo_dir} failed, some of it may be removed (a rerun removes the rest): ")
    assert "Permission denied" in result["msg"] and "refs/v0.9" in result["msg"]
    assert result["removed_snapshots"] == [OLD]
