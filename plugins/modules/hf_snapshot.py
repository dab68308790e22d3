#!/usr/bin/python
# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: hf_snapshot
short_description: Check that a Hugging Face model snapshot on disk is complete and intact
version_added: 1.0.0
description:
  - Checks, without the network and with the Python standard library only, that the snapshot of a Hugging Face model
    repo at a revision is complete in a hub cache (O(cache_dir)) or in an C(hf download --local-dir) folder (O(local_dir)),
    so that vLLM can load it offline (C(HF_HUB_OFFLINE=1)).
  - "In a hub cache the revision resolves to a commit through C(refs/<revision>) (a branch or tag, as huggingface_hub
    writes it; a pull request is V(refs/pr/<n>)), or is a 40-hex commit itself; the snapshot is
    C(snapshots/<commit>/), whose files are relative symlinks to C(blobs/<etag>). In a local dir the commit is the
    one its download metadata (C(.cache/huggingface/download/<path>.metadata)) records for its files."
  - "O(mode=quick) checks that the revision resolves to a commit; that the O(required_files) and every shard named in
    C(model.safetensors.index.json) (or the single C(model.safetensors)) are there and every symlink resolves; that
    each C(.safetensors) file's header parses and its size is exactly 8 + the header length + the end of the last
    tensor's data (which a truncated download breaks); that the shards hold every tensor of the index's C(weight_map);
    and that no C(.incomplete) download of the snapshot's files is left (in a hub cache, one next to its whole blob is
    what a killed attempt left: it only warns, see RV(stale_partials)). A snapshot with a C(config.json) but no
    weights is incomplete. It reads headers only: a 119 GB snapshot is checked in well under a second."
  - "The verdict follows what the engine loads. The index's C(metadata.total_size) is compared with the shards'
    tensor data, but no loader reads it (vLLM reads only the index's C(weight_map); transformers, safetensors and
    huggingface_hub do not use the total either), so a value that disagrees, or is not a byte count, only warns (the
    task's warnings, and RV(index_total_size_matches=false)): the snapshot stays complete and nothing is fetched or
    sent again for it."
  - O(mode=full) also hashes every file and compares it with its etag, the content address the Hub gives it (the
    sha256 of an LFS file such as a weight shard, the git blob sha1 of a regular file), in parallel across files. It
    finds a shard corrupted in place at the same size, which O(mode=quick) cannot. It keeps a manifest of the files
    found good, keyed on their path, size, mtime and inode, so that a rerun on an unchanged snapshot does not read
    them again.
  - Returns what it found even when it fails. With O(fail_on_incomplete=true) (the default) an incomplete snapshot
    fails the task, with a message that lists the first 20 problems and how many more there are.
options:
  repo_id:
    description:
      - The model repo, for example V(Qwen/Qwen3.5-122B-A10B-FP8). Its cache folder is C(models--<org>--<name>).
    type: str
    required: true
  revision:
    description:
      - A branch, tag or pull-request ref (V(refs/pr/<n>)) resolved through the cache's C(refs/), or a full 40-hex commit.
      - With O(local_dir), only a commit is checked (against the one the download metadata records); a branch or tag
        cannot be resolved there without the network, so the recorded commit is taken.
    type: str
    default: main
  cache_dir:
    description:
      - The Hugging Face hub cache that holds the snapshot.
      - "Default: the one huggingface_hub uses, from the environment of the module on the target, in the same order:
        E(HF_HUB_CACHE), else E(HUGGINGFACE_HUB_CACHE), else E(HF_HOME)C(/hub), else
        E(XDG_CACHE_HOME)C(/huggingface/hub), else C(~/.cache/huggingface/hub) (of the remote user, or of the
        O(ignore:become_user) with become). Variables set only in an interactive shell's profile are not seen; set
        them with the task's C(environment) or give O(cache_dir)."
      - Mutually exclusive with O(local_dir).
    type: path
  local_dir:
    description:
      - An C(hf download --local-dir) folder that holds the snapshot as plain files, instead of a hub cache.
      - Mutually exclusive with O(cache_dir).
    type: path
  mode:
    description:
      - V(quick) reads the safetensors headers and checks the layout; V(full) also hashes every file against its etag.
    type: str
    choices: [quick, full]
    default: quick
  fail_on_incomplete:
    description:
      - Fail the task when the snapshot is incomplete (RV(complete=false)). The result still carries every field.
      - With V(false) the module reports and does not fail.
    type: bool
    default: true
  required_files:
    description:
      - Files, relative to the snapshot, that must be there besides the weights (which are always required).
      - Each entry is one requirement. V(|) separates alternatives, any one of which satisfies it; V(+) joins files that
        must all be there for an alternative.
      - The default requires C(config.json), C(tokenizer_config.json) and a tokenizer, C(tokenizer.json) or
        C(tokenizer.model) or both C(vocab.json) and C(merges.txt).
      - When a requirement is not met, the files of its first alternative are listed in RV(missing).
    type: list
    elements: str
    default: [config.json, tokenizer_config.json, "tokenizer.json|tokenizer.model|vocab.json+merges.txt"]
  manifest:
    description:
      - In O(mode=full), reuse and update the manifest of verified files (a JSON file), so that a file whose size,
        mtime and inode have not changed since it was found good is not hashed again.
      - Writing the manifest does not count as a change. In check mode it is read but not written.
    type: bool
    default: true
  manifest_path:
    description:
      - Where the manifest is.
      - "Default: C(<cache_dir>/models--<org>--<name>/.sparkops-verified.json), or
        C(<local_dir>/.cache/huggingface/.sparkops-verified.json) with O(local_dir)."
    type: path
  hash_workers:
    description:
      - How many files O(mode=full) hashes at once (threads; the hashing itself runs outside Python's lock).
      - Default the number of CPUs, at most 8.
    type: int
extends_documentation_fragment:
  - sparkops.inference._attributes
  - sparkops.inference._attributes.info_module
notes:
  - Never changes the model files. Only the manifest is written, in O(mode=full) outside check mode.
  - Needs no huggingface_hub on the target. The layouts are those of huggingface_hub 0.23 and later.
  - Only safetensors weights are understood; a snapshot with only C(pytorch_model.bin) weights is reported incomplete.
  - "Model files are untrusted input, and checking one costs a bounded time whatever its content: a safetensors header
    of 64 MiB or more (the safetensors library allows 100 MB) or listing more than 524,288 tensors, a number in it
    past 64 bits (a dimension, offset or size, as in the library), a header nested too deeply, or a C(config.json) or
    index of more than 64 MiB or nested more than 64 levels deep, makes the file corrupt (RV(corrupt), with the
    reason). Real checkpoints stay far below these caps: a 100B-class model's shard header is a few hundred kB listing
    a few thousand tensors."
seealso:
  - name: Understand caching (huggingface_hub)
    description: The layout of the hub cache.
    link: https://huggingface.co/docs/huggingface_hub/guides/manage-cache
author:
  - sparkops.inference developers (@sparkops)
"""

EXAMPLES = r"""
- name: Check the served model in the default cache of the service user
  sparkops.inference.hf_snapshot:
    repo_id: "{{ sparkops_model_repo }}"
    revision: "{{ sparkops_model_revision }}"
  become: true
  become_user: vllm
  register: model_snapshot

- name: Show what was checked
  ansible.builtin.debug:
    msg: >-
      {{ model_snapshot.commit }}: {{ model_snapshot.shards }} shards,
      {{ (model_snapshot.total_bytes / 1e9) | round(1) }} GB, {{ model_snapshot.architectures | join(',') }}

- name: Verify every byte against the Hub's hashes after the rsync (a rerun reuses the manifest)
  sparkops.inference.hf_snapshot:
    repo_id: Qwen/Qwen3.5-122B-A10B-FP8
    revision: main
    cache_dir: /data/hf/hub
    mode: full
    hash_workers: 8

- name: Decide whether to download, without failing
  sparkops.inference.hf_snapshot:
    repo_id: Qwen/Qwen3.5-122B-A10B-FP8
    local_dir: /data/models/qwen3.5-122b-fp8
    fail_on_incomplete: false
  register: local_model

- name: Download what is missing
  ansible.builtin.command:
    cmd: hf download Qwen/Qwen3.5-122B-A10B-FP8 --local-dir /data/models/qwen3.5-122b-fp8
  when: not local_model.complete
  changed_when: true

- name: A model whose tokenizer is a SentencePiece file only
  sparkops.inference.hf_snapshot:
    repo_id: mistralai/Mistral-7B-Instruct-v0.3
    required_files: [config.json, tokenizer.model]
"""

RETURN = r"""
complete:
  description: Whether the revision resolved to a snapshot and no problem was found (RV(problems) is empty).
  returned: always
  type: bool
  sample: true
repo_id:
  description: O(repo_id).
  returned: always
  type: str
  sample: Qwen/Qwen3.5-122B-A10B-FP8
revision:
  description: O(revision).
  returned: always
  type: str
  sample: main
commit:
  description: The commit the revision resolved to; null when it did not resolve.
  returned: always
  type: str
  sample: 0123456789abcdef0123456789abcdef01234567
mode:
  description: O(mode).
  returned: always
  type: str
  sample: quick
source:
  description: V(cache_dir) or V(local_dir), the layout checked.
  returned: always
  type: str
  sample: cache_dir
root:
  description: The repo's cache folder (C(<cache_dir>/models--<org>--<name>)), or the local dir.
  returned: always
  type: str
  sample: /home/vllm/.cache/huggingface/hub/models--Qwen--Qwen3.5-122B-A10B-FP8
snapshot_path:
  description: The snapshot folder (C(<root>/snapshots/<commit>), or the local dir); null when there is none.
  returned: always
  type: str
  sample: /home/vllm/.cache/huggingface/hub/models--Qwen--Qwen3.5-122B-A10B-FP8/snapshots/0123456789abcdef0123456789abcdef01234567
refs:
  description: The cache's refs (name to commit); empty for a local dir.
  returned: always
  type: dict
  sample: {main: 0123456789abcdef0123456789abcdef01234567}
files:
  description: The files of the snapshot, sorted by path.
  returned: always
  type: list
  elements: dict
  contains:
    path:
      description: The path relative to the snapshot.
      type: str
      returned: always
      sample: model-00001-of-00039.safetensors
    size:
      description: The size in bytes; null for a dangling symlink.
      type: int
      returned: always
      sample: 3992001072
    etag:
      description:
        - The content address the Hub gives the file, the sha256 of an LFS file or the git blob sha1 of a regular file
          (the blob name in a cache, the metadata's etag in a local dir); null when there is none to check against.
      type: str
      returned: always
      sample: 5f1c0e0e7f4b3c2a1d9e8f7a6b5c4d3e2f1a0b9c8d7e6f5a4b3c2d1e0f9a8b7c
  sample: [{path: config.json, size: 4190, etag: 1f0ce5ab0a9d4b1e2c3d4e5f6a7b8c9d0e1f2a3b}]
total_bytes:
  description: The total size of RV(files) in bytes.
  returned: always
  type: int
  sample: 126521073664
missing:
  description:
    - Required files and shards that are not there, relative to the snapshot (for an unmet O(required_files) entry with
      alternatives, those of its first alternative; V(model.safetensors) when the snapshot has no weights).
  returned: always
  type: list
  elements: str
  sample: [model-00007-of-00039.safetensors]
corrupt:
  description: Files that are there but wrong.
  returned: always
  type: list
  elements: dict
  contains:
    path:
      description: The path relative to the snapshot.
      type: str
      returned: always
      sample: model-00003-of-00039.safetensors
    reason:
      description: What is wrong, for example a dangling symlink, a truncated file, a bad header or a hash mismatch.
      type: str
      returned: always
      sample: "bad safetensors file: truncated: 1048576 bytes, the header says 3992001072 (8 + 33288 + 3991967776)"
problems:
  description:
    - Every problem found, in words, in the order found; the failure message lists the first 20.
    - Besides RV(missing) and RV(corrupt), an unresolved revision, a missing snapshot or cache folder, a local dir of
      several commits, and unfinished downloads of the snapshot's files.
  returned: always
  type: list
  elements: str
  sample: ["model-00007-of-00039.safetensors is missing (a shard named in model.safetensors.index.json)"]
incomplete_files:
  description:
    - The C(.incomplete) partial downloads found, relative to RV(root). One of a file of the snapshot that is not there
      whole, or any one while a file is missing (or any one in a local dir), is a problem; others only warn.
  returned: always
  type: list
  elements: str
  sample: [blobs/5f1c0e0e7f4b3c2a1d9e8f7a6b5c4d3e2f1a0b9c8d7e6f5a4b3c2d1e0f9a8b7c.incomplete]
stale_partials:
  description:
    - The RV(incomplete_files) of a hub cache whose blob is there whole (its snapshot file resolves and is not
      corrupt). huggingface_hub renames a blob into place only when it is whole and names each attempt's partial
      C(<etag>.<id>.incomplete), so these are what killed attempts left. They only warn, and can be deleted.
  returned: always
  type: list
  elements: str
  sample: [blobs/5f1c0e0e7f4b3c2a1d9e8f7a6b5c4d3e2f1a0b9c8d7e6f5a4b3c2d1e0f9a8b7c.3f2a9c1d.incomplete]
unverified:
  description: Files of the snapshot with no etag (not a cache symlink, no download metadata), which O(mode=full) cannot verify.
  returned: always
  type: list
  elements: str
  sample: []
architectures:
  description: The C(architectures) of C(config.json); null when it has none or cannot be read.
  returned: always
  type: list
  elements: str
  sample: [Qwen3_5MoeForConditionalGeneration]
shards:
  description: The number of safetensors weight files (those the index names, or 1 for a single C(model.safetensors)).
  returned: always
  type: int
  sample: 39
index_total_size:
  description:
    - C(metadata.total_size) of C(model.safetensors.index.json); null without an index or that field, or when it is not
      a byte count (which only warns).
  returned: always
  type: int
  sample: 126468718592
index_total_size_matches:
  description:
    - Whether RV(index_total_size) equals RV(tensor_bytes); null when either is null.
    - V(false) only warns and never makes the snapshot incomplete, since no loader reads C(metadata.total_size).
  returned: always
  type: bool
  sample: true
tensor_bytes:
  description: The bytes of tensor data in the shards, by their headers; null unless every shard's header is good.
  returned: always
  type: int
  sample: 126468718592
hashed_files:
  description: The files O(mode=full) read and hashed in this run (0 in O(mode=quick)).
  returned: always
  type: int
  sample: 45
hashed_bytes:
  description: The bytes O(mode=full) read and hashed in this run.
  returned: always
  type: int
  sample: 126521073664
reused_files:
  description: The files O(mode=full) did not read because the manifest showed them verified and unchanged.
  returned: always
  type: int
  sample: 0
manifest_path:
  description: The manifest O(mode=full) used; null in O(mode=quick) or with O(manifest=false).
  returned: always
  type: str
  sample: /home/vllm/.cache/huggingface/hub/models--Qwen--Qwen3.5-122B-A10B-FP8/.sparkops-verified.json
manifest_written:
  description: Whether the manifest was written (never in check mode, nor when nothing in it changed).
  returned: always
  type: bool
  sample: true
elapsed:
  description: The seconds the check took.
  returned: always
  type: float
  sample: 0.042
"""

# Imports follow the documentation, as validate-modules requires.
from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible_collections.sparkops.inference.plugins.module_utils._hf_snapshot import (  # noqa: E402
    DEFAULT_REQUIRED_FILES,
    SnapshotError,
    check_snapshot,
)


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "repo_id": {"type": "str", "required": True},
            "revision": {"type": "str", "default": "main"},
            "cache_dir": {"type": "path"},
            "local_dir": {"type": "path"},
            "mode": {"type": "str", "choices": ["quick", "full"], "default": "quick"},
            "fail_on_incomplete": {"type": "bool", "default": True},
            "required_files": {"type": "list", "elements": "str", "default": list(DEFAULT_REQUIRED_FILES)},
            "manifest": {"type": "bool", "default": True},
            "manifest_path": {"type": "path"},
            "hash_workers": {"type": "int"},
        },
        mutually_exclusive=[("cache_dir", "local_dir")],
        supports_check_mode=True,
    )
    p = module.params
    if p["hash_workers"] is not None and p["hash_workers"] < 1:
        module.fail_json(msg=f"hash_workers must be at least 1, not {p['hash_workers']}")
    try:
        report = check_snapshot(
            p["repo_id"],
            p["revision"],
            cache_dir=p["cache_dir"],
            local_dir=p["local_dir"],
            mode=p["mode"],
            required_files=p["required_files"],
            manifest=p["manifest"],
            manifest_path=p["manifest_path"],
            write_manifest=not module.check_mode,
            hash_workers=p["hash_workers"],
        )
    except SnapshotError as exc:
        module.fail_json(msg=str(exc))
    for warning in report.warnings:
        module.warn(warning)
    result = report.as_dict()
    if not report.complete and p["fail_on_incomplete"]:
        module.fail_json(msg=report.message(), changed=False, **result)
    module.exit_json(changed=False, **result)


if __name__ == "__main__":
    main()
