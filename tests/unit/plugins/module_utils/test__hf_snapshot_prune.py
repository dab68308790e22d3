# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests for the _hf_snapshot_prune module util, on a real hub cache of three snapshots (hf_prune_cache).

Where huggingface_hub is installed, what a prune removes is cross-checked against huggingface_hub's own plan for
deleting the same revision (scan_cache_dir().delete_revisions()).
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest
from ansible_collections.sparkops.inference.plugins.module_utils._hf_snapshot import SnapshotError, check_snapshot
from ansible_collections.sparkops.inference.plugins.module_utils._hf_snapshot_prune import PruneError, PrunePlan, apply_prune, plan_prune
from ansible_collections.sparkops.inference.tests.unit.plugins.module_utils.hf_prune_cache import (
    CURRENT,
    INCOMPLETE,
    OLD,
    PARTIAL,
    PREVIOUS,
    SHARD_1,
    SHARD_2,
    SHARD_3,
    ThreeSnapshots,
    build_three_snapshots,
)

HAVE_HF_HUB = importlib.util.find_spec("huggingface_hub") is not None


@pytest.fixture
def cache(tmp_path: Path) -> ThreeSnapshots:
    return build_three_snapshots(tmp_path)


def plan(cache: ThreeSnapshots, keep: list[str] | None = None, keep_previous: int = 1) -> PrunePlan:
    return plan_prune(str(cache.cache_dir), cache.repo_id, [CURRENT] if keep is None else keep, keep_previous)


def prune(cache: ThreeSnapshots, keep: list[str] | None = None, keep_previous: int = 1) -> PrunePlan:
    p = plan(cache, keep, keep_previous)
    apply_prune(p)
    return p


def assert_complete(cache: ThreeSnapshots, *commits: str) -> None:
    for commit in commits:
        report = check_snapshot(cache.repo_id, commit, cache_dir=str(cache.cache_dir))
        assert report.complete, report.problems


def test_the_fixture_shares_blobs_as_documented(cache: ThreeSnapshots) -> None:
    """The cases below only mean something if the snapshots share blobs as hf_prune_cache says."""
    old, previous, current = (cache.etags[c] for c in (OLD, PREVIOUS, CURRENT))
    assert old[SHARD_1] == previous[SHARD_1] == current[SHARD_1]
    assert old[SHARD_2] != previous[SHARD_2] == current[SHARD_2]
    assert old[SHARD_3] == previous[SHARD_3] != current[SHARD_3]
    assert old["config.json"] == previous["config.json"] != current["config.json"]
    assert "notes.txt" in old and "notes.txt" not in previous
    assert cache.refs() == {"main", "v1.0", "v0.9", "refs/pr/1"}
    assert sorted([OLD, PREVIOUS, CURRENT]) == [CURRENT, PREVIOUS, OLD]  # names sort against the mtimes
    assert_complete(cache, OLD, PREVIOUS, CURRENT)


def test_prune_keeps_current_and_previous(cache: ThreeSnapshots) -> None:
    only_old = cache.blobs_of(OLD) - cache.blobs_of(PREVIOUS, CURRENT)
    assert len(only_old) == 2  # shard 2 old and the notes
    freed = cache.size(only_old)
    kept_blobs = cache.blob_names() - only_old

    result = prune(cache)

    assert result.kept == [CURRENT, PREVIOUS]
    assert result.removed_snapshots == [OLD]
    assert set(result.removed_blobs) == only_old
    assert result.freed_bytes == freed > 0
    assert result.removed_refs == ["refs/pr/1", "v0.9"]
    assert result.changed
    assert result.as_dict() == {
        "repo_id": cache.repo_id,
        "repo_dir": str(cache.repo_dir),
        "kept": [CURRENT, PREVIOUS],
        "removed_snapshots": [OLD],
        "removed_refs": ["refs/pr/1", "v0.9"],
        "removed_blobs": 2,
        "freed_bytes": freed,
    }
    # On disk: the old snapshot, its own blobs and refs are gone, the rest is there and still complete.
    assert not cache.snapshot(OLD).exists()
    assert sorted(p.name for p in (cache.repo_dir / "snapshots").iterdir()) == [CURRENT, PREVIOUS]
    assert cache.blob_names() == kept_blobs
    assert cache.refs() == {"main", "v1.0"}
    assert not (cache.repo_dir / "refs" / "refs").exists()  # the folders the PR ref leaves empty go with it
    assert (cache.blobs_dir / INCOMPLETE).read_bytes() == b"half a shard"
    assert (cache.blobs_dir / PARTIAL).is_file()
    assert_complete(cache, CURRENT, PREVIOUS)


