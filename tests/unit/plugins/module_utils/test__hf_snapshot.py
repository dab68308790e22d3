# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests for the _hf_snapshot module util, on real hub caches and local dirs built by hf_cache_factory.

Where huggingface_hub is installed, the layout the factory writes and the resolution the module util does are
cross-checked against huggingface_hub's own readers (scan_cache_dir, try_to_load_from_cache, the local-dir paths).
"""

from __future__ import annotations

import importlib.util
import json
import os
import struct
import subprocess
import sys
import time
import typing as t
from pathlib import Path

import pytest
from ansible_collections.sparkops.inference.plugins.module_utils import _hf_snapshot
from ansible_collections.sparkops.inference.plugins.module_utils._hf_snapshot import (
    MAX_LISTED,
    SnapshotError,
    SnapshotReport,
    _walk,
    check_snapshot,
    default_cache_dir,
    local_short_hash,
    parse_required,
    validate_repo_id,
)
from ansible_collections.sparkops.inference.tests.unit.plugins.module_utils.hf_cache_factory import (
    COMMIT,
    INDEX,
    OTHER_COMMIT,
    REPO_ID,
    HubCache,
    build_cache,
    build_local_dir,
    model_files,
    shard_name,
)

HAVE_HF_HUB = importlib.util.find_spec("huggingface_hub") is not None
SHARD_1, SHARD_2, SHARD_3 = (shard_name(i, 3) for i in (1, 2, 3))
ALL_FILES = ["config.json", "generation_config.json", SHARD_1, SHARD_2, SHARD_3, INDEX, "tokenizer.json", "tokenizer_config.json"]


def check(cache: HubCache, revision: str = "main", **kwargs: t.Any) -> SnapshotReport:
    return check_snapshot(cache.repo_id, revision, cache_dir=str(cache.cache_dir), **kwargs)


def same_size_corruption(path: Path, offset_from_end: int = 3) -> None:
    """Flip one byte of tensor data in place: the size and the header stay right."""
    with path.open("r+b") as f:
        f.seek(-offset_from_end, os.SEEK_END)
        byte = f.read(1)
        f.seek(-offset_from_end, os.SEEK_END)
        f.write(bytes([byte[0] ^ 0xFF]))


# --- where the cache is ----------------------------------------------------------------------------------------

ENV_CASES: list[tuple[dict[str, str], str]] = [
    ({}, "/home/u/.cache/huggingface/hub"),
    ({"XDG_CACHE_HOME": "/xdg"}, "/xdg/huggingface/hub"),
    ({"HF_HOME": "~/hf", "XDG_CACHE_HOME": "/xdg"}, "/home/u/hf/hub"),
    ({"HF_HOME": "$DATA/hf", "DATA": "/data"}, "/data/hf/hub"),
    ({"HUGGINGFACE_HUB_CACHE": "/legacy/hub", "HF_HOME": "/x"}, "/legacy/hub"),
    ({"HF_HUB_CACHE": "/fast/hub", "HUGGINGFACE_HUB_CACHE": "/legacy/hub", "HF_HOME": "/x"}, "/fast/hub"),
    ({"HF_HUB_CACHE": "~/hub"}, "/home/u/hub"),
]
HF_ENV = ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_HOME", "XDG_CACHE_HOME", "DATA")


@pytest.mark.parametrize(("env", "expected"), ENV_CASES)
def test_default_cache_dir(monkeypatch: pytest.MonkeyPatch, env: dict[str, str], expected: str) -> None:
    for name in HF_ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", "/home/u")
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert default_cache_dir() == expected


def test_default_cache_dir_agrees_with_huggingface_hub() -> None:
    """huggingface_hub.constants.HF_HUB_CACHE, computed afresh in a clean process for each environment."""
    if not HAVE_HF_HUB:
        pytest.skip("huggingface_hub is not installed")
    script = (
        "import importlib, json, os, sys\n"
        "from huggingface_hub import constants\n"
        "out = []\n"
        "for env in json.loads(sys.argv[1]):\n"
        f"    for name in {HF_ENV!r}: os.environ.pop(name, None)\n"
        "    os.environ.update(env); os.environ['HOME'] = '/home/u'\n"
        "    out.append(importlib.reload(constants).HF_HUB_CACHE)\n"
        "print(json.dumps(out))\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in HF_ENV}
    done = subprocess.run([sys.executable, "-c", script, json.dumps([case[0] for case in ENV_CASES])], env=env, capture_output=True, text=True, check=True)
    assert json.loads(done.stdout) == [case[1] for case in ENV_CASES]


def test_default_cache_dir_is_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = build_cache(tmp_path)
    monkeypatch.setenv("HF_HUB_CACHE", str(cache.cache_dir))
    report = check_snapshot(REPO_ID, "main")
    assert report.complete, report.problems
    assert report.root == str(cache.repo_dir)


# --- a complete snapshot ---------------------------------------------------------------------------------------


def test_complete_cache_snapshot(tmp_path: Path) -> None:
    cache = build_cache(tmp_path)
    report = check(cache)
    result = report.as_dict()
    assert result["complete"] is True
    assert result["problems"] == [] and result["missing"] == [] and result["corrupt"] == []
    assert result["commit"] == COMMIT
    assert result["source"] == "cache_dir"
    assert result["snapshot_path"] == str(cache.snapshot)
    assert result["refs"] == {"main": COMMIT}
    assert [f["path"] for f in result["files"]] == ALL_FILES
    assert {f["path"]: f["etag"] for f in result["files"]} == cache.etags
    assert {f["path"]: f["size"] for f in result["files"]} == {p: len(d) for p, d in cache.files.items()}
    assert result["total_bytes"] == sum(len(d) for d in cache.files.values())
    assert result["architectures"] == ["TinyLlmForCausalLM"]
    assert result["shards"] == 3
    index = json.loads(cache.files[INDEX])
    assert result["index_total_size"] == result["tensor_bytes"] == index["metadata"]["total_size"] > 0
    assert result["index_total_size_matches"] is True
    assert (result["hashed_files"], result["hashed_bytes"], result["reused_files"]) == (0, 0, 0)
    assert result["manifest_path"] is None and result["manifest_written"] is False
    assert result["incomplete_files"] == [] and result["unverified"] == []


def test_layout_agrees_with_huggingface_hub(tmp_path: Path) -> None:
    cache = build_cache(tmp_path, refs=("main", "v1.0", "refs/pr/1"))
    report = check(cache, "v1.0")
    assert report.complete, report.problems
    if not HAVE_HF_HUB:
        pytest.skip("huggingface_hub is not installed: the cross-check is skipped")
    from huggingface_hub import scan_cache_dir, try_to_load_from_cache

    info = scan_cache_dir(cache.cache_dir)
    assert info.warnings == []
    (repo,) = info.repos
    assert repo.repo_id == REPO_ID
    (revision,) = repo.revisions
    assert revision.commit_hash == report.commit
    assert set(revision.refs) == set(report.refs) == {"main", "v1.0", "refs/pr/1"}
    assert str(revision.snapshot_path) == report.snapshot_path
    assert sorted(f.file_name for f in revision.files) == [f.path for f in report.files]
    assert revision.size_on_disk == report.total_bytes
    for ref in ("main", "v1.0", "refs/pr/1", COMMIT):
        assert try_to_load_from_cache(REPO_ID, "config.json", cache_dir=cache.cache_dir, revision=ref) == os.path.join(report.snapshot_path, "config.json")


@pytest.mark.parametrize("revision", ["v1.0", "refs/pr/1", COMMIT])
def test_tags_pull_requests_and_commits_resolve(tmp_path: Path, revision: str) -> None:
    cache = build_cache(tmp_path, refs=("main", "v1.0", "refs/pr/1"))
    report = check(cache, revision)
    assert report.complete, report.problems
    assert report.commit == COMMIT


def test_nested_files_and_single_weights_file(tmp_path: Path) -> None:
    files = model_files(tmp_path / "staging", single=True)
    files["original/params.json"] = b'{"dim": 8}\n'
    cache = build_cache(tmp_path, files=files)
    assert os.readlink(cache.link("original/params.json")).startswith("../../../blobs/")
    report = check(cache)
    assert report.complete, report.problems
    assert report.shards == 1
    assert report.index_total_size is None and report.index_total_size_matches is None
    assert report.tensor_bytes is not None and report.tensor_bytes > 0
    assert "original/params.json" in [f.path for f in report.files]


@pytest.mark.parametrize(
    ("tokenizer_files", "complete"),
    [
        (["tokenizer.json"], True),
        (["tokenizer.model"], True),
        (["vocab.json", "merges.txt"], True),
        (["vocab.json"], False),
        ([], False),
    ],
)
def test_tokenizer_alternatives(tmp_path: Path, tokenizer_files: list[str], complete: bool) -> None:
    files = model_files(tmp_path / "staging")
    del files["tokenizer.json"]
    files.update(dict.fromkeys(tokenizer_files, b"tok\n"))
    report = check(build_cache(tmp_path, files=files))
    assert report.complete is complete
    if not complete:
        assert report.missing == ["tokenizer.json"]
        assert report.problems == ["tokenizer.json is missing (or tokenizer.model, or vocab.json + merges.txt)"]


def test_required_files_option(tmp_path: Path) -> None:
    cache = build_cache(tmp_path, omit=["tokenizer.json", "tokenizer_config.json"])
    assert check(cache, required_files=["config.json"]).complete
    report = check(cache, required_files=["config.json", "preprocessor_config.json", "chat_template.jinja|tokenizer_config.json"])
    assert report.missing == ["preprocessor_config.json", "chat_template.jinja"]


@pytest.mark.parametrize("spec", [["a|"], ["/etc/passwd"], ["../x"], ["a+ +b"]])
def test_bad_required_files(spec: list[str]) -> None:
    with pytest.raises(SnapshotError, match="is not a path relative to the snapshot"):
        parse_required(spec)


def test_parse_required() -> None:
    assert parse_required(["config.json", "tokenizer.json|vocab.json+merges.txt"]) == [[["config.json"]], [["tokenizer.json"], ["vocab.json", "merges.txt"]]]


@pytest.mark.parametrize("repo_id", ["", "a/b/c", "a--b/c", "a/../b", "has space/x", "-lead/x"])
def test_bad_repo_ids(repo_id: str) -> None:
    with pytest.raises(SnapshotError, match="is not a Hugging Face repo id"):
        validate_repo_id(repo_id)


@pytest.mark.parametrize("repo_id", ["gpt2", "Qwen/Qwen3.5-122B-A10B-FP8", "meta-llama/Llama-3.1-8B_x"])
def test_good_repo_ids(repo_id: str) -> None:
    validate_repo_id(repo_id)


# --- revisions that do not resolve -------------------------------------------------------------------------------


def test_unknown_revision_lists_the_known_refs(tmp_path: Path) -> None:
    cache = build_cache(tmp_path, refs=("main", "v1.0"))
    report = check(cache, "v2.0")
    assert report.complete is False
    assert report.commit is None and report.snapshot_path is None
    assert report.problems == [
        f"revision 'v2.0' of {REPO_ID} is not in the cache {cache.repo_dir}: no refs/v2.0 and not a 40-hex commit;"
        f" known refs: main ({COMMIT[:12]}), v1.0 ({COMMIT[:12]}); snapshots: {COMMIT}"
    ]
    assert report.files == []
    assert REPO_ID in report.message() and "v2.0" in report.message()


def test_commit_not_in_the_cache(tmp_path: Path) -> None:
    cache = build_cache(tmp_path)
    report = check(cache, OTHER_COMMIT)
    assert report.complete is False
    assert report.commit == OTHER_COMMIT
    assert report.problems == [f"commit {OTHER_COMMIT} is not in the cache: {cache.repo_dir / 'snapshots' / OTHER_COMMIT} does not exist"]


def test_ref_to_a_missing_snapshot(tmp_path: Path) -> None:
    cache = build_cache(tmp_path)
    (cache.repo_dir / "refs" / "main").write_text(OTHER_COMMIT)
    report = check(cache)
    assert report.problems == [f"refs/main points to commit {OTHER_COMMIT}, but {cache.repo_dir / 'snapshots' / OTHER_COMMIT} does not exist"]


def test_ref_that_is_not_a_commit(tmp_path: Path) -> None:
    cache = build_cache(tmp_path)
    (cache.repo_dir / "refs" / "main").write_text("garbage")
    assert check(cache).problems == [f"refs/main of {REPO_ID} holds 'garbage', not a commit hash"]


def test_repo_not_in_the_cache(tmp_path: Path) -> None:
    cache = build_cache(tmp_path)
    report = check_snapshot("acme/other", "main", cache_dir=str(cache.cache_dir))
    assert report.problems == [f"acme/other is not in the Hugging Face cache: {cache.cache_dir / 'models--acme--other'} does not exist"]
    report = check_snapshot(REPO_ID, "main", cache_dir=str(tmp_path / "nowhere"))
    assert report.problems == [f"{REPO_ID} is not in the Hugging Face cache: the cache folder {tmp_path / 'nowhere'} does not exist"]


# --- broken snapshots ------------------------------------------------------------------------------------------


def test_missing_shard(tmp_path: Path) -> None:
    cache = build_cache(tmp_path)
    cache.remove(SHARD_2)
    report = check(cache)
    assert report.complete is False
    assert report.missing == [SHARD_2]
    assert report.corrupt == []
    assert report.problems == [f"{SHARD_2} is missing (a shard named in {INDEX})"]
    assert report.tensor_bytes is None


def test_truncated_shard(tmp_path: Path) -> None:
    cache = build_cache(tmp_path)
    blob = cache.blob(SHARD_1)
    size = blob.stat().st_size
    with blob.open("r+b") as f:
        f.truncate(size - 10)
    report = check(cache)
    assert report.complete is False
    assert [c.path for c in report.corrupt] == [SHARD_1]
    assert report.corrupt[0].reason.startswith(f"bad safetensors file: truncated: {size - 10} bytes, the header says {size} ")
    assert report.missing == []


def test_same_size_corruption_is_found_only_by_full(tmp_path: Path) -> None:
    cache = build_cache(tmp_path)
    same_size_corruption(cache.blob(SHARD_3))
    assert check(cache).complete is True
    report = check(cache, mode="full", hash_workers=2)
    assert report.complete is False
    assert [c.path for c in report.corrupt] == [SHARD_3]
    assert report.corrupt[0].reason.startswith("content does not match its etag: sha256 is ")
    assert report.corrupt[0].reason.endswith(f", the etag {cache.etags[SHARD_3][:16]}...")
    assert report.hashed_files == len(ALL_FILES)
    assert report.hashed_bytes == report.total_bytes


def test_small_file_corruption_uses_the_git_blob_sha1(tmp_path: Path) -> None:
    cache = build_cache(tmp_path)
    blob = cache.blob("generation_config.json")
    blob.write_bytes(blob.read_bytes().replace(b"1", b"7"))
    report = check(cache, mode="full")
    assert [c.path for c in report.corrupt] == ["generation_config.json"]
    assert "git-sha1 is " in report.corrupt[0].reason


def test_dangling_symlink(tmp_path: Path) -> None:
    cache = build_cache(tmp_path)
    cache.blob("tokenizer.json").unlink()
    report = check(cache)
    assert report.complete is False
    assert [c.as_dict() for c in report.corrupt] == [{"path": "tokenizer.json", "reason": f"dangling symlink to ../../blobs/{cache.etags['tokenizer.json']}"}]
    assert report.missing == []  # there, but broken: not also missing
    assert next(f for f in report.files if f.path == "tokenizer.json").size is None


def test_interrupted_download_of_a_shard(tmp_path: Path) -> None:
    """hf download was stopped during shard 2: no symlink, no blob, a partial blob (huggingface_hub 1.x name)."""
    cache = build_cache(tmp_path)
    etag = cache.etags[SHARD_2]
    cache.remove(SHARD_2)
    (cache.repo_dir / "blobs" / f"{etag}.1a2b3c4d.incomplete").write_bytes(b"partial")
    report = check(cache)
    assert report.complete is False
    assert report.missing == [SHARD_2]
    assert report.incomplete_files == [f"blobs/{etag}.1a2b3c4d.incomplete"]
    assert report.problems[-1] == f"a partial download is left in blobs/{etag}.1a2b3c4d.incomplete"


def test_incomplete_blob_next_to_its_whole_blob_is_stale(tmp_path: Path) -> None:
    """A killed attempt left blobs/<etag>.<id>.incomplete, and a later one put the whole blob in place (huggingface_hub
    renames a blob into place only when whole): the snapshot is complete, the partial is named for deletion."""
    cache = build_cache(tmp_path)
    etag = cache.etags[SHARD_1]
    (cache.repo_dir / "blobs" / f"{etag}.0a1b2c3d.incomplete").write_bytes(b"x")
    report = check(cache)
    assert report.complete is True, report.problems
    assert report.incomplete_files == report.stale_partials == [f"blobs/{etag}.0a1b2c3d.incomplete"]
    assert report.warnings == [f"blobs/{etag}.0a1b2c3d.incomplete: left by an interrupted download of {SHARD_1}, which is there whole; it can be deleted"]


def test_incomplete_blob_of_a_file_whose_blob_is_broken(tmp_path: Path) -> None:
    """The snapshot's symlink names a blob that is not there whole (here: missing) while its partial is there."""
    cache = build_cache(tmp_path)
    etag = cache.etags[SHARD_1]
    blob = cache.repo_dir / "blobs" / etag
    blob.rename(blob.with_name(f"{etag}.incomplete"))
    report = check(cache)
    assert report.complete is False
    assert report.stale_partials == []
    assert f"{SHARD_1}: its download is not finished (blobs/{etag}.incomplete is there)" in report.problems


