# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The _pack plugin util: an archive of the files' content alone (the same files, the same bytes), and the files it
refuses, named."""

from __future__ import annotations

import os
import tarfile
from pathlib import Path

import pytest
from ansible_collections.sparkops.inference.plugins.plugin_utils._pack import PackError, member_names, pack


def folder(root: Path, mode: int, mtime: int) -> Path:
    root.mkdir()
    (root / "sub").mkdir()
    for name, text in (("_b.py", "B = 2\n"), ("_a.py", "A = 1\n"), ("sub/_c.py", "C = 3\n")):
        (root / name).write_text(text)
        (root / name).chmod(mode)
        os.utime(root / name, (mtime, mtime))
    return root


def test_the_archive_holds_the_files_named_sorted_root_owned_0644_time_0(tmp_path: Path) -> None:
    src = folder(tmp_path / "src", 0o600, 1_700_000_000)
    names = pack(src, ["_b.py", "sub/_c.py", "_a.py", "_b.py"], tmp_path / "files.tar")
    assert names == ["_a.py", "_b.py", "sub/_c.py"]  # sorted, once each
    with tarfile.open(tmp_path / "files.tar") as tar:
        members = tar.getmembers()
        assert [m.name for m in members] == names
        assert {(m.mode, m.uid, m.gid, m.uname, m.gname, m.mtime, m.type) for m in members} == {(0o644, 0, 0, "", "", 0, tarfile.REGTYPE)}
        extracted = tar.extractfile("sub/_c.py")
        assert extracted is not None and extracted.read() == b"C = 3\n"


def test_the_same_files_pack_to_the_same_bytes_whatever_their_times_and_modes(tmp_path: Path) -> None:
    one = folder(tmp_path / "one", 0o600, 1_700_000_000)
    two = folder(tmp_path / "two", 0o755, 1_800_000_000)
    pack(one, ["_a.py", "_b.py"], tmp_path / "one.tar")
    pack(two, ["_b.py", "_a.py"], tmp_path / "two.tar")
    assert (tmp_path / "one.tar").read_bytes() == (tmp_path / "two.tar").read_bytes()
    (two / "_a.py").write_text("A = 2\n")
    pack(two, ["_a.py", "_b.py"], tmp_path / "changed.tar")
    assert (tmp_path / "changed.tar").read_bytes() != (tmp_path / "one.tar").read_bytes()  # content does count


def test_a_link_is_followed(tmp_path: Path) -> None:
    src = folder(tmp_path / "src", 0o644, 0)
    (src / "linked.py").symlink_to(src / "_a.py")
    pack(src, ["linked.py"], tmp_path / "files.tar")
    with tarfile.open(tmp_path / "files.tar") as tar:
        (member,) = tar.getmembers()
        assert (member.name, member.type, member.size) == ("linked.py", tarfile.REGTYPE, len("A = 1\n"))


@pytest.mark.parametrize(
    ("files", "said"),
    [
        ([], "files is empty: nothing to copy from {src}"),
        (["_a.py", "_gone.py"], "files: _gone.py is not a file in {src}"),
        (["sub"], "files: sub in {src} is not a regular file"),
        (["../outside.py"], "files: '../outside.py' is not a path inside {src} (relative, without '..')"),
        (["/etc/passwd"], "files: '/etc/passwd' is not a path inside {src} (relative, without '..')"),
        ([""], "files: '' is not a path inside {src} (relative, without '..')"),
    ],
)
def test_what_cannot_be_packed_is_refused_naming_it_and_nothing_is_written(tmp_path: Path, files: list[str], said: str) -> None:
    src = folder(tmp_path / "src", 0o644, 0)
    (tmp_path / "outside.py").write_text("X = 1\n")
    with pytest.raises(PackError) as raised:
        pack(src, files, tmp_path / "files.tar")
    assert str(raised.value) == said.format(src=src)
    assert not (tmp_path / "files.tar").exists()
    with pytest.raises(PackError):
        member_names(src, files)