def test_a_second_run_removes_nothing(cache: ThreeSnapshots) -> None:
    prune(cache)
    before = cache.tree()
    again = prune(cache)
    assert not again.changed
    assert again.kept == [CURRENT, PREVIOUS]
    assert again.removed_snapshots == [] and again.removed_refs == [] and again.removed_blobs == {}
    assert again.freed_bytes == 0
    assert cache.tree() == before


def test_a_plan_removes_nothing(cache: ThreeSnapshots) -> None:
    before = cache.tree()
    planned = plan(cache)
    assert planned.removed_snapshots == [OLD] and len(planned.removed_blobs) == 2
    assert cache.tree() == before


def test_keep_previous_zero_keeps_only_keep(cache: ThreeSnapshots) -> None:
    gone = cache.blobs_of(OLD, PREVIOUS) - cache.blobs_of(CURRENT)
    assert len(gone) == 4  # shard 2 old, shard 3 old, config A, the notes
    result = prune(cache, keep_previous=0)
    assert result.kept == [CURRENT]
    assert result.removed_snapshots == sorted([OLD, PREVIOUS])
    assert set(result.removed_blobs) == gone
    assert cache.blob_names() == cache.blobs_of(CURRENT)
    assert cache.refs() == {"main"}
    assert_complete(cache, CURRENT)


def test_keep_previous_larger_than_what_is_there_removes_no_snapshot(cache: ThreeSnapshots) -> None:
    result = prune(cache, keep_previous=5)
    assert result.kept == [CURRENT, PREVIOUS, OLD]
    assert not result.changed
    assert_complete(cache, OLD, PREVIOUS, CURRENT)


def test_previous_is_the_most_recent_by_mtime_not_by_name(cache: ThreeSnapshots) -> None:
    now = os.stat(cache.snapshot(CURRENT)).st_mtime
    os.utime(cache.snapshot(OLD), (now + 10, now + 10))  # OLD was made last: it is the previous one now
    result = prune(cache)
    assert result.kept == [CURRENT, OLD]
    assert result.removed_snapshots == [PREVIOUS]
    assert result.removed_refs == ["v1.0"]
    assert_complete(cache, CURRENT, OLD)


def test_the_served_commit_is_kept_even_when_it_is_the_oldest(cache: ThreeSnapshots) -> None:
    now = os.stat(cache.snapshot(CURRENT)).st_mtime
    os.utime(cache.snapshot(CURRENT), (now - 10_000, now - 10_000))
    result = prune(cache, keep=[CURRENT], keep_previous=1)
    assert result.kept == [CURRENT, PREVIOUS]
    assert result.removed_snapshots == [OLD]
    assert_complete(cache, CURRENT, PREVIOUS)


@pytest.mark.parametrize("entry", ["main", "refs/main", CURRENT])
def test_keep_by_ref_or_commit(cache: ThreeSnapshots, entry: str) -> None:
    assert plan(cache, keep=[entry]).kept == [CURRENT, PREVIOUS]


def test_keep_a_pull_request_ref_and_several_entries(cache: ThreeSnapshots) -> None:
    result = prune(cache, keep=["refs/pr/1", "v1.0", OLD], keep_previous=0)
    assert result.kept == [OLD, PREVIOUS]
    assert result.removed_snapshots == [CURRENT]
    assert result.removed_refs == ["main"]
    assert cache.refs() == {"v1.0", "v0.9", "refs/pr/1"}
    assert_complete(cache, OLD, PREVIOUS)


@pytest.mark.parametrize(
    ("keep", "message"),
    [
        (["v2.0"], "keep entry 'v2.0' is neither a ref of the cache"),
        (["a" * 40], "does not exist: refusing to prune what may be the snapshot meant to stay"),
        ([], "keep must name at least one snapshot"),
        ([CURRENT, " "], "keep must name at least one snapshot"),
    ],
)
def test_a_keep_entry_that_names_no_snapshot_is_refused(cache: ThreeSnapshots, keep: list[str], message: str) -> None:
    before = cache.tree()
    with pytest.raises(PruneError, match=message):
        plan(cache, keep=keep)
    assert cache.tree() == before