def test_incomplete_blob_of_another_revision_only_warns(tmp_path: Path) -> None:
    cache = build_cache(tmp_path)
    (cache.repo_dir / "blobs" / f"{'e' * 64}.incomplete").write_bytes(b"x")
    report = check(cache)
    assert report.complete is True
    assert report.incomplete_files == [f"blobs/{'e' * 64}.incomplete"]
    assert report.warnings == [f"blobs/{'e' * 64}.incomplete: a partial download of no file of this snapshot (another revision, or a download in progress)"]


def test_config_only_snapshot_is_incomplete(tmp_path: Path) -> None:
    files = model_files(tmp_path / "staging")
    cache = build_cache(tmp_path, files={"config.json": files["config.json"]})
    report = check(cache, required_files=["config.json"])
    assert report.complete is False
    assert report.missing == ["model.safetensors"]
    assert report.problems == [f"model.safetensors is missing: the snapshot has no weights (neither {INDEX} nor model.safetensors)"]
    assert report.architectures == ["TinyLlmForCausalLM"]
    assert report.shards == 0
    report = check(cache)
    assert report.missing == ["tokenizer_config.json", "tokenizer.json", "model.safetensors"]


def test_bad_safetensors_header(tmp_path: Path) -> None:
    files = model_files(tmp_path / "staging")
    data = bytearray(files[SHARD_2])
    data[8] = ord("[")  # the header must start with '{'
    files[SHARD_2] = bytes(data)
    report = check(build_cache(tmp_path, files=files))
    assert report.complete is False
    assert [c.path for c in report.corrupt] == [SHARD_2]
    assert report.corrupt[0].reason.startswith("bad safetensors file: the header does not start with '{' but with '[")


