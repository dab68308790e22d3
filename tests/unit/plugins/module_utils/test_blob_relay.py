# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests for _blob_relay: the relay program run as the nodes run it (``python3 -c BOOT ...``), in local chains."""

from __future__ import annotations

import inspect
import os
import subprocess
import sys
import typing as t
from pathlib import Path

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
    """A relay that renames the last partial removes the folder; another one may be between making it and opening
    its file, or inside makedirs (which then raises FileExistsError): it makes the folder again."""
    real_makedirs = os.makedirs
    calls: list[str] = []

    def racing(path: str, exist_ok: bool = False) -> None:
        calls.append(path)
        if len(calls) == 1:
            raise FileExistsError(17, "File exists", path)
        real_makedirs(path, exist_ok=exist_ok)

    monkeypatch.setattr(_blob_relay.os, "makedirs", racing)
    part = tmp_path / "blobs" / PARTIAL_DIR / "blob"
    with _blob_relay._open_partial(str(part)) as sink:
        sink.write(b"x")
    assert part.read_bytes() == b"x" and calls[0] == calls[1] == str(part.parent)  # tried again after the race
