# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Prune the old snapshots of a model in a Hugging Face hub cache, with the standard library only.

Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.

The layout is the one :mod:`._hf_snapshot` reads (``<cache>/models--<org>--<name>/{refs,snapshots,blobs}``), and its
helpers are reused: the repo folder's name, the repo id check, the refs reader and the sorted walk. huggingface_hub
has its own pruning (``scan_cache_dir().delete_revisions()``), but the nodes run modules in their system Python, which
has no huggingface_hub (only the head gets it, in the CLI's venv).

:func:`plan_prune` resolves the snapshots to keep (each entry of ``keep`` a ref or a commit, then the ``keep_previous``
most recent others by the snapshot folder's mtime), and lists what goes: the other snapshot folders, the refs that
point to their commits, and the blobs no kept snapshot links to. ``.incomplete`` files (a download in progress or
interrupted), hidden entries and folders in ``blobs/`` (the distribution's ``.sparkops-partial/``) are never touched.
Anything the hub cache does not hold is refused with :class:`PruneError` naming the path, before anything is removed:
a symlink that leads out of the repo folder or is not a link to a blob, a snapshot entry that is a file or a symlink,
a blob that is a symlink, a regular file inside a snapshot that would go. Nothing is ever followed out of the repo
folder. :func:`apply_prune` removes, refs first, then the snapshot folders, then the blobs, so that a run stopped
half way leaves no ref to a missing snapshot and no kept link to a missing blob; a second run finishes the work.
"""

from __future__ import annotations

import os
import shutil
import stat
import typing as t
from dataclasses import dataclass, field

from ansible_collections.sparkops.inference.plugins.module_utils._hf_snapshot import (
    _COMMIT,
    SnapshotError,
    _read_refs,
    _walk,
    repo_folder,
    validate_repo_id,
)

REFS_PREFIX = "refs/"
INCOMPLETE_SUFFIX = ".incomplete"


class PruneError(SnapshotError):
    """The cache holds something the hub cache layout does not, or ``keep`` cannot be honoured; nothing was removed."""


@dataclass(frozen=True)
class Snapshot:
    """A snapshot folder: its commit, its path and its mtime."""

    commit: str
    path: str
    mtime: float


@dataclass
class PrunePlan:
    """What :func:`plan_prune` found: what is kept and what goes; :meth:`as_dict` is the module's result."""

    repo_id: str
    repo_dir: str
    exists: bool = True
    snapshots: list[Snapshot] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    removed_snapshots: list[str] = field(default_factory=list)
    removed_refs: list[str] = field(default_factory=list)
    # blob names, with their size in bytes
    removed_blobs: dict[str, int] = field(default_factory=dict)

    @property
    def changed(self) -> bool:
        return bool(self.removed_snapshots or self.removed_refs or self.removed_blobs)

    @property
    def freed_bytes(self) -> int:
        return sum(self.removed_blobs.values())

    def diff(self) -> dict[str, str]:
        """The snapshots before and after, one commit a line, sorted."""
        before = sorted(s.commit for s in self.snapshots)
        after = [c for c in before if c not in self.removed_snapshots]
        where = os.path.join(self.repo_dir, "snapshots")
        return {
            "before_header": where,
            "after_header": where,
            "before": "".join(f"{c}\n" for c in before),
            "after": "".join(f"{c}\n" for c in after),
        }

    def as_dict(self) -> dict[str, t.Any]:
        return {
            "repo_id": self.repo_id,
            "repo_dir": self.repo_dir,
            "kept": list(self.kept),
            "removed_snapshots": list(self.removed_snapshots),
            "removed_refs": list(self.removed_refs),
            "removed_blobs": len(self.removed_blobs),
            "freed_bytes": self.freed_bytes,
        }


def _real_dir(path: str, what: str) -> bool:
    """Whether ``path`` is a folder; refuse a symlink or anything else there. False when nothing is there."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return False
    if stat.S_ISLNK(mode):
        raise PruneError(f"{path} is a symlink, not the {what} folder of a hub cache: refusing to prune through it")
    if not stat.S_ISDIR(mode):
        raise PruneError(f"{path} is not a folder, as the {what} of a hub cache is: refusing to prune")
    return True


def _list_snapshots(snapshots_dir: str) -> list[Snapshot]:
    snapshots: list[Snapshot] = []
    if not _real_dir(snapshots_dir, "snapshots"):
        return snapshots
    for name in sorted(os.listdir(snapshots_dir)):
        path = os.path.join(snapshots_dir, name)
        st = os.lstat(path)
        if stat.S_ISLNK(st.st_mode):
            raise PruneError(f"{path} is a symlink, not a snapshot folder: refusing to prune")
        if not stat.S_ISDIR(st.st_mode):
            raise PruneError(f"{path} is a file, not a snapshot folder: refusing to prune")
        if not _COMMIT.fullmatch(name):
            raise PruneError(f"{path} is not named after a commit (40 hex digits), as snapshot folders are: refusing to prune")
        snapshots.append(Snapshot(commit=name, path=path, mtime=st.st_mtime))
    return snapshots


def _check_refs(refs_dir: str) -> None:
    """Refuse symlinks in ``refs/`` before they are read (a ref is a small file holding a commit)."""
    if not _real_dir(refs_dir, "refs"):
        return
    linked: list[str] = []

    def note(rel: str) -> bool:
        if os.path.islink(os.path.join(refs_dir, rel)):
            linked.append(rel)
        return False

    for rel, path in _walk(refs_dir, skip=note):
        if os.path.islink(path):
            linked.append(rel)
    if linked:
        raise PruneError(f"{os.path.join(refs_dir, sorted(linked)[0])} is a symlink, not a ref file: refusing to prune")


def _resolve_keep(entry: str, refs: dict[str, str], commits: set[str], repo_dir: str) -> str:
    """The commit ``entry`` names: a ref (``main``, ``refs/main``, ``refs/pr/1``) or a commit; it must be in the cache."""
    names = [entry] + ([entry[len(REFS_PREFIX) :]] if entry.startswith(REFS_PREFIX) else [])
    ref = next((name for name in names if name in refs), None)
    if ref is not None:
        commit = refs[ref]
        if not _COMMIT.fullmatch(commit):
            raise PruneError(f"keep entry {entry!r}: {os.path.join(repo_dir, 'refs', ref)} holds {commit[:60]!r}, not a commit hash")
        via = f"keep entry {entry!r} is refs/{ref}, commit {commit}, but"
    elif _COMMIT.fullmatch(entry):
        commit = entry
        via = f"keep entry {entry!r}:"
    else:
        known = ", ".join(sorted(refs)) or "none"
        raise PruneError(f"keep entry {entry!r} is neither a ref of the cache {repo_dir} (known: {known}) nor a 40-hex commit: refusing to prune")
    if commit not in commits:
        raise PruneError(f"{via} {os.path.join(repo_dir, 'snapshots', commit)} does not exist: refusing to prune what may be the snapshot meant to stay")
    return commit


def _snapshot_links(snapshot: Snapshot, repo_dir: str, blobs_dir: str, removing: bool) -> set[str]:
    """The blobs the snapshot's symlinks resolve to (names in ``blobs/``); refuse a link out of the repo or not to a blob.

    A regular file in a snapshot that is kept is kept with it; in one that would go, it is refused (the hub cache
    holds none there: it was put there by hand).
    """
    errors: list[str] = []
    linked_dirs: list[str] = []

    def note(rel: str) -> bool:
        if os.path.islink(os.path.join(snapshot.path, rel)):
            linked_dirs.append(rel)
        return False

    blobs: set[str] = set()
    for _rel, location in _walk(snapshot.path, skip=note, errors=errors):
        if not os.path.islink(location):
            if removing:
                raise PruneError(f"{location} is a regular file, not a link to a blob, in a snapshot that would be removed: refusing to prune")
            continue
        target = os.path.realpath(location)
        if os.path.commonpath([target, repo_dir]) != repo_dir:
            raise PruneError(f"{location} is a symlink out of the repo folder {repo_dir} (to {target}): refusing to prune")
        # The first hop must be a blob itself, as huggingface_hub links (``../../blobs/<etag>``): not another link.
        first = os.path.normpath(os.path.join(os.path.dirname(location), os.readlink(location)))
        if os.path.dirname(first) != blobs_dir or os.path.dirname(target) != blobs_dir:
            raise PruneError(f"{location} is a symlink to {first}, not to a blob in {blobs_dir}: refusing to prune")
        blobs.add(os.path.basename(target))
    if linked_dirs:
        raise PruneError(f"{os.path.join(snapshot.path, sorted(linked_dirs)[0])} is a symlink to a folder, not to a blob: refusing to prune")
    if errors:
        raise PruneError(f"{errors[0]}: refusing to prune what cannot be listed")
    return blobs


def _list_blobs(blobs_dir: str) -> dict[str, int]:
    """The blobs (name to size): regular files in ``blobs/``; ``.incomplete`` files, hidden entries and folders are left out."""
    blobs: dict[str, int] = {}
    if not _real_dir(blobs_dir, "blobs"):
        return blobs
    for name in sorted(os.listdir(blobs_dir)):
        if name.endswith(INCOMPLETE_SUFFIX) or name.startswith("."):
            continue
        path = os.path.join(blobs_dir, name)
        st = os.lstat(path)
        if stat.S_ISLNK(st.st_mode):
            raise PruneError(f"{path} is a symlink, not a blob: refusing to prune (blobs in a hub cache are files)")
        if stat.S_ISREG(st.st_mode):
            blobs[name] = st.st_size
    return blobs


def plan_prune(cache_dir: str, repo_id: str, keep: t.Sequence[str], keep_previous: int = 1) -> PrunePlan:
    """What pruning the snapshots of ``repo_id`` in ``cache_dir`` would remove, keeping ``keep`` and ``keep_previous`` others.

    Raises :class:`PruneError` (a :class:`SnapshotError`) for bad arguments, a ``keep`` entry that names no snapshot
    of the cache, and anything the hub cache layout does not hold. A repo folder that does not exist has nothing to prune.
    """
    validate_repo_id(repo_id)
    if keep_previous < 0:
        raise PruneError(f"keep_previous must be 0 or more, not {keep_previous}")
    entries = [entry.strip() for entry in keep]
    if not entries or any(not entry for entry in entries):
        raise PruneError("keep must name at least one snapshot (the commit or ref served), and no empty entry")
    repo_dir = os.path.join(cache_dir, repo_folder(repo_id))
    if not os.path.lexists(repo_dir):
        return PrunePlan(repo_id=repo_id, repo_dir=repo_dir, exists=False)
    # The repo folder itself may be a symlink (the cache on another disk); everything below it is judged from its real path.
    real = os.path.realpath(repo_dir)
    if not os.path.isdir(real):
        raise PruneError(f"{repo_dir} is not a folder: refusing to prune")
    plan = PrunePlan(repo_id=repo_id, repo_dir=real)
    blobs_dir = os.path.join(real, "blobs")
    refs_dir = os.path.join(real, "refs")
    plan.snapshots = _list_snapshots(os.path.join(real, "snapshots"))
    _check_refs(refs_dir)
    refs = _read_refs(real)
    by_commit = {s.commit: s for s in plan.snapshots}

    for entry in entries:
        commit = _resolve_keep(entry, refs, set(by_commit), real)
        if commit not in plan.kept:
            plan.kept.append(commit)
    others = sorted((s for s in plan.snapshots if s.commit not in plan.kept), key=lambda s: (-s.mtime, s.commit))
    plan.kept += [s.commit for s in others[:keep_previous]]
    plan.removed_snapshots = sorted(s.commit for s in others[keep_previous:])

    used: set[str] = set()
    for snapshot in plan.snapshots:
        linked = _snapshot_links(snapshot, real, blobs_dir, removing=snapshot.commit in plan.removed_snapshots)
        if snapshot.commit in plan.kept:
            used |= linked
    plan.removed_blobs = {name: size for name, size in _list_blobs(blobs_dir).items() if name not in used}
    plan.removed_refs = sorted(name for name, commit in refs.items() if commit in plan.removed_snapshots)
    return plan


def _remove_empty_parents(path: str, top: str) -> None:
    """Remove the folders between ``path`` and ``top`` (excluded) that are left empty, deepest first."""
    folder = os.path.dirname(path)
    while folder != top and os.path.commonpath([folder, top]) == top:
        try:
            os.rmdir(folder)
        except OSError:
            return
        folder = os.path.dirname(folder)


def apply_prune(plan: PrunePlan) -> None:
    """Remove what ``plan`` lists: refs, then snapshot folders, then blobs. Raises OSError naming the path on failure."""
    refs_dir = os.path.join(plan.repo_dir, "refs")
    for ref in plan.removed_refs:
        path = os.path.join(refs_dir, ref)
        os.unlink(path)
        _remove_empty_parents(path, refs_dir)
    for commit in plan.removed_snapshots:
        path = os.path.join(plan.repo_dir, "snapshots", commit)
        # rmtree never follows a symlink: links are removed, not what they point to.
        shutil.rmtree(path)
    for name in plan.removed_blobs:
        os.unlink(os.path.join(plan.repo_dir, "blobs", name))
