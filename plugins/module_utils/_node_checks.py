# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What the vLLM start gate checks on each other node of a Ray cluster, and how it words what it found.

In Ray mode the vLLM unit runs on the head only, but the engine (offline) replaces the repo id by the head's
**absolute** snapshot path and ships it to the Ray workers, and vLLM checks ``MemAvailable`` against
``MemTotal x gpu_memory_utilization`` on every worker. So the head's gate runs :func:`check_node` on every other node,
as a Ray task pinned to it (``_ray_cluster.NODE_TASK_SCRIPT``, which sends this module and the ones it imports,
:data:`SHIPPED_MODULES`, along with the task): the snapshot at the head's path with the head's commit passes the quick
check of :mod:`._hf_snapshot`, and ``MemAvailable`` reaches the threshold (waiting up to a timeout, as the head's
memory gate does). :func:`check_node` returns facts (plain JSON); :func:`snapshot_problem`, :func:`memory_problem`
and :func:`describe` word them on the head.

Standard library and the modules in :data:`SHIPPED_MODULES` only: this runs under Ray's Python on the nodes.

Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
"""

from __future__ import annotations

import math
import os
import time
import typing as t

from ansible_collections.sparkops.inference.plugins.module_utils._hf_snapshot import check_snapshot, repo_folder
from ansible_collections.sparkops.inference.plugins.module_utils._meminfo import MeminfoError, parse_meminfo

# This module and every module util it imports, directly or not: what a node needs to run check_node.
SHIPPED_MODULES = ("_node_checks", "_hf_snapshot", "_content_hash", "_safetensors_header", "_meminfo")
ENTRY = "_node_checks:check_node"
MAX_PROBLEMS = 5


def _read_text(path: str) -> str:
    with open(path, encoding="ascii", errors="replace") as f:
        return f.read()


def snapshot_facts(spec: t.Mapping[str, t.Any]) -> dict[str, t.Any]:
    """Check the snapshot ``spec`` names (``repo_id``, ``revision``, ``commit`` and ``path``, as the head resolved
    them, and ``cache_dir``) on this node: the commit's snapshot in the cache, quick check."""
    repo_id, revision, commit, cache_dir = str(spec["repo_id"]), str(spec["revision"]), str(spec["commit"]), str(spec["cache_dir"])
    report = check_snapshot(repo_id, commit, cache_dir=cache_dir)
    snapshots = os.path.join(cache_dir, repo_folder(repo_id), "snapshots")
    try:
        held = sorted(os.listdir(snapshots))
    except OSError:
        held = []
    return {
        "path": str(spec["path"]),
        "resolved_path": report.snapshot_path,
        "exists": os.path.isdir(str(spec["path"])),
        "repo_dir_exists": os.path.isdir(report.root),
        "complete": report.complete,
        "problems": report.problems[:MAX_PROBLEMS],
        "problem_count": len(report.problems),
        "shards": report.shards,
        # What this node's cache calls `revision` (None: no such ref; a revision that is a commit needs none).
        "ref": None if revision == commit else report.refs.get(revision),
        "held": held,
    }


def memory_facts(
    spec: t.Mapping[str, t.Any],
    read: t.Callable[[str], str] = _read_text,
    clock: t.Callable[[], float] = time.monotonic,
    sleep: t.Callable[[float], t.Any] = time.sleep,
) -> dict[str, t.Any]:
    """Wait up to ``timeout`` seconds for ``MemAvailable`` to reach ``min_available_mib`` (when 0:
    ``min_available_fraction`` of ``MemTotal``), reading ``meminfo_path`` every ``interval`` seconds; at least once."""
    path = str(spec.get("meminfo_path") or "/proc/meminfo")
    start = clock()
    deadline = start + max(0.0, float(spec.get("timeout") or 0))
    interval = float(spec.get("interval") or 2.0)
    while True:
        try:
            info = parse_meminfo(read(path))
        except (OSError, MeminfoError) as exc:
            return {"ok": False, "error": f"cannot read {path}: {exc}", "waited": clock() - start}
        need = int(spec.get("min_available_mib") or 0) or math.ceil(info.total_mib * float(spec.get("min_available_fraction") or 0))
        now = clock()
        facts = {
            "available_mib": info.available_mib,
            "total_mib": info.total_mib,
            "page_cache_mib": info.page_cache_mib,
            "need_mib": need,
            "waited": now - start,
            "error": None,
        }
        if info.available_mib >= need or now >= deadline:
            return {"ok": info.available_mib >= need, **facts}
        sleep(max(0.0, min(interval, deadline - now)))


def check_node(spec: t.Mapping[str, t.Any]) -> dict[str, t.Any]:
    """The task each node runs: the facts for ``spec["snapshot"]`` and ``spec["memory"]`` (each when given)."""
    result: dict[str, t.Any] = {}
    if spec.get("snapshot"):
        result["snapshot"] = snapshot_facts(spec["snapshot"])
    if spec.get("memory"):
        result["memory"] = memory_facts(spec["memory"])
    return result


def snapshot_problem(facts: t.Mapping[str, t.Any], spec: t.Mapping[str, t.Any]) -> str | None:
    """What is wrong with a node's snapshot (None: nothing): missing, another commit or path, or incomplete."""
    path, commit, revision = facts["path"], spec["commit"], spec["revision"]
    ref = facts.get("ref")
    other_ref = f"refs/{revision} there points to commit {ref}" if ref and ref != commit else ""
    if not facts.get("exists"):
        if not facts.get("repo_dir_exists"):
            return f"the snapshot the head serves is missing: {spec['repo_id']} is not in its cache {spec['cache_dir']}"
        held = ", ".join(facts.get("held") or []) or "none"
        return f"the snapshot the head serves is missing: no {path} (commit {commit}); snapshots there: {held}" + (f"; {other_ref}" if other_ref else "")
    if facts.get("resolved_path") not in (None, path):
        return f"commit {commit} resolves to {facts['resolved_path']} there, not {path} that the head serves"
    if not facts.get("complete"):
        count = int(facts.get("problem_count") or 0)
        listed = "; ".join(facts.get("problems") or [])
        more = f"; and {count - MAX_PROBLEMS} more" if count > MAX_PROBLEMS else ""
        return f"the snapshot at {path} is incomplete (quick check, {count} problem{'s' if count != 1 else ''}): {listed}{more}"
    if other_ref:
        return f"{other_ref}, not {commit} that the head serves from {path}"
    return None


def memory_problem(facts: t.Mapping[str, t.Any]) -> str | None:
    """What is wrong with a node's memory (None: nothing)."""
    if facts.get("ok"):
        return None
    if facts.get("error"):
        return str(facts["error"])
    return (
        f"memory: only {facts['available_mib']} MiB available of {facts['total_mib']} after {float(facts['waited']):.0f}s, "
        f"need {facts['need_mib']} MiB (page cache {facts['page_cache_mib']} MiB)"
    )


def describe(facts: t.Mapping[str, t.Any]) -> str:
    """A node that passed, in a few words."""
    parts = []
    snapshot = facts.get("snapshot")
    if snapshot:
        parts.append(f"snapshot complete at {snapshot['path']} ({snapshot['shards']} shard(s))")
    memory = facts.get("memory")
    if memory:
        parts.append(f"{memory['available_mib']} MiB available of {memory['total_mib']} (need {memory['need_mib']})")
    return ", ".join(parts) or "nothing to check"
