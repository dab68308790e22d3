# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A hub cache holding three snapshots of one model that share some blobs, for the hf_snapshot_prune tests.

Built with hf_cache_factory (real safetensors shards, huggingface_hub's layout):

============================  ===================  ===================  ===================
file                          OLD (v0.9, pr/1)     PREVIOUS (v1.0)      CURRENT (main)
============================  ===================  ===================  ===================
config.json                   config A             config A             config B
shard 1                       s1                   s1                   s1
shard 2                       s2 old               s2 new               s2 new
shard 3                       s3 old               s3 old               s3 new
notes.txt                     old notes            -                    -
============================  ===================  ===================  ===================

The snapshot folders' mtimes are OLD < PREVIOUS < CURRENT, while the commits sort the other way (OLD's name is the
highest), so that a prune that picked by name instead of by mtime keeps the wrong one. Besides, ``blobs/`` holds an
``.incomplete`` partial download and the distribution's ``.sparkops-partial/`` folder, which a prune must leave.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

from ansible_collections.sparkops.inference.tests.unit.plugins.module_utils.hf_cache_factory import (
    REPO_ID,
    build_cache,
    json_bytes,
    model_files,
    shard_name,
)

OLD = "f" * 40
PREVIOUS = "5" * 40
CURRENT = "1" * 40
SHARD_1, SHARD_2, SHARD_3 = (shard_name(i, 3) for i in (1, 2, 3))
INCOMPLETE = "0" * 64 + ".a1b2c3.incomplete"
PARTIAL = ".sparkops-partial/" + "9" * 64


@dataclass
class ThreeSnapshots:
    cache_dir: Path
    repo_dir: Path
    repo_id: str
    # per commit, path to etag
    etags: dict[str, dict[str, str]]

    @property
    def blobs_dir(self) -> Path:
        return self.repo_dir / "blobs"

    def snapshot(self, commit: str) -> Path:
        return self.repo_dir / "snapshots" / commit

    def blobs_of(self, *commits: str) -> set[str]:
        return {etag for commit in commits for etag in self.etags[commit].values()}

    def blob_names(self) -> set[str]:
        """The blobs now in ``blobs/`` (files only: not the partial folder, hidden entries or ``.incomplete`` files)."""
        return {p.name for p in self.blobs_dir.iterdir() if p.is_file() and not p.name.startswith(".") and not p.name.endswith(".incomplete")}

    def size(self, etags: set[str]) -> int:
        return sum((self.blobs_dir / etag).stat().st_size for etag in etags)

    def refs(self) -> set[str]:
        refs_dir = self.repo_dir / "refs"
        return {p.relative_to(refs_dir).as_posix() for p in refs_dir.rglob("*") if p.is_file()}

    def tree(self) -> dict[str, tuple[str, int | str]]:
        """Every entry under the repo folder: its kind and its size or link target, to compare before and after."""
        out: dict[str, tuple[str, int | str]] = {}
        for path in sorted(self.repo_dir.rglob("*")):
            rel = path.relative_to(self.repo_dir).as_posix()
            if path.is_symlink():
                out[rel] = ("link", os.readlink(path))
            elif path.is_dir():
                out[rel] = ("dir", 0)
            else:
                out[rel] = ("file", path.stat().st_size)
        return out


def build_three_snapshots(root: Path) -> ThreeSnapshots:
    """Write OLD, PREVIOUS and CURRENT of REPO_ID into ``root/hub`` (see the module's docstring) and return them."""
    first = model_files(root / "staging", shards=3, seed=1)
    second = model_files(root / "staging", shards=3, seed=2)
    config_b = json_bytes({"architectures": ["TinyLlmForCausalLM"], "model_type": "tiny_llm", "hidden_size": 8, "num_hidden_layers": 3, "v": 2})
    old = {**first, "notes.txt": b"the old snapshot's notes\n"}
    previous = {**first, SHARD_2: second[SHARD_2]}
    current = {**previous, "config.json": config_b, SHARD_3: second[SHARD_3]}
    etags: dict[str, dict[str, str]] = {}
    for commit, files, refs in ((OLD, old, ("v0.9", "refs/pr/1")), (PREVIOUS, previous, ("v1.0",)), (CURRENT, current, ("main",))):
        cache = build_cache(root, commit=commit, refs=refs, files=files)
        etags[commit] = dict(cache.etags)
    repo_dir = cache.repo_dir
    (repo_dir / "blobs" / INCOMPLETE).write_bytes(b"half a shard")
    (repo_dir / "blobs" / PARTIAL).parent.mkdir()
    (repo_dir / "blobs" / PARTIAL).write_bytes(b"a partial the distribution left")
    now = time.time()
    for age, commit in ((3000, OLD), (2000, PREVIOUS), (1000, CURRENT)):
        os.utime(repo_dir / "snapshots" / commit, (now - age, now - age))
    return ThreeSnapshots(cache_dir=cache.cache_dir, repo_dir=repo_dir, repo_id=REPO_ID, etags=etags)