def test_index_names_a_tensor_its_shard_lacks(tmp_path: Path) -> None:
    files = model_files(tmp_path / "staging")
    index = json.loads(files[INDEX])
    index["weight_map"]["lm_head.weight"] = SHARD_3
    files[INDEX] = json.dumps(index).encode()
    report = check(build_cache(tmp_path, files=files))
    assert [c.as_dict() for c in report.corrupt] == [{"path": SHARD_3, "reason": f"1 tensor(s) that {INDEX} puts in it are not in its header: lm_head.weight"}]


def with_total_size(files: dict[str, bytes], total: t.Any) -> int:
    """Set the index's metadata.total_size to ``total``; return the bytes of tensor data it held before."""
    index = json.loads(files[INDEX])
    before = index["metadata"]["total_size"]
    index["metadata"]["total_size"] = total
    files[INDEX] = json.dumps(index).encode()
    return int(before)


@pytest.mark.parametrize("mode", ["quick", "full"])
def test_index_total_size_mismatch_only_warns(tmp_path: Path, mode: str) -> None:
    """No loader reads metadata.total_size (vLLM reads only the weight_map): a snapshot it disagrees with loads, so it is complete."""
    files = model_files(tmp_path / "staging")
    total = with_total_size(files, 12345)
    report = check(build_cache(tmp_path, files=files), mode=mode, manifest=False)
    assert report.complete is True, report.problems
    assert report.problems == [] and report.corrupt == [] and report.missing == []
    assert report.index_total_size == 12345 and report.tensor_bytes == total
    assert report.index_total_size_matches is False
    assert report.warnings == [
        f"{INDEX}: metadata.total_size is 12345 bytes, but the 3 shard(s) hold {total} bytes of tensor data; no loader reads it, so the snapshot still loads"
    ]
    assert report.as_dict()["index_total_size_matches"] is False


