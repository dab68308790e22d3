# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests for the model_metadata module: main() on real hub caches built by hf_cache_factory, and against the
lab's Hub stand-in (started as in the module util's tests)."""

from __future__ import annotations

import json
import os
import socket
import typing as t
from pathlib import Path
from unittest.mock import MagicMock, patch

import pytest
from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.testing import patch_module_args
from ansible_collections.sparkops.inference.plugins.modules import model_metadata
from ansible_collections.sparkops.inference.tests.unit.plugins.module_utils.hf_cache_factory import COMMIT, REPO_ID, build_cache, model_files, shard_name
from ansible_collections.sparkops.inference.tests.unit.plugins.module_utils.test__hf_snapshot import DEEP_CONFIG
from ansible_collections.sparkops.inference.tests.unit.plugins.module_utils.test__model_metadata import (
    GATED,
    TINY,
    TINY_SHARD_BYTES,
    TOKEN,
    Served,
    serve,
    tiny_cache_metadata,
)

RETURNED = {"source", "commit", "config", "weight_bytes", "snapshot_bytes", "files", "present_bytes", "architecture"}


class Run(t.NamedTuple):
    result: dict[str, t.Any]
    warnings: list[str]
    output: str


def run_module(args: dict[str, t.Any], capsys: pytest.CaptureFixture[str]) -> Run:
    """Run main() and return its JSON result, its warnings and its raw output (AnsibleModule.warn recorded)."""
    warn = MagicMock()
    with patch_module_args(args), patch.object(AnsibleModule, "warn", warn), pytest.raises(SystemExit):
        model_metadata.main()
    output = capsys.readouterr().out
    return Run(json.loads(output), [c.args[0] for c in warn.call_args_list], output)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> t.Iterator[Served]:
    yield from serve(tmp_path_factory.mktemp("hub"))


def unreachable() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}"


def tree_of(folder: Path) -> dict[str, tuple[int, float]]:
    """Every entry under ``folder`` with its size and mtime (links not followed)."""
    found = {}
    for top, dirs, files in os.walk(folder):
        for name in dirs + files:
            st = os.lstat(os.path.join(top, name))
            found[os.path.relpath(os.path.join(top, name), folder)] = (st.st_size, st.st_mtime)
    return found


def test_cache(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cache = build_cache(tmp_path)
    result, warnings, _output = run_module({"repo_id": REPO_ID, "cache_dir": str(cache.cache_dir), "endpoint": unreachable()}, capsys)
    assert not result.get("failed"), result
    assert result["changed"] is False
    assert warnings == []
    assert {key: result[key] for key in RETURNED} == tiny_cache_metadata(cache)


@pytest.mark.parametrize("check_mode", [False, True])
def test_check_mode_reads_and_writes_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str], check_mode: bool) -> None:
    cache = build_cache(tmp_path, refs=("main", "v1.0"))
    before = tree_of(cache.cache_dir)
    args = {"repo_id": REPO_ID, "revision": "v1.0", "cache_dir": str(cache.cache_dir), "endpoint": unreachable(), "_ansible_check_mode": check_mode}
    result = run_module(args, capsys).result
    assert not result.get("failed"), result
    assert (result["changed"], result["source"], result["commit"], result["weight_bytes"]) == (False, "cache", COMMIT, 3 * TINY_SHARD_BYTES)
    assert tree_of(cache.cache_dir) == before


def test_hub_in_check_mode(served: Served, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo = served.repos[TINY]
    cache = build_cache(tmp_path, repo_id=TINY, commit=repo.commit, files=repo.files)
    cache.remove(shard_name(1, 3))
    args = {"repo_id": TINY, "cache_dir": str(cache.cache_dir), "endpoint": served.hub.url, "_ansible_check_mode": True}
    result = run_module(args, capsys).result
    assert not result.get("failed"), result
    assert (result["source"], result["commit"], result["weight_bytes"], result["files"]) == ("hub", repo.commit, 3 * TINY_SHARD_BYTES, 8)
    assert result["present_bytes"] == result["snapshot_bytes"] - len(repo.files[shard_name(1, 3)])
    assert not (cache.snapshot / shard_name(1, 3)).exists()  # nothing was downloaded


def test_gated_warnings_and_token(served: Served, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = {"repo_id": GATED, "cache_dir": str(tmp_path), "endpoint": served.hub.url, "token": TOKEN}
    result, warnings, output = run_module(args, capsys)
    assert not result.get("failed"), result
    assert result["source"] == "hub" and result["present_bytes"] == 0
    assert warnings == ["model.safetensors.index.json has no metadata.total_size: the weight bytes were read from the 3 shards' headers"]
    assert TOKEN not in output


def test_gated_without_token_fails(served: Served, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    result = run_module({"repo_id": GATED, "cache_dir": str(tmp_path), "endpoint": served.hub.url}, capsys).result
    assert result["failed"] is True and result["changed"] is False
    assert result["msg"].startswith(f"{GATED} at revision main from {served.hub.url}: gated or private: give model_sync_hf_token (HTTP 401")
    assert "cannot answer" in result["msg"]
    assert "source" not in result


def test_unreachable_fails_without_the_token(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    endpoint = unreachable()
    result, _warnings, output = run_module(
        {"repo_id": REPO_ID, "revision": "v2", "cache_dir": str(tmp_path), "endpoint": endpoint, "token": TOKEN, "timeout": 5}, capsys
    )
    assert result["failed"] is True
    assert result["msg"].startswith(f"{REPO_ID} at revision v2 from {endpoint}: {endpoint} is unreachable from this host: connection refused")
    assert TOKEN not in output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"timeout": 0}, "timeout must be at least 1, not 0"),
        ({"endpoint": "huggingface.co"}, "endpoint must be an http:// or https:// URL, not 'huggingface.co'"),
        ({"repo_id": "a--b"}, "repo_id 'a--b' is not a Hugging Face repo id"),
    ],
)
def test_bad_arguments(tmp_path: Path, capsys: pytest.CaptureFixture[str], args: dict[str, t.Any], message: str) -> None:
    result = run_module({"repo_id": REPO_ID, "cache_dir": str(tmp_path), **args}, capsys).result
    assert result["failed"] is True
    assert result["msg"].startswith(message)


def test_argument_spec_matches_the_documentation() -> None:
    import yaml

    documented = yaml.safe_load(model_metadata.DOCUMENTATION)["options"]
    captured: dict[str, t.Any] = {}

    def capture(self: AnsibleModule, argument_spec: dict[str, t.Any], **kwargs: t.Any) -> None:
        captured.update(argument_spec)
        raise SystemExit(0)

    with patch.object(AnsibleModule, "__init__", capture), pytest.raises(SystemExit):
        model_metadata.main()
    assert set(captured) == set(documented)
    for name, spec in captured.items():
        doc = documented[name]
        assert spec["type"] == doc["type"], name
        assert spec.get("required", False) == doc.get("required", False), name
        assert spec.get("default") == doc.get("default"), name
        assert spec.get("no_log", False) == (name == "token"), name


def test_a_hostile_snapshot_fails_the_module_naming_the_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 15: a config.json nested 100,000 levels deep raised RecursionError out of the module."""
    files = model_files(tmp_path / "staging")
    files["config.json"] = DEEP_CONFIG
    cache = build_cache(tmp_path, files=files)
    endpoint = unreachable()
    result = run_module({"repo_id": REPO_ID, "cache_dir": str(cache.cache_dir), "endpoint": endpoint, "timeout": 5}, capsys).result
    assert result["failed"] is True and "config" not in result
    assert result["msg"].startswith(f"{REPO_ID} at revision main from {endpoint}: {endpoint} is unreachable from this host")
    assert result["msg"].endswith(f"and the cache {cache.cache_dir} cannot answer: config.json: not a readable JSON file: nested more than 64 levels deep")
