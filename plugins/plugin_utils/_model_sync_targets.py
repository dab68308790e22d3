# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Which workers need the model: the targets the model_sync role hands to snapshot_distribute.

Note that this plugin util is **PRIVATE** to the collection. It can have breaking changes at any time. It runs on the
controller only (the filter ``sparkops.inference.model_sync_targets``).
"""

from __future__ import annotations

import typing as t
from collections.abc import Iterable, Mapping


class TargetsError(ValueError):
    """The inputs do not describe the workers (the message says which and why)."""


def needs_snapshot(check: Mapping[str, t.Any], head_commit: str | None) -> bool:
    """Whether a worker whose ``hf_snapshot`` result is ``check`` needs the head's snapshot: it is incomplete, or at
    another commit than ``head_commit``."""
    return not check["complete"] or check["commit"] != head_commit


def model_sync_targets(checks: Iterable[t.Any], addresses: Iterable[t.Any], head_commit: str | None) -> list[str]:
    """The fabric addresses of the workers that need the snapshot, in the workers' (chain) order.

    ``checks`` are the workers' ``hf_snapshot`` results and ``addresses`` their fabric addresses, in the same order;
    ``head_commit`` is the commit the head holds.
    """
    check_list, address_list = list(checks), list(addresses)
    if len(check_list) != len(address_list):
        raise TargetsError(f"{len(check_list)} snapshot checks for {len(address_list)} addresses: one of each per worker")
    targets: list[str] = []
    for index, (check, address) in enumerate(zip(check_list, address_list, strict=True)):
        if not isinstance(address, str) or not address:
            raise TargetsError(f"worker {index + 1}: the address must be a non-empty string, not {address!r}")
        if not isinstance(check, Mapping):
            raise TargetsError(f"worker {index + 1} ({address}): the snapshot check must be a hf_snapshot result, not {type(check).__name__}")
        missing = [key for key in ("complete", "commit") if key not in check]
        if missing:
            raise TargetsError(f"worker {index + 1} ({address}): the snapshot check has no {' or '.join(missing)} (was its hf_snapshot task skipped?)")
        if needs_snapshot(check, head_commit):
            targets.append(address)
    return targets