@pytest.mark.parametrize("total", ["big", -1, 1.5, True, None])
def test_index_total_size_that_is_not_a_byte_count_only_warns(tmp_path: Path, total: t.Any) -> None:
    files = model_files(tmp_path / "staging")
    with_total_size(files, total)
    report = check(build_cache(tmp_path, files=files))
    assert report.complete is True, report.problems
    assert report.index_total_size is None and report.index_total_size_matches is None
    if total is None:
        assert report.warnings == []
    else:
        assert report.warnings == [f"{INDEX}: metadata.total_size is {total!r}, not a byte count; no loader reads it, so the snapshot still loads"]


def test_a_total_size_mismatch_does_not_hide_real_corruption(tmp_path: Path) -> None:
    """With total_size wrong too, a truncated shard and a tensor the index misplaces still make the snapshot incomplete."""
    files = model_files(tmp_path / "staging")
    index = json.loads(files[INDEX])
    index["weight_map"]["lm_head.weight"] = SHARD_3
    index["metadata"]["total_size"] = 1
    files[INDEX] = json.dumps(index).encode()
    files[SHARD_2] = files[SHARD_2][:-5]
    report = check(build_cache(tmp_path, files=files))
    assert report.complete is False
    assert [c.path for c in report.corrupt] == [SHARD_2, SHARD_3]
    assert report.corrupt[0].reason.startswith("bad safetensors file: ")
    # the shards' tensor bytes are unknown with a bad header: no total-size verdict, only the corruption
    assert report.tensor_bytes is None and report.index_total_size_matches is None
    assert not any("total_size" in w for w in report.warnings)


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (b"{", "not a valid safetensors index: "),
        (b"[]", "not a valid safetensors index: not a JSON object"),
        (b'{"weight_map": {}}', "not a valid safetensors index: no weight_map"),
        (b'{"weight_map": {"w": "../../escape.safetensors"}}', "not a valid safetensors index: weight_map maps 'w' to '../../escape.safetensors'"),
    ],
)
def test_bad_index(tmp_path: Path, content: bytes, reason: str) -> None:
    files = model_files(tmp_path / "staging")
    files[INDEX] = content
    report = check(build_cache(tmp_path, files=files))
    assert report.complete is False
    assert report.corrupt[0].path == INDEX
    assert reason in report.corrupt[0].reason


