#!/usr/bin/python
# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: hf_snapshot_prune
short_description: Remove the old snapshots of a Hugging Face model from a hub cache, keeping the one served
version_added: 1.0.0
description:
  - Removes from a Hugging Face hub cache (O(cache_dir)) the snapshots of the model O(repo_id) other than those named
    in O(keep) and the O(keep_previous) most recent others, the blobs that only they use, and the refs that point to
    their commits.
  - "The cache layout is huggingface_hub's: C(<cache_dir>/models--<org>--<name>/) holds C(refs/<name>) (a file holding
    a commit), C(snapshots/<commit>/<path>) (relative symlinks to C(../../blobs/<etag>)) and C(blobs/<etag>), the
    files themselves, shared by every snapshot that has the same file."
  - The module works on that layout directly, with the Python standard library, as M(sparkops.inference.hf_snapshot)
    does. huggingface_hub has this pruning too (its C(scan_cache_dir) and C(delete_revisions) functions), but modules
    run in the node's system Python, which has no huggingface_hub (the C(model_sync) role installs it on the head
    only, in the CLI's venv).
  - "Each entry of O(keep) is a ref (V(main), V(refs/main), a pull request V(refs/pr/1)) resolved through C(refs/), or
    a 40-hex commit. Each must name a snapshot folder of the cache, or the module fails and removes nothing: an entry
    that names nothing could be the snapshot meant to be served."
  - Of the other snapshots, the O(keep_previous) most recent by the mtime of their C(snapshots/<commit>) folder (the
    time the download or the distribution made it) are kept too; the rest are removed.
  - A blob is kept when any symlink in a kept snapshot resolves to it; every other blob in C(blobs/) is removed,
    including blobs that no snapshot links to. The refs that point to a removed commit are removed (and the folders
    this leaves empty under C(refs/), such as C(refs/refs/pr/)); the refs of kept commits never are.
  - C(.incomplete) files (a download in progress or interrupted), hidden entries and folders in C(blobs/) (the
    distribution's C(.sparkops-partial/)), the cache's C(.locks/) and the repo folder's own files are left alone.
  - "It never follows a symlink out of the repo folder, and refuses, before removing anything and naming the path,
    what the hub cache does not hold: a symlink in a snapshot that resolves out of the repo folder, or not to a file
    directly in C(blobs/) (a blob that is itself a symlink into a shared store included); an entry of C(snapshots/)
    that is a file, a symlink or not named after a commit; a symlink in C(blobs/) or C(refs/); a regular file in a
    snapshot that would be removed (one in a kept snapshot is kept with it)."
  - Removes refs first, then snapshot folders, then blobs, so that a run stopped half way leaves no ref to a missing
    snapshot and no kept link to a missing blob; the next run removes the rest.
  - A repo folder that is not in the cache has nothing to prune.
options:
  repo_id:
    description:
      - The model repo, for example V(Qwen/Qwen3.5-122B-A10B-FP8). Its cache folder is C(models--<org>--<name>).
    type: str
    required: true
  cache_dir:
    description:
      - The Hugging Face hub cache (C(HF_HUB_CACHE)) that holds the model.
    type: path
    required: true
  keep:
    description:
      - The snapshots to keep, each a ref (V(main), V(refs/main), V(refs/pr/1)) or a 40-hex commit; at least one.
      - Give the commit served rather than a ref where refs may differ between nodes.
    type: list
    elements: str
    required: true
  keep_previous:
    description:
      - How many further snapshots to keep, the most recent by their snapshot folder's mtime among those not in O(keep).
      - V(0) keeps only O(keep).
    type: int
    default: 1
extends_documentation_fragment:
  - sparkops.inference._attributes
attributes:
  check_mode:
    support: full
    details:
      - Reports what it would remove (RV(removed_snapshots), RV(removed_blobs), RV(freed_bytes), RV(removed_refs)) and
        removes nothing.
  diff_mode:
    support: full
    details:
      - The diff lists the model's snapshots (commits, one a line) before and after.
  idempotent:
    support: full
notes:
  - Run it when no download of the model is in progress; a download's finished blobs that no snapshot links to yet
    would be removed (its C(.incomplete) files are left).
  - A vLLM that still serves a snapshot being removed keeps the files it has open until it restarts; keep that
    snapshot (O(keep), or O(keep_previous)) until it serves the new one.
  - Needs write access to the cache; use C(become) as needed.
seealso:
  - module: sparkops.inference.hf_snapshot
    description: Checks that a snapshot in the same cache is complete.
  - name: Manage the cache (huggingface_hub)
    description: The cache layout, and huggingface_hub's own cleaning (C(hf cache), C(delete_revisions)).
    link: https://huggingface.co/docs/huggingface_hub/guides/manage-cache
author:
  - sparkops.inference developers (@sparkops)
"""

EXAMPLES = r"""
- name: Keep the commit served and the previous snapshot; remove older ones
  sparkops.inference.hf_snapshot_prune:
    repo_id: Qwen/Qwen3.5-122B-A10B-FP8
    cache_dir: /var/lib/sparkops/huggingface/hub
    keep:
      - "{{ model_check.commit }}"
  become: true
  register: pruned

- name: Say what was freed
  ansible.builtin.debug:
    msg: "{{ pruned.removed_snapshots | length }} snapshot(s), {{ (pruned.freed_bytes / 1e9) | round(1) }} GB freed"

- name: Keep only what the main branch and a tag name
  sparkops.inference.hf_snapshot_prune:
    repo_id: Qwen/Qwen3.5-122B-A10B-FP8
    cache_dir: /data/hf/hub
    keep: [main, refs/v1.0]
    keep_previous: 0
"""

RETURN = r"""
repo_dir:
  description: The repo's cache folder (C(<cache_dir>/models--<org>--<name>), its real path).
  returned: success
  type: str
  sample: /var/lib/sparkops/huggingface/hub/models--Qwen--Qwen3.5-122B-A10B-FP8
kept:
  description:
    - The commits kept, those O(keep) names first, in its order, then the O(keep_previous) most recent others.
    - Empty when the repo folder is not in the cache.
  returned: success
  type: list
  elements: str
  sample: [0123456789abcdef0123456789abcdef01234567, fedcba9876543210fedcba9876543210fedcba98]
removed_snapshots:
  description: The commits whose snapshot folder was removed (in check mode, would be), sorted.
  returned: success
  type: list
  elements: str
  sample: [1111111111111111111111111111111111111111]
removed_refs:
  description: The refs removed (in check mode, would be), relative to C(refs/), sorted; those pointing to a removed commit.
  returned: success
  type: list
  elements: str
  sample: [v0.9]
removed_blobs:
  description: How many blobs were removed (in check mode, would be).
  returned: success
  type: int
  sample: 39
freed_bytes:
  description: The size of the blobs removed (in check mode, would be), in bytes.
  returned: success
  type: int
  sample: 126521073664
diff:
  description: The model's snapshots before and after, one commit a line, sorted.
  returned: success, in diff mode
  type: dict
  contains:
    before:
      description: The snapshots there before.
      type: str
      returned: success
    after:
      description: The snapshots there after (in check mode, that would be).
      type: str
      returned: success
  sample:
    before: "0123456789abcdef0123456789abcdef01234567\n1111111111111111111111111111111111111111\n"
    after: "0123456789abcdef0123456789abcdef01234567\n"
"""

# Imports follow the documentation, as validate-modules requires.
import typing as t  # noqa: E402

from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible_collections.sparkops.inference.plugins.module_utils._hf_snapshot import SnapshotError  # noqa: E402
from ansible_collections.sparkops.inference.plugins.module_utils._hf_snapshot_prune import apply_prune, plan_prune  # noqa: E402


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "repo_id": {"type": "str", "required": True},
            "cache_dir": {"type": "path", "required": True},
            "keep": {"type": "list", "elements": "str", "required": True},
            "keep_previous": {"type": "int", "default": 1},
        },
        supports_check_mode=True,
    )
    p = module.params
    try:
        plan = plan_prune(p["cache_dir"], p["repo_id"], p["keep"], p["keep_previous"])
    except SnapshotError as exc:
        module.fail_json(msg=str(exc), changed=False)
    except OSError as exc:
        module.fail_json(msg=f"cannot read the cache: {exc}", changed=False)
    result: dict[str, t.Any] = {"changed": plan.changed, **plan.as_dict()}
    if module._diff:
        result["diff"] = plan.diff()
    if plan.changed and not module.check_mode:
        try:
            apply_prune(plan)
        except OSError as exc:
            module.fail_json(msg=f"pruning {plan.repo_dir} failed, some of it may be removed (a rerun removes the rest): {exc}", **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