def test_a_ref_to_a_snapshot_that_is_gone_is_refused(cache: ThreeSnapshots) -> None:
    (cache.repo_dir / "refs" / "v2.0").write_text("a" * 40)
    with pytest.raises(PruneError, match=f"keep entry 'v2.0' is refs/v2.0, commit {'a' * 40}, but .*snapshots/{'a' * 40} does not exist"):
        plan(cache, keep=["v2.0"])


def test_a_ref_that_holds_no_commit_is_refused(cache: ThreeSnapshots) -> None:
    (cache.repo_dir / "refs" / "main").write_text("not a commit")
    with pytest.raises(PruneError, match="refs/main holds 'not a commit', not a commit hash"):
        plan(cache, keep=["main"])


def test_bad_arguments(cache: ThreeSnapshots) -> None:
    with pytest.raises(PruneError, match="keep_previous must be 0 or more, not -1"):
        plan(cache, keep_previous=-1)
    with pytest.raises(SnapshotError, match="is not a Hugging Face repo id"):
        plan_prune(str(cache.cache_dir), "acme/../etc", [CURRENT])


def test_a_model_not_in_the_cache_has_nothing_to_prune(tmp_path: Path) -> None:
    result = plan_prune(str(tmp_path), "acme/absent", [CURRENT])
    assert not result.exists and not result.changed
    assert result.as_dict()["kept"] == [] and result.freed_bytes == 0
    apply_prune(result)


def test_a_ref_that_points_to_a_commit_without_snapshot_stays(cache: ThreeSnapshots) -> None:
    (cache.repo_dir / "refs" / "dangling").write_text("a" * 40)
    result = prune(cache)
    assert "dangling" not in result.removed_refs
    assert (cache.repo_dir / "refs" / "dangling").is_file()


def test_blobs_no_snapshot_links_to_are_removed(cache: ThreeSnapshots) -> None:
    orphan = cache.blobs_dir / ("e" * 64)
    orphan.write_bytes(b"x" * 10)
    result = prune(cache, keep_previous=5)
    assert list(result.removed_blobs) == ["e" * 64] and result.freed_bytes == 10 and result.removed_snapshots == []
    assert not orphan.exists()


# --- what the hub cache does not hold is refused, before anything is removed ----------------------------------


def refused(cache: ThreeSnapshots, match: str) -> None:
    before = cache.tree()
    with pytest.raises(PruneError, match=match):
        prune(cache)
    assert cache.tree() == before


@pytest.mark.parametrize("commit", [CURRENT, OLD])
def test_a_symlink_escaping_the_repo_is_refused(cache: ThreeSnapshots, tmp_path: Path, commit: str) -> None:
    outside = tmp_path / "outside.safetensors"
    outside.write_bytes(b"not the cache's")
    link = cache.snapshot(commit) / "extra.safetensors"
    link.symlink_to(os.path.relpath(outside, link.parent))
    refused(cache, f"{link} is a symlink out of the repo folder {cache.repo_dir} \\(to {outside}\\): refusing to prune")
    assert outside.exists()


def test_a_blob_that_links_out_of_the_repo_is_refused(cache: ThreeSnapshots, tmp_path: Path) -> None:
    """A kept snapshot's link whose blob is itself a symlink out of the repo (a shared store)."""
    store = tmp_path / "store"
    store.mkdir()
    blob = cache.blobs_dir / cache.etags[CURRENT]["config.json"]
    blob.rename(store / blob.name)
    blob.symlink_to(store / blob.name)
    refused(cache, f"{cache.snapshot(CURRENT) / 'config.json'} is a symlink out of the repo folder")


def test_a_blob_symlink_no_snapshot_uses_is_refused(cache: ThreeSnapshots, tmp_path: Path) -> None:
    target = tmp_path / "elsewhere"
    target.write_bytes(b"data")
    (cache.blobs_dir / ("d" * 64)).symlink_to(target)
    refused(cache, f"{cache.blobs_dir / ('d' * 64)} is a symlink, not a blob")
    assert target.exists()


def test_a_link_to_something_else_in_the_repo_is_refused(cache: ThreeSnapshots) -> None:
    link = cache.snapshot(CURRENT) / "odd.json"
    link.symlink_to(Path("..") / PREVIOUS / "config.json")
    refused(cache, f"{link} is a symlink to .*, not to a blob in {cache.blobs_dir}")