def test_bad_config(tmp_path: Path) -> None:
    files = model_files(tmp_path / "staging")
    files["config.json"] = b"{not json"
    report = check(build_cache(tmp_path, files=files))
    assert [c.path for c in report.corrupt] == ["config.json"]
    assert report.corrupt[0].reason.startswith("not a readable JSON file: ")
    assert report.architectures is None


def test_message_lists_the_first_twenty_problems(tmp_path: Path) -> None:
    cache = build_cache(tmp_path, shards=25)
    for i in range(1, 26):
        cache.remove(shard_name(i, 25))
    report = check(cache)
    assert len(report.problems) == 25
    message = report.message()
    assert message.startswith(f"{REPO_ID} at revision main is incomplete in {cache.snapshot} (quick check, 25 problems): ")
    assert shard_name(20, 25) in message and shard_name(21, 25) not in message
    assert message.endswith(f"; and {25 - MAX_LISTED} more")


# --- hostile files (issue 15): each is corrupt, named, found fast; never an exception ---------------------------


def safetensors_file(header: dict[str, t.Any] | bytes, data: bytes = b"") -> bytes:
    """A safetensors file written by hand: the u64 length, the header (a dict as JSON, or raw bytes), the data."""
    body = header if isinstance(header, bytes) else json.dumps(header).encode()
    return struct.pack("<Q", len(body)) + body + data


def nested(levels: int) -> bytes:
    return b"[" * levels + b"]" * levels


