# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests for the hf_snapshot module: main() on real hub caches and local dirs built by hf_cache_factory."""

from __future__ import annotations

import json
import typing as t
from pathlib import Path
from unittest.mock import MagicMock, patch

import pytest
from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.testing import patch_module_args
from ansible_collections.sparkops.inference.plugins.modules import hf_snapshot
from ansible_collections.sparkops.inference.tests.unit.plugins.module_utils.hf_cache_factory import (
    COMMIT,
    INDEX,
    REPO_ID,
    build_cache,
    build_local_dir,
    model_files,
    shard_name,
)
from ansible_collections.sparkops.inference.tests.unit.plugins.module_utils.test__hf_snapshot import DEEP_CONFIG, DEEP_SHARD, HUGE_DIMS_SHARD


class Run(t.NamedTuple):
    result: dict[str, t.Any]
    warnings: list[str]


def run_module(args: dict[str, t.Any], capsys: pytest.CaptureFixture[str]) -> Run:
    """Run main() and return its JSON result and its warnings (AnsibleModule.warn is recorded, see test_roce_info)."""
    warn = MagicMock()
    with patch_module_args(args), patch.object(AnsibleModule, "warn", warn), pytest.raises(SystemExit):
        hf_snapshot.main()
    return Run(json.loads(capsys.readouterr().out), [c.args[0] for c in warn.call_args_list])


