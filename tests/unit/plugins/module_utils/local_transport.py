# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A test-only transport for the model distribution (plugins/module_utils/_snapshot_transport.py): every node is a
folder on this machine, so that the distribution's rsync and relay commands run for real without a network.

Used by the unit tests of _snapshot_distribute and of the module snapshot_distribute (which replaces the
SshTransport it builds with one).
"""

from __future__ import annotations

import sys
import typing as t

from ansible_collections.sparkops.inference.plugins.module_utils._snapshot_errors import DistributeError, Node, node_name
from ansible_collections.sparkops.inference.plugins.module_utils._snapshot_transport import Transport


class LocalTransport(Transport):
    """Every node is a folder on this machine (``roots``: node to folder; None is the head); rsync runs locally.

    For tests and rehearsals of the scheduler: the commands, the rsync options, the files and the order are real,
    only the network is missing.
    """

    def __init__(self, roots: t.Mapping[Node, str], rsync: str = "rsync", python: str = sys.executable) -> None:
        super().__init__(rsync, python)
        self.roots = dict(roots)

    def path(self, node: Node, path: str) -> str:
        if node not in self.roots:
            raise DistributeError(f"{node_name(node)} has no folder in the local transport")
        return self.roots[node].rstrip("/") + path

    def run_argv(self, node: str, argv: t.Sequence[str], stream: int | None = None) -> list[str]:
        return list(argv)

    def relay_via(self, target: str, stream: int) -> list[str]:
        return []

    def rsync_argv(self, source: Node, target: str, options: t.Sequence[str], paths: t.Sequence[str], dest: str, stream: int | None = None) -> list[str]:
        return [self.rsync, *options, *paths, dest]
