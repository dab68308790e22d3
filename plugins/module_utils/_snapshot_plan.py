# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The model distribution's plan: the head's blobs, what each target holds, and the links between the nodes.

Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.

:func:`make_plan` lists the head's blobs with their sizes and asks every target, with one command a target
(:func:`listing_argv`), for its own and for the partial files an interrupted run left; a blob is needed on a target
when it is missing or of another size. The model-sync gate (:mod:`._sync_gate`) builds the listing command with this
file on every worker and runs only that one.
"""

from __future__ import annotations

import os
import shlex
import typing as t
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from ansible_collections.sparkops.inference.plugins.module_utils._blob_relay import PARTIAL_DIR
from ansible_collections.sparkops.inference.plugins.module_utils._run_command import Runner, run_command
from ansible_collections.sparkops.inference.plugins.module_utils._snapshot_errors import DistributeError, Node, node_name, stderr_tail
from ansible_collections.sparkops.inference.plugins.module_utils._snapshot_transport import Transport

# chain: head -> targets[0] -> targets[1] -> ...; star: head -> each target.
TOPOLOGIES = ("chain", "star")


@dataclass(frozen=True)
class Blob:
    """A file in ``blobs/``."""

    name: str
    size: int


@dataclass(frozen=True)
class Link:
    """A hop: ``source`` sends blobs to ``target``."""

    source: Node
    target: str

    @property
    def label(self) -> str:
        return f"{node_name(self.source)} -> {self.target}"


@dataclass(frozen=True)
class Plan:
    """What the head has, what each target held at the start, and the links."""

    repo_dir: str
    topology: str
    targets: tuple[str, ...]
    blobs: tuple[Blob, ...]  # the head's, largest first
    held: dict[str, dict[str, int]]  # per target: blob name to size, as found there
    links: tuple[Link, ...]

    @property
    def blobs_dir(self) -> str:
        return f"{self.repo_dir}/blobs"

    def holds(self, node: Node, blob: Blob) -> bool:
        """Whether ``node`` held ``blob`` (by name and size) at the start; the head holds all."""
        return node is None or self.held[node].get(blob.name) == blob.size

    def has_partial(self, target: str, blob: Blob) -> bool:
        """Whether ``target`` keeps a partial of ``blob`` (in the partial folder) from an interrupted run."""
        return f"{PARTIAL_DIR}/{blob.name}" in self.held[target]

    def needed(self, target: str) -> list[Blob]:
        """The blobs ``target`` lacks (missing or of another size), largest first."""
        return [blob for blob in self.blobs if not self.holds(target, blob)]

    def as_dict(self) -> dict[str, dict[str, t.Any]]:
        """Per target: the blobs it needs and their bytes."""
        result: dict[str, dict[str, t.Any]] = {}
        for target in self.targets:
            needed = self.needed(target)
            result[target] = {"files": [b.name for b in needed], "bytes": sum(b.size for b in needed)}
        return result


def make_links(targets: t.Sequence[str], topology: str) -> tuple[Link, ...]:
    """``chain``: head -> targets[0] -> targets[1] -> ...; ``star``: head -> each target."""
    if topology == "star":
        return tuple(Link(None, target) for target in targets)
    return tuple(Link(None if index == 0 else targets[index - 1], target) for index, target in enumerate(targets))


def head_blobs(blobs_dir: str) -> tuple[Blob, ...]:
    """The regular files in ``blobs_dir``, largest first; unfinished downloads (``*.incomplete``) and hidden files
    (rsync's temporary files, the partial dir) are left out."""
    try:
        entries = list(os.scandir(blobs_dir))
    except OSError as exc:
        raise DistributeError(f"cannot list the blobs on the head: {exc}") from exc
    blobs = [
        Blob(entry.name, entry.stat(follow_symlinks=False).st_size)
        for entry in entries
        if entry.is_file(follow_symlinks=False) and not entry.name.startswith(".") and not entry.name.endswith(".incomplete")
    ]
    return tuple(sorted(blobs, key=lambda b: (-b.size, b.name)))


def listing_argv(blobs_dir: str) -> list[str]:
    """The command that prints ``name size`` for each file in ``blobs_dir`` and ``<PARTIAL_DIR>/name size`` for each
    partial file an interrupted run left; nothing when ``blobs_dir`` does not exist."""
    blobs, partials = shlex.quote(blobs_dir), shlex.quote(f"{blobs_dir}/{PARTIAL_DIR}")
    script = (
        f"if [ -d {blobs} ]; then find {blobs} -maxdepth 1 -type f -printf '%f %s\\n' || exit; "
        f"if [ -d {partials} ]; then exec find {partials} -maxdepth 1 -type f -printf '{PARTIAL_DIR}/%f %s\\n'; fi; fi"
    )
    return ["sh", "-c", script]


def parse_listing(text: str, target: str) -> dict[str, int]:
    """Parse :func:`listing_argv`'s output."""
    held: dict[str, int] = {}
    for line in text.splitlines():
        if not line.strip():
            continue
        name, _sep, size = line.rpartition(" ")
        if not name or not size.isdigit():
            raise DistributeError(f"cannot read the blob listing of {target}: {line!r}")
        held[name] = int(size)
    return held


R = t.TypeVar("R")


def parallel(function: t.Callable[[str], R], items: t.Sequence[str]) -> dict[str, R]:
    """``function`` over ``items``, all at once: item to result, in the order of ``items``; the first exception raised."""
    if not items:
        return {}
    with ThreadPoolExecutor(max_workers=len(items)) as pool:
        return dict(pool.map(lambda item: (item, function(item)), items))


def make_plan(repo_dir: str, targets: t.Sequence[str], topology: str, transport: Transport, runner: Runner = run_command) -> Plan:
    """List the head's blobs and ask every target (at once) which it holds."""
    blobs = head_blobs(transport.path(None, f"{repo_dir}/blobs"))
    if not blobs:
        raise DistributeError(f"{repo_dir}/blobs on the head holds no blob: nothing to distribute")

    def listing(target: str) -> dict[str, int]:
        rc, out, err = runner(transport.run_argv(target, listing_argv(transport.path(target, f"{repo_dir}/blobs"))))
        if rc != 0:
            raise DistributeError(f"cannot list {repo_dir}/blobs on {target}: rc {rc}: {stderr_tail(err)}")
        return parse_listing(out, target)

    held = parallel(listing, targets)
    return Plan(repo_dir, topology, tuple(targets), blobs, held, make_links(targets, topology))
