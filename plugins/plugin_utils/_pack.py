# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Files of a controller folder packed into one tar archive that depends on their content alone (the copy_packed
action): names sorted, times 0, owner and group root (numeric), mode 0644, links followed. The same files pack to the
same bytes, so a node's unarchive finds nothing to change on a rerun.

Note that this plugin util is **PRIVATE** to the collection. It can have breaking changes at any time. It runs on the
controller only.
"""

from __future__ import annotations

import tarfile
import typing as t
from pathlib import Path, PurePosixPath

FILE_MODE = 0o644


class PackError(Exception):
    """A file that cannot be packed (named), or nothing to pack."""


def member_names(src: Path, files: t.Iterable[str]) -> list[str]:
    """``files`` checked (relative paths of regular files inside ``src``, links followed), sorted, without repeats."""
    names = sorted(set(files))
    if not names:
        raise PackError(f"files is empty: nothing to copy from {src}")
    for name in names:
        relative = PurePosixPath(name)
        if not name or relative.is_absolute() or ".." in relative.parts:
            raise PackError(f"files: {name!r} is not a path inside {src} (relative, without '..')")
        path = src / name
        if not path.is_file():
            raise PackError(f"files: {name} is not a file in {src}" if not path.exists() else f"files: {name} in {src} is not a regular file")
    return names


def pack(src: Path, files: t.Iterable[str], archive: Path) -> list[str]:
    """Write ``files`` of ``src`` into the tar file ``archive``; the member names, in the archive's order."""
    names = member_names(src, files)
    with tarfile.open(archive, "w", format=tarfile.GNU_FORMAT, dereference=True) as tar:
        for name in names:
            info = tar.gettarinfo(str(src / name), arcname=name)
            info.mtime = 0
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            info.mode = FILE_MODE
            with (src / name).open("rb") as content:
                tar.addfile(info, content)
    return names