def test_complete_snapshot(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cache = build_cache(tmp_path)
    result, warnings = run_module({"repo_id": REPO_ID, "cache_dir": str(cache.cache_dir)}, capsys)
    assert not result.get("failed"), result
    assert result["changed"] is False
    assert warnings == []
    assert result["complete"] is True
    assert result["commit"] == COMMIT
    assert result["snapshot_path"] == str(cache.snapshot)
    assert result["shards"] == 3
    assert result["architectures"] == ["TinyLlmForCausalLM"]
    assert result["missing"] == [] and result["corrupt"] == [] and result["problems"] == []
    assert result["mode"] == "quick" and result["hashed_files"] == 0
    assert len(result["files"]) == 8


def test_incomplete_snapshot_fails_with_the_fields(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cache = build_cache(tmp_path)
    cache.remove(shard_name(2, 3))
    result = run_module({"repo_id": REPO_ID, "cache_dir": str(cache.cache_dir)}, capsys).result
    assert result["failed"] is True
    assert result["changed"] is False
    assert result["msg"] == (
        f"{REPO_ID} at revision main is incomplete in {cache.snapshot} (quick check, 1 problem): {shard_name(2, 3)} is missing (a shard named in {INDEX})"
    )
    assert result["complete"] is False
    assert result["missing"] == [shard_name(2, 3)]
    assert result["commit"] == COMMIT


def test_incomplete_snapshot_without_failing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cache = build_cache(tmp_path)
    result = run_module({"repo_id": REPO_ID, "cache_dir": str(cache.cache_dir), "revision": "v9", "fail_on_incomplete": False}, capsys).result
    assert not result.get("failed"), result
    assert result["complete"] is False
    assert result["commit"] is None
    assert result["problems"][0].startswith(f"revision 'v9' of {REPO_ID} is not in the cache")


def test_many_problems_are_cut_at_twenty(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cache = build_cache(tmp_path, shards=24)
    for i in range(1, 25):
        cache.remove(shard_name(i, 24))
    result = run_module({"repo_id": REPO_ID, "cache_dir": str(cache.cache_dir)}, capsys).result
    assert result["failed"] is True
    assert "(quick check, 24 problems)" in result["msg"]
    assert result["msg"].count(" is missing ") == 20
    assert result["msg"].endswith("; and 4 more")
    assert len(result["missing"]) == 24


def test_full_mode_writes_the_manifest_but_not_in_check_mode(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cache = build_cache(tmp_path)
    manifest = cache.repo_dir / ".sparkops-verified.json"
    args = {"repo_id": REPO_ID, "cache_dir": str(cache.cache_dir), "mode": "full", "hash_workers": 2}
    result = run_module({**args, "_ansible_check_mode": True}, capsys).result
    assert not result.get("failed"), result
    assert result["complete"] is True and result["hashed_files"] == 8
    assert result["manifest_written"] is False
    assert not manifest.exists()
    result = run_module(args, capsys).result
    assert result["changed"] is False
    assert result["manifest_written"] is True and result["manifest_path"] == str(manifest)
    assert manifest.is_file()
    result = run_module(args, capsys).result
    assert (result["hashed_files"], result["reused_files"]) == (0, 8)


def test_local_dir(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    local = build_local_dir(tmp_path)
    result = run_module({"repo_id": REPO_ID, "local_dir": str(local.path), "mode": "full", "manifest": False}, capsys).result
    assert not result.get("failed"), result
    assert result["source"] == "local_dir"
    assert result["commit"] == COMMIT
    assert result["manifest_path"] is None


def test_default_cache_from_the_environment(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    cache = build_cache(tmp_path)
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.delenv("HUGGINGFACE_HUB_CACHE", raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path))  # build_cache writes <tmp_path>/hub
    result = run_module({"repo_id": REPO_ID}, capsys).result
    assert not result.get("failed"), result
    assert result["root"] == str(cache.repo_dir)


def test_warnings_are_passed_on(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cache = build_cache(tmp_path)
    (cache.repo_dir / "blobs" / f"{'a' * 64}.incomplete").write_bytes(b"")
    result, warnings = run_module({"repo_id": REPO_ID, "cache_dir": str(cache.cache_dir)}, capsys)
    assert result["complete"] is True
    assert warnings == [f"blobs/{'a' * 64}.incomplete: a partial download of no file of this snapshot (another revision, or a download in progress)"]


def test_a_total_size_mismatch_warns_and_does_not_fail(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """No loader reads the index's metadata.total_size: the task passes, warns, and lists nothing for model_sync to repair."""
    files = model_files(tmp_path / "staging")
    index = json.loads(files[INDEX])
    total = index["metadata"]["total_size"]
    index["metadata"]["total_size"] = total + 2
    files[INDEX] = json.dumps(index).encode()
    cache = build_cache(tmp_path, files=files)
    result, warnings = run_module({"repo_id": REPO_ID, "cache_dir": str(cache.cache_dir), "mode": "full", "manifest": False}, capsys)
    assert not result.get("failed"), result
    assert result["complete"] is True
    assert result["corrupt"] == [] and result["missing"] == [] and result["problems"] == []
    assert (result["index_total_size"], result["tensor_bytes"], result["index_total_size_matches"]) == (total + 2, total, False)
    assert warnings == [
        f"{INDEX}: metadata.total_size is {total + 2} bytes, but the 3 shard(s) hold {total} bytes of tensor data;"
        " no loader reads it, so the snapshot still loads"
    ]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"repo_id": "not a repo"}, "repo_id 'not a repo' is not a Hugging Face repo id such as 'Qwen/Qwen3.5-122B-A10B-FP8'"),
        ({"repo_id": REPO_ID, "hash_workers": 0}, "hash_workers must be at least 1, not 0"),
        ({"repo_id": REPO_ID, "required_files": ["../secret"]}, "required_files entry '../secret': '../secret' is not a path relative to the snapshot"),
        ({"repo_id": REPO_ID, "cache_dir": "/a", "local_dir": "/b"}, "parameters are mutually exclusive: cache_dir|local_dir"),
        ({"repo_id": REPO_ID, "mode": "deep"}, "value of mode must be one of: quick, full, got: deep"),
    ],
)
def test_bad_arguments(capsys: pytest.CaptureFixture[str], args: dict[str, t.Any], message: str) -> None:
    result = run_module(args, capsys).result
    assert result["failed"] is True
    assert result["msg"] == message
    assert "complete" not in result


def test_hostile_files_fail_the_module_naming_each(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 15: a shard of 10**30 dims (OverflowError), one nested 100,000 levels deep and a config.json as deep
    (RecursionError) and an index total_size of 1e400 (OverflowError) each raised out of the module."""
    files = model_files(tmp_path / "staging")
    files[shard_name(1, 3)] = HUGE_DIMS_SHARD
    files[shard_name(2, 3)] = DEEP_SHARD
    files["config.json"] = DEEP_CONFIG
    index = json.loads(files[INDEX])
    index["metadata"]["total_size"] = 424242
    files[INDEX] = json.dumps(index).encode().replace(b"424242", b"1e400")
    cache = build_cache(tmp_path, files=files)
    result, warnings = run_module({"repo_id": REPO_ID, "cache_dir": str(cache.cache_dir)}, capsys)
    assert result["failed"] is True and result["complete"] is False
    assert [c["path"] for c in result["corrupt"]] == ["config.json", shard_name(1, 3), shard_name(2, 3)]
    assert result["msg"].startswith(f"{REPO_ID} at revision main is incomplete in {cache.snapshot} (quick check, 3 problems): config.json: not a readable")
    assert f"{shard_name(1, 3)}: bad safetensors file: tensor 'w': shape holds 1000000000000000000000000000000, more than 64 bits hold" in result["msg"]
    assert f"{shard_name(2, 3)}: bad safetensors file: the header is nested too deeply" in result["msg"]
    assert warnings == [f"{INDEX}: metadata.total_size is inf, not a byte count; no loader reads it, so the snapshot still loads"]
    assert result["index_total_size"] is None