# The files of the review (the other modules' tests use them too): each raised out of check_snapshot before.
HUGE_DIMS_SHARD = safetensors_file({"w": {"dtype": "F32", "shape": [10**30] * 11, "data_offsets": [0, 4]}}, b"\0" * 4)  # OverflowError
DEEP_SHARD = safetensors_file(b'{"w": ' + nested(100_000) + b"}")  # RecursionError
SLOW_SHARD = safetensors_file({"w": {"dtype": "F32", "shape": [10**30] * 80_000, "data_offsets": [0, 4]}}, b"\0" * 4)  # 2.6 MB: 105 s
DEEP_CONFIG = b'{"architectures": ' + nested(100_000) + b"}"  # RecursionError


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (HUGE_DIMS_SHARD, "tensor 'w': shape holds 1000000000000000000000000000000, more than 64 bits hold (the reference reads it as a usize)"),
        (DEEP_SHARD, "the header is nested too deeply for a JSON parser (a safetensors header is 3 levels deep)"),
        (SLOW_SHARD, "tensor 'w': shape holds 1000000000000000000000000000000, more than 64 bits hold"),
        (safetensors_file({"w": {"dtype": "F32", "shape": [2**32] * 3, "data_offsets": [0, 4]}}, b"\0" * 4), "tensor 'w': F32 [4294967296, "),
        (struct.pack("<Q", 10**6) + b"{}", "truncated in the header: 10 bytes, the header alone needs 1000008"),
        (struct.pack("<Q", 2**63) + b"{}", f"header length {2**63} is out of range"),
    ],
    ids=["dims-10e30", "deep-100000", "2.6MB-of-dims", "elements-overflow", "length-past-the-file", "length-2e63"],
)
def test_a_hostile_shard_is_corrupt_by_name(tmp_path: Path, content: bytes, reason: str) -> None:
    files = model_files(tmp_path / "staging")
    files[SHARD_2] = content
    cache = build_cache(tmp_path, files=files)
    start = time.monotonic()
    report = check(cache)
    assert time.monotonic() - start < 2.0
    assert report.complete is False
    assert [c.path for c in report.corrupt] == [SHARD_2]
    assert report.corrupt[0].reason.startswith("bad safetensors file: " + reason), report.corrupt[0].reason
    assert f": {SHARD_2}: bad safetensors file: " in report.message() and len(report.message()) < 1000


@pytest.mark.parametrize(
    ("text", "shown"),
    [(b"1e400", "inf"), (b"NaN", "nan"), (b"-Infinity", "-inf"), (str(10**400).encode(), "100000000000000000...0000")],
    ids=["1e400", "NaN", "-Infinity", "10e400"],
)
def test_an_index_total_size_past_any_file_only_warns(tmp_path: Path, text: bytes, shown: str) -> None:
    """A total_size of 1e400 (JSON reads it as infinity) or NaN made an OverflowError or ValueError; 10**400 was taken as a size."""
    files = model_files(tmp_path / "staging")
    with_total_size(files, 424242)
    files[INDEX] = files[INDEX].replace(b"424242", text)
    report = check(build_cache(tmp_path, files=files))
    assert report.complete is True, report.problems
    assert report.index_total_size is None and report.index_total_size_matches is None
    assert len(report.warnings) == 1 and report.warnings[0].startswith(f"{INDEX}: metadata.total_size is {shown}")
    assert report.warnings[0].endswith(", not a byte count; no loader reads it, so the snapshot still loads") and len(report.warnings[0]) < 300


@pytest.mark.parametrize(
    ("name", "content", "reason"),
    [
        ("config.json", DEEP_CONFIG, "not a readable JSON file: nested more than 64 levels deep"),
        ("config.json", b'{"quantization_config": ' + nested(65) + b"}", "not a readable JSON file: nested more than 64 levels deep"),
        (INDEX, b'{"weight_map": {"w": "a"}, "metadata": ' + nested(100_000) + b"}", "not a valid safetensors index: nested more than 64 levels deep"),
        (INDEX, b'{"weight_map": {"w": ' + nested(60) + b"}}", "not a valid safetensors index: weight_map maps 'w' to [[[[...]]]], not a file of the snapshot"),
    ],
    ids=["config-100000-deep", "config-66-deep", "index-100000-deep", "index-shard-a-list"],
)
def test_hostile_json_is_corrupt_by_name(tmp_path: Path, name: str, content: bytes, reason: str) -> None:
    files = model_files(tmp_path / "staging")
    files[name] = content
    report = check(build_cache(tmp_path, files=files))
    assert report.complete is False
    assert [c.as_dict() for c in report.corrupt] == [{"path": name, "reason": reason}]


