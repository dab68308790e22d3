# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""systemd units a node no longer needs, removed in one go: each unit whose file is in the unit folder stopped and
disabled, then its file and the other paths named removed, then systemd reloaded when a unit file went (the
unit_remove module).

Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
"""

from __future__ import annotations

import os
import shutil
import typing as t
from dataclasses import dataclass

from ansible_collections.sparkops.inference.plugins.module_utils._run_command import Runner

UNIT_DIR = "/etc/systemd/system"


class UnitRemoveError(Exception):
    """A step that failed: ``changed`` says whether the steps before it changed the node (a unit that would not stop
    or disable: nothing was removed)."""

    def __init__(self, message: str, changed: bool) -> None:
        super().__init__(message)
        self.changed = changed


@dataclass(frozen=True)
class Removal:
    """What is there to remove: ``units`` (their file in the unit folder: stopped and disabled) and ``paths`` (every
    path that exists, the units' files first, in the order named)."""

    units: list[str]
    paths: list[str]

    @property
    def changes(self) -> bool:
        return bool(self.units or self.paths)


def plan(units: t.Sequence[str], paths: t.Sequence[str], unit_dir: str = UNIT_DIR, exists: t.Callable[[str], bool] = os.path.lexists) -> Removal:
    """What removing ``units`` (names such as ``sparkops-vllm.service``) and ``paths`` would do on this node."""
    unit_files = [os.path.join(unit_dir, unit) for unit in units]
    present = [unit for unit in units if exists(os.path.join(unit_dir, unit))]
    named = list(dict.fromkeys([*unit_files, *paths]))  # each path once, in order
    return Removal(units=present, paths=[path for path in named if exists(path)])


def remove_path(path: str) -> None:
    """Remove a file, a link (not what it points to) or a folder with what it holds."""
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path)
    else:
        os.unlink(path)


def apply(removal: Removal, run: Runner, unit_dir: str = UNIT_DIR, remove: t.Callable[[str], None] = remove_path) -> bool:
    """Stop and disable ``removal.units`` (all of them before anything is removed: a unit that will not stop raises
    :class:`UnitRemoveError` with nothing removed), remove ``removal.paths``, then reload systemd when a unit file was
    removed; whether systemd was reloaded."""
    if removal.units:
        rc, _out, err = run(["systemctl", "disable", "--now", *removal.units])
        if rc != 0:
            raise UnitRemoveError(f"systemctl could not stop and disable {', '.join(removal.units)}: {err.strip() or f'exit status {rc}'}", False)
        run(["systemctl", "reset-failed", *removal.units])  # a unit stopped mid-run may be left failed: not worth keeping
    for path in removal.paths:
        try:
            remove(path)
        except OSError as exc:
            raise UnitRemoveError(f"cannot remove {path}: {exc.strerror or exc}", True) from None
    if not any(os.path.dirname(path) == unit_dir for path in removal.paths):
        return False
    rc, _out, err = run(["systemctl", "daemon-reload"])
    if rc != 0:
        raise UnitRemoveError(f"systemctl daemon-reload failed after removing {', '.join(removal.paths)}: {err.strip() or f'exit status {rc}'}", True)
    return True