def test_a_link_to_a_folder_is_refused(cache: ThreeSnapshots) -> None:
    link = cache.snapshot(OLD) / "sub"
    link.symlink_to(cache.snapshot(CURRENT), target_is_directory=True)
    refused(cache, f"{link} is a symlink to a folder, not to a blob")


def test_a_snapshot_entry_that_is_a_file_is_refused(cache: ThreeSnapshots) -> None:
    entry = cache.repo_dir / "snapshots" / ("c" * 40)
    entry.write_text("not a folder")
    refused(cache, f"{entry} is a file, not a snapshot folder")


def test_a_snapshot_entry_that_is_a_symlink_is_refused(cache: ThreeSnapshots, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "keep-me").write_text("x")
    entry = cache.repo_dir / "snapshots" / ("c" * 40)
    entry.symlink_to(elsewhere, target_is_directory=True)
    refused(cache, f"{entry} is a symlink, not a snapshot folder")
    assert (elsewhere / "keep-me").exists()


def test_a_snapshot_folder_not_named_after_a_commit_is_refused(cache: ThreeSnapshots) -> None:
    entry = cache.repo_dir / "snapshots" / "main"
    entry.mkdir()
    refused(cache, f"{entry} is not named after a commit")


def test_a_regular_file_in_a_snapshot_that_would_go_is_refused(cache: ThreeSnapshots) -> None:
    patched = cache.snapshot(OLD) / "patched.json"
    mtime = os.stat(cache.snapshot(OLD)).st_mtime
    patched.write_text("{}")
    os.utime(cache.snapshot(OLD), (mtime, mtime))  # still the oldest, so it would go
    refused(cache, f"{patched} is a regular file, not a link to a blob, in a snapshot that would be removed")


def test_a_regular_file_in_a_kept_snapshot_is_kept(cache: ThreeSnapshots) -> None:
    patched = cache.snapshot(CURRENT) / "patched.json"
    patched.write_text("{}")
    result = prune(cache)
    assert result.removed_snapshots == [OLD]
    assert patched.read_text() == "{}"


def test_a_symlinked_ref_is_refused(cache: ThreeSnapshots, tmp_path: Path) -> None:
    target = tmp_path / "ref"
    target.write_text(OLD)
    (cache.repo_dir / "refs" / "linked").symlink_to(target)
    refused(cache, f"{cache.repo_dir / 'refs' / 'linked'} is a symlink, not a ref file")


def test_a_symlinked_blobs_folder_is_refused(cache: ThreeSnapshots, tmp_path: Path) -> None:
    moved = tmp_path / "blobs-elsewhere"
    cache.blobs_dir.rename(moved)
    cache.blobs_dir.symlink_to(moved, target_is_directory=True)
    refused(cache, "is a symlink out of the repo folder")


def test_a_repo_folder_that_is_a_symlink_is_followed_once(cache: ThreeSnapshots, tmp_path: Path) -> None:
    """The cache may keep a model on another disk through a symlinked repo folder: it is pruned where it is."""
    moved = tmp_path / "disk2" / cache.repo_dir.name
    moved.parent.mkdir()
    cache.repo_dir.rename(moved)
    cache.repo_dir.symlink_to(moved, target_is_directory=True)
    result = prune(cache)
    assert result.repo_dir == str(moved)
    assert result.removed_snapshots == [OLD]
    assert not (moved / "snapshots" / OLD).exists()
    assert cache.repo_dir.is_symlink()


@pytest.mark.skipif(not HAVE_HF_HUB, reason="huggingface_hub is not installed")
def test_the_same_as_huggingface_hubs_own_plan(cache: ThreeSnapshots) -> None:
    """huggingface_hub's delete_revisions(OLD) frees the same blobs and bytes, and its scan agrees afterwards."""
    from huggingface_hub import scan_cache_dir

    strategy = scan_cache_dir(cache.cache_dir).delete_revisions(OLD)
    result = prune(cache)
    assert {p.name for p in strategy.blobs} == set(result.removed_blobs)
    assert strategy.expected_freed_size == result.freed_bytes
    assert {p.name for p in strategy.snapshots} == set(result.removed_snapshots)
    assert {p.relative_to(cache.repo_dir / "refs").as_posix() for p in strategy.refs} == set(result.removed_refs)
    info = scan_cache_dir(cache.cache_dir)
    assert info.warnings == []
    (repo,) = info.repos
    assert {r.commit_hash for r in repo.revisions} == {CURRENT, PREVIOUS}
    assert {name for r in repo.revisions for name in r.refs} == {"main", "v1.0"}
