# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The model distribution's error, and how its results and messages name a node and quote a failed command.

Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.

Shared by the transports (:mod:`._snapshot_transport`), the plan (:mod:`._snapshot_plan`), the scheduler
(:mod:`._snapshot_scheduler`) and the run (:mod:`._snapshot_distribute`); the model-sync gate (:mod:`._sync_gate`)
runs it on the workers.
"""

from __future__ import annotations

import typing as t

if t.TYPE_CHECKING:  # only for the annotation: the gate on a worker runs this file without the result's
    from ansible_collections.sparkops.inference.plugins.module_utils._snapshot_result import Result

# How the head appears in results and messages.
HEAD = "head"
# How much of a failed command's stderr a message quotes (its end).
STDERR_TAIL = 2000

# A node: a target's address, or None for the head (where the distribution runs).
Node = t.Optional[str]  # noqa: UP045 - an alias is evaluated at import, and `str | None` needs Python 3.10


class DistributeError(Exception):
    """The distribution cannot start or did not finish; the message names the file, link or node.

    ``result`` holds what was done before the failure (None when nothing was planned yet).
    """

    def __init__(self, message: str, result: Result | None = None) -> None:
        super().__init__(message)
        self.result = result


def node_name(node: Node) -> str:
    """The node as results and messages name it."""
    return HEAD if node is None else node


def attempts_label(count: int) -> str:
    """``count`` attempts, as a message says it."""
    return "1 attempt" if count == 1 else f"{count} attempts"


def stderr_tail(text: str) -> str:
    """The end of a failed command's stderr (at most :data:`STDERR_TAIL` characters), as a message quotes it."""
    text = text.strip()
    return text if len(text) <= STDERR_TAIL else "..." + text[-STDERR_TAIL:]
