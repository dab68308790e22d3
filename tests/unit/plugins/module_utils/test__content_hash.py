# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests for the _content_hash module util: the two Hub hashes, parallel verification and the manifest."""

from __future__ import annotations

import hashlib
import json
import os
import threading
import typing as t
from pathlib import Path
from unittest.mock import patch

import pytest
from ansible_collections.sparkops.inference.plugins.module_utils import _content_hash
from ansible_collections.sparkops.inference.plugins.module_utils._content_hash import (
    GIT_SHA1,
    SHA256,
    HashJob,
    Identity,
    Manifest,
    algorithm_for,
    hash_file,
    verify,
)
from fake_clock import FakeClock

# `printf 'hello\n' | git hash-object --stdin`
HELLO_GIT_SHA1 = "ce013625030ba8dba906f756967f9e9ca394464a"
HELLO_SHA256 = "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03"


@pytest.mark.parametrize(
    ("address", "algorithm"),
    [
        (HELLO_SHA256, SHA256),
        (HELLO_GIT_SHA1, GIT_SHA1),
        (HELLO_SHA256.upper(), None),
        (HELLO_SHA256[:-1], None),
        ('"abc"', None),
        (None, None),
    ],
)
def test_algorithm_for(address: str | None, algorithm: str | None) -> None:
    assert algorithm_for(address) == algorithm


def test_hash_file_matches_git_and_sha256(tmp_path: Path) -> None:
    path = tmp_path / "hello.txt"
    path.write_bytes(b"hello\n")
    assert hash_file(path, GIT_SHA1) == (HELLO_GIT_SHA1, 6)
    assert hash_file(path, SHA256) == (HELLO_SHA256, 6)


@pytest.mark.parametrize("algorithm", [SHA256, GIT_SHA1])
def test_hash_file_in_small_chunks(tmp_path: Path, algorithm: str) -> None:
    data = os.urandom(10_000)
    path = tmp_path / "blob"
    path.write_bytes(data)
    expected = hashlib.sha256(data).hexdigest() if algorithm == SHA256 else hashlib.sha1(b"blob 10000\0" + data).hexdigest()
    assert hash_file(path, algorithm, chunk_size=999) == (expected, 10_000)


def test_hash_file_refuses_an_unknown_algorithm(tmp_path: Path) -> None:
    (tmp_path / "f").write_bytes(b"x")
    with pytest.raises(ValueError, match="unknown hash algorithm 'md5'"):
        hash_file(tmp_path / "f", "md5")


def files(tmp_path: Path, contents: dict[str, bytes]) -> dict[str, HashJob]:
    """Write the files and a job for each whose address is its real sha256 (or git sha1 for .json)."""
    jobs = {}
    for name, data in contents.items():
        path = tmp_path / name
        path.write_bytes(data)
        if name.endswith(".json"):
            jobs[name] = HashJob(str(path), hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest(), GIT_SHA1)
        else:
            jobs[name] = HashJob(str(path), hashlib.sha256(data).hexdigest(), SHA256)
    return jobs


def test_verify_reports_good_bad_and_unreadable_in_order(tmp_path: Path) -> None:
    jobs = files(tmp_path, {"a.bin": b"a" * 100, "b.json": b"{}", "c.bin": b"c" * 10})
    (tmp_path / "c.bin").write_bytes(b"C" * 10)  # same size, other content
    missing = HashJob(str(tmp_path / "gone.bin"), "0" * 64, SHA256)
    clock = FakeClock()
    result = verify([jobs["a.bin"], jobs["b.json"], jobs["c.bin"], missing], workers=3, clock=clock.clock)
    assert [o.job for o in result.outcomes] == [jobs["a.bin"], jobs["b.json"], jobs["c.bin"], missing]
    assert [o.ok for o in result.outcomes] == [True, True, False, False]
    assert result.outcomes[2].digest == hashlib.sha256(b"C" * 10).hexdigest()
    assert result.outcomes[3].error is not None and result.outcomes[3].error.startswith("cannot be read: ")
    assert (result.hashed_files, result.hashed_bytes, result.reused_files) == (3, 112, 0)
    assert result.elapsed == 0.0


def test_verify_hashes_files_in_parallel(tmp_path: Path) -> None:
    """Two files are hashed at the same time: each hash waits for the other at a barrier (a serial run times out)."""
    jobs = files(tmp_path, {"a.bin": b"a", "b.bin": b"b"})
    barrier = threading.Barrier(2, timeout=5)
    threads: set[int] = set()
    real = _content_hash.hash_file

    def meeting_hash(path: t.Any, algorithm: str, chunk_size: int = _content_hash.CHUNK_SIZE) -> tuple[str, int]:
        threads.add(threading.get_ident())
        barrier.wait()
        return real(path, algorithm, chunk_size)

    with patch.object(_content_hash, "hash_file", meeting_hash):
        result = verify(list(jobs.values()), workers=2)
    assert all(o.ok for o in result.outcomes)
    assert len(threads) == 2


