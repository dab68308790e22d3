# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests for _blob_relay: the relay program run as the nodes run it (``python3 -c BOOT ...``), in local chains."""

from __future__ import annotations

import errno
import inspect
import os
import re
import subprocess
import sys
import typing as t
from pathlib import Path

import pytest
from ansible_collections.sparkops.inference.plugins.module_utils import _blob_relay
from ansible_collections.sparkops.inference.plugins.module_utils._blob_relay import MARK, PARTIAL_DIR, command, encode

CODE = encode(inspect.getsource(_blob_relay).encode())
MTIME_NS = 1_700_000_000_123_456_789
DATA = os.urandom(3_000_000)


def hop(node: str, folder: Path, nxt: dict[str, t.Any] | None, size: int = len(DATA)) -> dict[str, t.Any]:
    """The ``next`` entry that reaches ``node`` (a local run), writing into ``folder``."""
    output = {"dir": str(folder), "name": "blob", "mtime_ns": MTIME_NS, "mode": 0o640}
    return {"via": [], "python": sys.executable, "spec": {"node": node, "size": size, "output": output, "next": nxt}}


def relay(source: Path, nxt: dict[str, t.Any] | None, size: int = len(DATA), stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    """Run the source's relay, reading ``source`` (or ``stdin`` when given)."""
    spec = {"node": "head", "size": size, "input": None if stdin is not None else str(source), "next": nxt}
    return subprocess.run(command(sys.executable, CODE, spec), input=stdin, capture_output=True, check=False, timeout=60)


def current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_a_chain_writes_every_copy_with_the_sources_mtime_and_mode(tmp_path: Path) -> None:
    source = tmp_path / "head" / "blob"
    source.parent.mkdir()
    source.write_bytes(DATA)
    n1, n2 = tmp_path / "n1" / "blobs", tmp_path / "n2" / "blobs"
    proc = relay(source, hop("n1", n1, hop("n2", n2, None)))
    assert (proc.returncode, proc.stderr) == (0, b"")
    for folder in (n1, n2):
        copy = folder / "blob"
        assert copy.read_bytes() == DATA
        assert (copy.stat().st_mtime_ns, copy.stat().st_mode & 0o7777) == (MTIME_NS, 0o640)
        assert not (folder / PARTIAL_DIR).exists()  # emptied and removed


def test_a_short_stream_leaves_partials_and_names_each_node(tmp_path: Path) -> None:
    n1, n2 = tmp_path / "n1", tmp_path / "n2"
    proc = relay(tmp_path, hop("n1", n1, hop("n2", n2, None)), stdin=DATA[:1000])
    assert proc.returncode == 1
    err = proc.stderr.decode()
    for node in ("head", "n1", "n2"):
        assert f"{MARK} on {node}: received 1000 of {len(DATA)} bytes" in err, err
    for folder in (n1, n2):
        assert not (folder / "blob").exists()
        assert (folder / PARTIAL_DIR / "blob").read_bytes() == DATA[:1000]  # for rsync --partial-dir to resume


def test_a_node_whose_next_hop_fails_still_completes_its_own_copy(tmp_path: Path) -> None:
    n1 = tmp_path / "n1"
    broken = {"via": ["sh", "-c", "echo no route to n2 >&2; exit 255"], "python": sys.executable, "spec": {}}
    proc = relay(tmp_path, hop("n1", n1, broken), stdin=DATA)
    assert proc.returncode == 1
    assert (n1 / "blob").read_bytes() == DATA
    err = proc.stderr.decode()
    assert "no route to n2" in err and f"{MARK} on n1: cannot pass blob on: " in err


def test_an_unreadable_source_fails_naming_it(tmp_path: Path) -> None:
    proc = relay(tmp_path / "missing", hop("n1", tmp_path / "n1", None))
    assert proc.returncode == 1
    assert proc.stderr.decode().startswith(f"{MARK} on head: cannot read {tmp_path / 'missing'}: ")
    assert not (tmp_path / "n1").exists()


def test_the_command_line_needs_no_quoting() -> None:
    argv = command("python3", CODE, {"node": "n1", "path": "/srv/hf hub/it's"})
    assert argv[:4] == ["python3", "-c", _blob_relay.BOOT, MARK]
    assert all(arg.replace("+", "").replace("/", "").replace("=", "").isalnum() for arg in argv[4:])


def test_the_partial_folder_removed_by_another_relay_is_made_again(tmp_path: Path, monkeypatch: t.Any) -> None:
    """A relay that renames the last partial removes the folder; another one may be between making it and opening it
    or its file: it makes the folder again."""
    real_mkdir = os.mkdir
    calls: list[str] = []

    def racing(path: str, mode: int = 0o777, *, dir_fd: int | None = None) -> None:
        real_mkdir(path, mode, dir_fd=dir_fd)
        if dir_fd is not None:  # the partial folder, in the blobs folder (makedirs made that one)
            calls.append(path)
            if len(calls) == 1:
                os.rmdir(path, dir_fd=dir_fd)  # the other relay's rmdir, right after

    monkeypatch.setattr(_blob_relay.os, "mkdir", racing)
    part = tmp_path / "blobs" / PARTIAL_DIR / "blob"
    with _blob_relay._open_partial(str(part)) as sink:
        sink.write(b"x")
    assert part.read_bytes() == b"x" and calls == [PARTIAL_DIR, PARTIAL_DIR]  # tried again after the race


def test_a_symlink_at_the_partial_path_is_not_written_through(tmp_path: Path) -> None:
    """A symlink planted where a hop writes its partial file (the hop runs as root) is refused, naming it: the file it
    points to is left as it was, and no blob appears."""
    outside = tmp_path / "outside"
    outside.write_bytes(b"root's file")
    folder = tmp_path / "n1" / "blobs"
    (folder / PARTIAL_DIR).mkdir(parents=True)
    part = folder / PARTIAL_DIR / "blob"
    part.symlink_to(outside)
    proc = relay(tmp_path, hop("n1", folder, None), stdin=DATA)
    assert proc.returncode == 1
    assert f"{MARK} on n1: [Errno {errno.ELOOP}] a symlink: refusing to write through it: '{part}'" in proc.stderr.decode()
    assert outside.read_bytes() == b"root's file" and oct(outside.stat().st_mode & 0o7777) == oct(0o644 & ~current_umask())
    assert part.is_symlink() and not (folder / "blob").exists()


@pytest.mark.parametrize("planted", ["blobs", PARTIAL_DIR])
def test_a_symlinked_folder_on_the_way_to_the_partial_file_is_not_written_through(tmp_path: Path, planted: str) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    folder = tmp_path / "n1" / "blobs"
    link = folder if planted == "blobs" else folder / PARTIAL_DIR
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(outside)
    proc = relay(tmp_path, hop("n1", folder, None), stdin=DATA)
    assert proc.returncode == 1
    assert f"{MARK} on n1: [Errno {errno.ENOTDIR}] a symlink or not a folder: refusing to write in it: '{link}'" in proc.stderr.decode()
    assert not any(outside.rglob("*"))  # what the link points to: nothing written (the partial folder is not made there)


def test_a_symlink_at_the_blobs_name_is_replaced_not_followed(tmp_path: Path) -> None:
    """The rename into place replaces a symlink at the blob's name (rename(2) never follows it)."""
    source = tmp_path / "head" / "blob"
    source.parent.mkdir()
    source.write_bytes(DATA)
    outside = tmp_path / "outside"
    outside.write_bytes(b"root's file")
    folder = tmp_path / "n1" / "blobs"
    folder.mkdir(parents=True)
    (folder / "blob").symlink_to(outside)
    proc = relay(source, hop("n1", folder, None))
    assert (proc.returncode, proc.stderr) == (0, b"")
    assert not (folder / "blob").is_symlink() and (folder / "blob").read_bytes() == DATA
    assert outside.read_bytes() == b"root's file"


def test_a_copy_never_gets_setuid_setgid_or_sticky(tmp_path: Path) -> None:
    source = tmp_path / "head" / "blob"
    source.parent.mkdir()
    source.write_bytes(DATA)
    folder = tmp_path / "n1" / "blobs"
    nxt = hop("n1", folder, None)
    nxt["spec"]["output"]["mode"] = 0o7755
    proc = relay(source, nxt)
    assert (proc.returncode, proc.stderr) == (0, b"")
    assert oct((folder / "blob").stat().st_mode & 0o7777) == oct(0o755)


def test_a_partial_replaced_while_written_is_not_renamed_into_place(tmp_path: Path) -> None:
    folder = tmp_path / "blobs"
    part = folder / PARTIAL_DIR / "blob"
    sink = _blob_relay._open_partial(str(part))
    sink.write(b"x")
    part.unlink()
    part.symlink_to(tmp_path / "elsewhere")
    output = {"dir": str(folder), "name": "blob", "mtime_ns": MTIME_NS, "mode": 0o644}
    with pytest.raises(OSError, match=re.escape(f"the partial file was replaced while it was written: not renamed into place: '{part}'")):
        _blob_relay._finish(output, str(part), sink)
    assert not (folder / "blob").exists() and not (tmp_path / "elsewhere").exists()
