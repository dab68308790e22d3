# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What a model distribution did (or, in check mode, would do): the blobs sent over each link and when, the metadata
changes, and the result the module ``snapshot_distribute`` returns (:meth:`Result.as_dict`).

Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
"""

from __future__ import annotations

import typing as t
from dataclasses import dataclass, field

from ansible_collections.sparkops.inference.plugins.module_utils._snapshot_errors import node_name
from ansible_collections.sparkops.inference.plugins.module_utils._snapshot_plan import Blob, Link, Plan


@dataclass(frozen=True)
class Transfer:
    """A blob sent over a link; times in seconds since the run started."""

    blob: Blob
    link: Link
    started: float
    finished: float
    attempts: int

    @property
    def seconds(self) -> float:
        return self.finished - self.started

    def as_dict(self) -> dict[str, t.Any]:
        return {
            "file": self.blob.name,
            "source": node_name(self.link.source),
            "target": self.link.target,
            "bytes": self.blob.size,
            "started": round(self.started, 3),
            "seconds": round(self.seconds, 3),
        }


@dataclass
class Result:
    """What a run did (or, in check mode, would do)."""

    plan: Plan
    streams: int
    check_mode: bool
    transfers: list[Transfer] = field(default_factory=list)
    metadata: dict[str, list[str]] = field(default_factory=dict)  # per target: the changes rsync itemized
    relay_failures: list[str] = field(default_factory=list)  # cut-through jobs replaced by rsync, and why
    seconds: float = 0.0

    @property
    def changed(self) -> bool:
        if self.check_mode:
            return any(self.plan.needed(target) for target in self.plan.targets) or any(self.metadata.values())
        return bool(self.transfers) or any(self.metadata.values())

    def as_dict(self) -> dict[str, t.Any]:
        per_target: dict[str, dict[str, t.Any]] = {target: {"files": [], "bytes": 0} for target in self.plan.targets}
        for transfer in self.transfers:
            entry = per_target[transfer.link.target]
            entry["files"].append(transfer.blob.name)
            entry["bytes"] += transfer.blob.size
        result: dict[str, t.Any] = {
            "changed": self.changed,
            "transferred": [transfer.as_dict() for transfer in self.transfers],
            "bytes": sum(transfer.blob.size for transfer in self.transfers),
            "seconds": round(self.seconds, 3),
            "per_target": per_target,
            "plan": self.plan.as_dict(),
            "metadata": {target: self.metadata.get(target, []) for target in self.plan.targets},
            "topology": self.plan.topology,
            "streams": self.streams,
            "relay_failures": list(self.relay_failures),
        }
        if self.check_mode:
            result["would_transfer"] = self.plan.as_dict()
        return result