def test_manifest_skips_unchanged_files_and_rehashes_changed_ones(tmp_path: Path) -> None:
    jobs = files(tmp_path, {"a.bin": b"a" * 50, "b.bin": b"b" * 70, "c.json": b"[1]"})
    manifest_path = tmp_path / "manifest.json"
    first = Manifest()
    result = verify(list(jobs.values()), first, workers=2)
    assert (result.hashed_files, result.reused_files, result.hashed_bytes) == (3, 0, 123)
    first.save(manifest_path)

    second, warning = Manifest.load(manifest_path)
    assert warning is None
    result = verify(list(jobs.values()), second, workers=2)
    assert (result.hashed_files, result.reused_files, result.hashed_bytes) == (0, 3, 0)
    assert all(o.ok for o in result.outcomes)

    a = tmp_path / "a.bin"
    st = a.stat()
    os.utime(a, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))  # touched
    b = tmp_path / "b.bin"
    st_b = b.stat()
    replacement = tmp_path / "b.new"
    replacement.write_bytes(b"B" * 70)  # replaced at the same size and mtime: only the inode tells
    os.utime(replacement, ns=(st_b.st_atime_ns, st_b.st_mtime_ns))
    os.replace(replacement, b)
    assert b.stat().st_ino != st_b.st_ino
    result = verify(list(jobs.values()), second, workers=2)
    assert [(o.reused, o.ok) for o in result.outcomes] == [(False, True), (False, False), (True, True)]
    assert (result.hashed_files, result.hashed_bytes) == (2, 120)
    assert str(b) not in second.entries  # a bad file is forgotten
    assert second.entries[str(a)]["mtime_ns"] == st.st_mtime_ns + 1_000_000_000


def test_manifest_entry_must_match_the_address(tmp_path: Path) -> None:
    jobs = files(tmp_path, {"a.bin": b"a"})
    job = jobs["a.bin"]
    manifest = Manifest()
    manifest.record(job.key, Identity.of(job.key), SHA256, job.address)
    assert manifest.lookup(job.key, Identity.of(job.key), SHA256, job.address)
    assert not manifest.lookup(job.key, Identity.of(job.key), SHA256, "f" * 64)
    assert not manifest.lookup(job.key, Identity.of(job.key), GIT_SHA1, job.address)
    other = HashJob(job.key, "f" * 64, SHA256)
    result = verify([other], manifest)
    assert result.reused_files == 0
    assert result.outcomes[0].ok is False


def test_manifest_save_is_atomic_json_and_drops_stale_entries(tmp_path: Path) -> None:
    jobs = files(tmp_path, {"a.bin": b"a", "b.bin": b"b"})
    manifest = Manifest()
    verify(list(jobs.values()), manifest)
    path = tmp_path / "m" / "verified.json"
    path.parent.mkdir()
    manifest.save(path)
    (tmp_path / "b.bin").unlink()
    reloaded = Manifest.load(path)[0]
    reloaded.save(path)  # b.bin no longer exists: dropped
    document = json.loads(path.read_text())
    assert document["version"] == 1
    assert sorted(document["files"]) == [jobs["a.bin"].key]
    entry = document["files"][jobs["a.bin"].key]
    st = os.stat(jobs["a.bin"].key)
    assert entry == {"size": 1, "mtime_ns": st.st_mtime_ns, "inode": st.st_ino, "algorithm": SHA256, "hash": jobs["a.bin"].address}
    assert sorted(p.name for p in path.parent.iterdir()) == ["verified.json"]


def test_manifest_save_failure_leaves_no_temporary_file(tmp_path: Path) -> None:
    manifest = Manifest()
    target = tmp_path / "is-a-directory"
    target.mkdir()
    (target / "keep").write_text("x")
    with pytest.raises(OSError):
        manifest.save(target)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["is-a-directory"]


@pytest.mark.parametrize(
    ("content", "warning"),
    [
        ("{not json", "which cannot be read"),
        ('{"version": 99, "files": {}}', "not a version 1 manifest"),
        ('["files"]', "not a version 1 manifest"),
    ],
)
def test_unreadable_manifest_is_ignored_with_a_warning(tmp_path: Path, content: str, warning: str) -> None:
    path = tmp_path / "m.json"
    path.write_text(content)
    manifest, message = Manifest.load(path)
    assert manifest.entries == {}
    assert message is not None and warning in message and str(path) in message


def test_absent_manifest_is_empty_without_warning(tmp_path: Path) -> None:
    manifest, message = Manifest.load(tmp_path / "none.json")
    assert manifest.entries == {}
    assert message is None


# --- a hostile manifest (issue 15): ignored or dropped, never an exception ---------------------------------------------


def test_a_manifest_nested_too_deeply_for_the_parser_is_ignored(tmp_path: Path) -> None:
    """100,000 levels: RecursionError in the JSON parser."""
    path = tmp_path / "m.json"
    path.write_text('{"version": 1, "files": ' + "[" * 100_000 + "]" * 100_000 + "}")
    manifest, message = Manifest.load(path)
    assert manifest.entries == {}
    assert message == f"ignored the manifest {path}, which cannot be read: nested too deeply"


def test_a_manifest_entry_with_nested_values_is_dropped(tmp_path: Path) -> None:
    """An entry that matches its file but holds a value nested 500 levels deep: writing it back raised RecursionError."""
    jobs = files(tmp_path, {"a.bin": b"a", "b.bin": b"b"})
    entries = {}
    for job in jobs.values():
        st = os.stat(job.key)
        entries[job.key] = {"size": 1, "mtime_ns": st.st_mtime_ns, "inode": st.st_ino, "algorithm": SHA256, "hash": job.address}
    entries[jobs["b.bin"].key]["note"] = [[[["x"]]]]
    path = tmp_path / "m.json"
    path.write_text(json.dumps({"version": 1, "files": entries}).replace('[[[["x"]]]]', "[" * 500 + "]" * 500))
    manifest, message = Manifest.load(path)
    assert message is None and sorted(manifest.entries) == [jobs["a.bin"].key]
    manifest.save(path)
    assert sorted(json.loads(path.read_text())["files"]) == [jobs["a.bin"].key]