@pytest.mark.parametrize("name", ["config.json", INDEX])
def test_a_json_file_over_the_size_cap_is_corrupt(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    """64 MiB at full size (a real index of ~300k tensors is ~25 MB); lowered here so that the test writes a small file."""
    monkeypatch.setattr(_hf_snapshot, "MAX_JSON_FILE_BYTES", 1000)
    files = model_files(tmp_path / "staging")
    files[name] = files[name][:-1] + b" " * 1000 + b"}"
    report = check(build_cache(tmp_path, files=files))
    assert report.complete is False
    what = "not a readable JSON file" if name == "config.json" else "not a valid safetensors index"
    assert [c.as_dict() for c in report.corrupt] == [{"path": name, "reason": f"{what}: larger than 1000 bytes, which no real config or index comes near"}]


def test_a_config_as_deep_as_the_cap_is_read(tmp_path: Path) -> None:
    files = model_files(tmp_path / "staging")
    files["config.json"] = b'{"architectures": ["X"], "quantization_config": ' + nested(63) + b"}"
    report = check(build_cache(tmp_path, files=files))
    assert report.complete is True, report.problems
    assert report.architectures == ["X"]


def test_hostile_architectures_are_listed_short(tmp_path: Path) -> None:
    files = model_files(tmp_path / "staging")
    files["config.json"] = json.dumps({"architectures": ["X", 10**300, "y" * 100_000]}).encode()
    report = check(build_cache(tmp_path, files=files))
    assert report.complete is True, report.problems
    assert report.architectures is not None and report.architectures[0] == "X" and report.architectures[2] == "y" * 100_000
    assert len(report.architectures[1]) < 60


# --- full mode and the manifest ----------------------------------------------------------------------------------


def test_full_mode_manifest_is_reused_until_a_file_changes(tmp_path: Path) -> None:
    cache = build_cache(tmp_path)
    first = check(cache, mode="full")
    assert first.complete, first.problems
    assert (first.hashed_files, first.reused_files) == (len(ALL_FILES), 0)
    manifest = cache.repo_dir / ".sparkops-verified.json"
    assert first.manifest_path == str(manifest) and first.manifest_written is True
    entries = json.loads(manifest.read_text())["files"]
    assert sorted(entries) == sorted(str(cache.blob(p)) for p in ALL_FILES)
    assert entries[str(cache.blob(SHARD_1))]["hash"] == cache.etags[SHARD_1]

    second = check(cache, mode="full")
    assert (second.hashed_files, second.hashed_bytes, second.reused_files) == (0, 0, len(ALL_FILES))
    assert second.manifest_written is False  # nothing new to record

    same_size_corruption(cache.blob(SHARD_2))  # changes the mtime
    third = check(cache, mode="full")
    assert (third.hashed_files, third.reused_files) == (1, len(ALL_FILES) - 1)
    assert [c.path for c in third.corrupt] == [SHARD_2]
    assert str(cache.blob(SHARD_2)) not in json.loads(manifest.read_text())["files"]

    # the scan_cache_dir view is not disturbed by the manifest in the repo folder
    if HAVE_HF_HUB:
        from huggingface_hub import scan_cache_dir

        assert scan_cache_dir(cache.cache_dir).warnings == []


def test_full_mode_without_writing_the_manifest(tmp_path: Path) -> None:
    cache = build_cache(tmp_path)
    report = check(cache, mode="full", write_manifest=False)
    assert report.complete and report.manifest_written is False
    assert not (cache.repo_dir / ".sparkops-verified.json").exists()
    report = check(cache, mode="full", manifest=False)
    assert report.manifest_path is None and report.manifest_written is False
    assert not (cache.repo_dir / ".sparkops-verified.json").exists()


def test_manifest_path_option_and_unwritable_manifest(tmp_path: Path) -> None:
    cache = build_cache(tmp_path)
    elsewhere = tmp_path / "verified.json"
    report = check(cache, mode="full", manifest_path=str(elsewhere))
    assert report.manifest_path == str(elsewhere) and elsewhere.is_file()
    assert check(cache, mode="full", manifest_path=str(elsewhere)).reused_files == len(ALL_FILES)
    report = check(cache, mode="full", manifest_path=str(tmp_path / "no" / "such" / "dir" / "m.json"))
    assert report.complete is True
    assert report.manifest_written is False
    assert len(report.warnings) == 1 and report.warnings[0].startswith(f"could not write the manifest {tmp_path / 'no'}")


def test_full_mode_skips_files_already_found_corrupt(tmp_path: Path) -> None:
    cache = build_cache(tmp_path)
    with cache.blob(SHARD_1).open("r+b") as f:
        f.truncate(100)
    report = check(cache, mode="full")
    assert [c.path for c in report.corrupt] == [SHARD_1]
    assert report.hashed_files == len(ALL_FILES) - 1


def test_snapshot_files_that_are_not_symlinks_are_unverified(tmp_path: Path) -> None:
    cache = build_cache(tmp_path)
    link = cache.link("generation_config.json")
    link.unlink()
    link.write_bytes(cache.files["generation_config.json"])
    report = check(cache, mode="full")
    assert report.complete is True
    assert report.unverified == ["generation_config.json"]
    assert report.hashed_files == len(ALL_FILES) - 1


def test_shared_blobs_are_hashed_once(tmp_path: Path) -> None:
    files = model_files(tmp_path / "staging")
    files["copy_of_config.json"] = files["config.json"]
    cache = build_cache(tmp_path, files=files)
    report = check(cache, mode="full")
    assert report.complete
    assert report.hashed_files == len(ALL_FILES)


# --- local dirs ----------------------------------------------------------------------------------------------


def test_complete_local_dir(tmp_path: Path) -> None:
    local = build_local_dir(tmp_path)
    report = check_snapshot(REPO_ID, "main", local_dir=str(local.path), mode="full")
    assert report.complete, report.problems
    assert report.source == "local_dir"
    assert report.commit == COMMIT
    assert report.snapshot_path == report.root == str(local.path)
    assert [f.path for f in report.files] == ALL_FILES  # .cache/huggingface is not part of the model
    assert {f.path: f.etag for f in report.files} == local.etags
    assert report.hashed_files == len(ALL_FILES)
    assert report.manifest_path == str(local.path / ".cache" / "huggingface" / ".sparkops-verified.json")
    assert check_snapshot(REPO_ID, COMMIT, local_dir=str(local.path), mode="full").reused_files == len(ALL_FILES)
    if HAVE_HF_HUB:
        from huggingface_hub._local_folder import read_download_metadata

        metadata = read_download_metadata(local.path, SHARD_1)
        assert metadata is not None and (metadata.commit_hash, metadata.etag) == (COMMIT, local.etags[SHARD_1])


def test_local_dir_same_size_corruption_and_missing_shard(tmp_path: Path) -> None:
    local = build_local_dir(tmp_path)
    same_size_corruption(local.path / SHARD_1)
    (local.path / SHARD_2).unlink()
    assert check_snapshot(REPO_ID, local_dir=str(local.path)).missing == [SHARD_2]
    report = check_snapshot(REPO_ID, local_dir=str(local.path), mode="full")
    assert report.missing == [SHARD_2]
    assert [c.path for c in report.corrupt] == [SHARD_1]


def test_local_dir_incomplete_download_names_its_file(tmp_path: Path) -> None:
    local = build_local_dir(tmp_path)
    etag = local.etags[SHARD_3]
    (local.path / SHARD_3).unlink()
    local.metadata(SHARD_3).unlink()
    partial = local.download_dir / f"{local_short_hash(SHARD_3)}.{etag}.incomplete"
    if HAVE_HF_HUB:
        from huggingface_hub._local_folder import get_local_download_paths

        assert get_local_download_paths(local.path, SHARD_3).incomplete_path(etag) == partial
    partial.write_bytes(b"x")
    report = check_snapshot(REPO_ID, local_dir=str(local.path))
    assert report.missing == [SHARD_3]
    rel = f".cache/huggingface/download/{partial.name}"
    assert report.incomplete_files == [rel]
    assert report.problems == [f"{SHARD_3} is missing (a shard named in {INDEX})", f"{SHARD_3}: its download is not finished ({rel} is there)"]


def test_local_dir_without_metadata(tmp_path: Path) -> None:
    local = build_local_dir(tmp_path)
    for meta in local.download_dir.rglob("*.metadata"):
        meta.unlink()
    report = check_snapshot(REPO_ID, local_dir=str(local.path))
    assert report.complete is False
    assert report.commit is None
    assert report.problems == [f"no download metadata in {local.download_dir}: cannot tell the commit (not an 'hf download --local-dir' folder?)"]
    assert report.unverified == ALL_FILES


def test_local_dir_of_several_commits(tmp_path: Path) -> None:
    local = build_local_dir(tmp_path)
    local.metadata("config.json").write_text(f"{OTHER_COMMIT}\n{local.etags['config.json']}\n1.0\n")
    report = check_snapshot(REPO_ID, local_dir=str(local.path))
    assert report.commit == COMMIT
    assert report.problems == [f"the files of {local.path} come from several commits: {COMMIT[:12]} (7 files), {OTHER_COMMIT[:12]} (1 files)"]


def test_local_dir_of_another_commit(tmp_path: Path) -> None:
    local = build_local_dir(tmp_path)
    report = check_snapshot(REPO_ID, OTHER_COMMIT, local_dir=str(local.path))
    assert report.problems == [f"{local.path} holds commit {COMMIT}, not the requested revision {OTHER_COMMIT}"]
    assert check_snapshot(REPO_ID, "v1.0", local_dir=str(local.path)).complete is True


def test_local_dir_that_does_not_exist(tmp_path: Path) -> None:
    report = check_snapshot(REPO_ID, local_dir=str(tmp_path / "none"))
    assert report.complete is False
    assert report.problems == [f"the local_dir {tmp_path / 'none'} does not exist"]


def test_bad_mode(tmp_path: Path) -> None:
    with pytest.raises(SnapshotError, match="mode 'deep' is neither 'quick' nor 'full'"):
        check_snapshot(REPO_ID, cache_dir=str(tmp_path), mode="deep")


def test_folders_that_cannot_be_listed_are_problems(tmp_path: Path) -> None:
    """Running as root, an unreadable folder cannot be made: a file where a folder should be fails the same way."""
    not_a_folder = tmp_path / "file"
    not_a_folder.write_text("x")
    errors: list[str] = []
    assert list(_walk(str(not_a_folder), errors=errors)) == []
    assert len(errors) == 1 and errors[0].startswith(f"cannot list {not_a_folder}: ")
