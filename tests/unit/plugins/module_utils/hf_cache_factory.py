# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Build real Hugging Face model snapshots for the hf_snapshot tests: a hub cache and an ``hf download --local-dir``.

A thin layer over the lab's model builder, tests/lab/sparklab/hf_model.py, which writes the hub cache layout
(``<cache>/models--<org>--<name>/blobs/<etag>``, ``snapshots/<commit>/<path> -> ../../blobs/<etag>`` relative
symlinks, ``refs/<revision>``; the etag of an LFS file is its sha256, that of any other file its git blob sha1).
What is particular to these tests stays here:

* the content: a tiny causal LM (``TinyLlmForCausalLM``) whose shards hold a few tensors of several dtypes,
  written with the ``safetensors`` library, and ``model.safetensors.index.json`` mapping every tensor to its shard
  with ``metadata.total_size`` the bytes of tensor data; tests edit, add or drop files before the cache is written;
* fixed commits, and refs such as tags and pull requests;
* :class:`HubCache`, the written files with their content, to corrupt or remove them;
* the local dir layout: ``<dir>/<path>`` and ``<dir>/.cache/huggingface/download/<path>.metadata`` (commit, etag,
  timestamp).
"""

from __future__ import annotations

import typing as t
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from ansible_collections.sparkops.inference.tests.lab.sparklab.hf_model import (
    INDEX,
    etag_of,
    json_bytes,
    repo_folder,
    shard_name,
    write_hub_snapshot,
)
from safetensors.numpy import save_file

REPO_ID = "acme/tiny-llm"
COMMIT = "0123456789abcdef0123456789abcdef01234567"
OTHER_COMMIT = "fedcba9876543210fedcba9876543210fedcba98"


def model_files(staging: Path, shards: int = 3, single: bool = False, seed: int = 0) -> dict[str, bytes]:
    """The files of a tiny causal LM: configs, tokenizer, and ``shards`` safetensors shards plus the index.

    With ``single`` the weights are one ``model.safetensors`` and there is no index. ``staging`` holds the
    safetensors files while they are written.
    """
    rng = np.random.default_rng(seed)
    files: dict[str, bytes] = {
        "config.json": json_bytes({"architectures": ["TinyLlmForCausalLM"], "model_type": "tiny_llm", "hidden_size": 8, "num_hidden_layers": shards}),
        "generation_config.json": json_bytes({"bos_token_id": 1, "eos_token_id": 2}),
        "tokenizer.json": json_bytes({"version": "1.0", "model": {"type": "BPE", "vocab": {"<s>": 1, "</s>": 2, "a": 3}, "merges": []}}),
        "tokenizer_config.json": json_bytes({"tokenizer_class": "PreTrainedTokenizerFast", "bos_token": "<s>", "eos_token": "</s>"}),
    }
    names = [shard_name(i, shards) for i in range(1, shards + 1)] if not single else ["model.safetensors"]
    weight_map: dict[str, str] = {}
    total = 0
    staging.mkdir(parents=True, exist_ok=True)
    for layer, name in enumerate(names):
        tensors = {
            f"model.layers.{layer}.mlp.weight": rng.standard_normal((8, 16)).astype(np.float16),
            f"model.layers.{layer}.norm.weight": rng.standard_normal(8).astype(np.float32),
            f"model.layers.{layer}.mlp.weight_scale": rng.integers(-128, 127, size=(4,), dtype=np.int8),
        }
        total += sum(int(a.nbytes) for a in tensors.values())
        weight_map.update(dict.fromkeys(tensors, name))
        path = staging / name
        save_file(tensors, str(path), metadata={"format": "pt"})
        files[name] = path.read_bytes()
        path.unlink()
    if not single:
        files[INDEX] = json_bytes({"metadata": {"total_size": total}, "weight_map": weight_map})
    return files


@dataclass
class HubCache:
    """A model in a hub cache, as huggingface_hub lays it out."""

    cache_dir: Path
    repo_id: str
    commit: str
    files: dict[str, bytes]
    etags: dict[str, str] = field(default_factory=dict)

    @property
    def repo_dir(self) -> Path:
        return self.cache_dir / repo_folder(self.repo_id)

    @property
    def snapshot(self) -> Path:
        return self.repo_dir / "snapshots" / self.commit

    def blob(self, path: str) -> Path:
        return self.repo_dir / "blobs" / self.etags[path]

    def link(self, path: str) -> Path:
        return self.snapshot / path

    def remove(self, path: str) -> None:
        """Remove a file from the snapshot and its blob (as if it was never downloaded)."""
        self.link(path).unlink()
        self.blob(path).unlink()


def build_cache(
    root: Path,
    repo_id: str = REPO_ID,
    commit: str = COMMIT,
    refs: t.Sequence[str] = ("main",),
    shards: int = 3,
    single: bool = False,
    files: dict[str, bytes] | None = None,
    omit: t.Sequence[str] = (),
) -> HubCache:
    """Write the snapshot ``commit`` of ``repo_id`` into the hub cache ``root/hub`` and return it.

    ``files`` replaces the generated model files; ``omit`` leaves some out; ``refs`` names the refs that point
    to the commit (a tag ``v1.0``, or ``refs/pr/1`` for a pull request).
    """
    content = dict(files) if files is not None else model_files(root / "staging", shards=shards, single=single)
    for path in omit:
        content.pop(path)
    written = write_hub_snapshot(root / "hub", repo_id, content, commit=commit, refs=refs)
    return HubCache(cache_dir=written.cache_dir, repo_id=repo_id, commit=commit, files=content, etags=written.etags)


@dataclass
class LocalDir:
    """A model downloaded with ``hf download --local-dir``."""

    path: Path
    commit: str
    files: dict[str, bytes]
    etags: dict[str, str] = field(default_factory=dict)

    @property
    def download_dir(self) -> Path:
        return self.path / ".cache" / "huggingface" / "download"

    def metadata(self, path: str) -> Path:
        return self.download_dir / f"{path}.metadata"


def build_local_dir(
    root: Path,
    commit: str = COMMIT,
    shards: int = 3,
    files: dict[str, bytes] | None = None,
    omit: t.Sequence[str] = (),
) -> LocalDir:
    """Write the model into ``root/local`` with its download metadata and return it."""
    content = dict(files) if files is not None else model_files(root / "staging", shards=shards)
    for path in omit:
        content.pop(path)
    local = LocalDir(path=root / "local", commit=commit, files=content)
    hf_dir = local.path / ".cache" / "huggingface"
    hf_dir.mkdir(parents=True)
    (hf_dir / ".gitignore").write_text("*")
    for path, data in sorted(content.items()):
        etag = etag_of(path, data)
        local.etags[path] = etag
        target = local.path / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        meta = local.metadata(path)
        meta.parent.mkdir(parents=True, exist_ok=True)
        meta.write_text(f"{commit}\n{etag}\n{target.stat().st_mtime + 0.5}\n")
    return local
