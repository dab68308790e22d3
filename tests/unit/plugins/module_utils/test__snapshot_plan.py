# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests for _snapshot_plan: the links of a chain and a star, the head's blobs, and the targets' listing command
run for real and parsed."""

from __future__ import annotations

from pathlib import Path

import pytest
from ansible_collections.sparkops.inference.plugins.module_utils._blob_relay import PARTIAL_DIR
from ansible_collections.sparkops.inference.plugins.module_utils._run_command import run_command
from ansible_collections.sparkops.inference.plugins.module_utils._snapshot_errors import DistributeError
from ansible_collections.sparkops.inference.plugins.module_utils._snapshot_plan import Blob, Link, head_blobs, listing_argv, make_links, parse_listing

TARGETS = ("10.0.0.2", "10.0.0.3", "10.0.0.4")


def test_links() -> None:
    assert make_links(TARGETS, "chain") == (Link(None, TARGETS[0]), Link(TARGETS[0], TARGETS[1]), Link(TARGETS[1], TARGETS[2]))
    assert make_links(TARGETS, "star") == tuple(Link(None, target) for target in TARGETS)
    assert [link.label for link in make_links(TARGETS[:2], "chain")] == ["head -> 10.0.0.2", "10.0.0.2 -> 10.0.0.3"]


def test_head_blobs_skip_downloads_in_progress_and_rsync_leftovers(tmp_path: Path) -> None:
    blobs = tmp_path / "blobs"
    (blobs / PARTIAL_DIR).mkdir(parents=True)
    (blobs / PARTIAL_DIR / "aaa").write_bytes(b"12")
    (blobs / "small").write_bytes(b"1")
    (blobs / "big").write_bytes(b"12345")
    (blobs / "bbb").write_bytes(b"12345")
    (blobs / "ccc.incomplete").write_bytes(b"123456789")
    (blobs / ".ddd.Xy12Ab").write_bytes(b"123456789")
    (blobs / "link").symlink_to("big")
    assert head_blobs(str(blobs)) == (Blob("bbb", 5), Blob("big", 5), Blob("small", 1))


def test_listing_runs_and_parses(tmp_path: Path) -> None:
    blobs = tmp_path / "a dir" / "blobs"
    (blobs / PARTIAL_DIR).mkdir(parents=True)
    (blobs / PARTIAL_DIR / "partial").write_bytes(b"12")
    (blobs / "abc").write_bytes(b"1234")
    (blobs / "def").write_bytes(b"")
    rc, out, err = run_command(listing_argv(str(blobs)))
    assert (rc, err) == (0, "")
    assert parse_listing(out, "w") == {"abc": 4, "def": 0, f"{PARTIAL_DIR}/partial": 2}
    assert run_command(listing_argv(str(tmp_path / "missing" / "blobs"))) == (0, "", "")
    with pytest.raises(DistributeError, match=r"^cannot read the blob listing of w: 'abc'$"):
        parse_listing("abc\n", "w")
