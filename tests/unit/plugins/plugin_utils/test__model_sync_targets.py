# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests for _model_sync_targets: which workers need the head's snapshot, in chain order, and inputs that do not
describe the workers."""

from __future__ import annotations

import typing as t

import pytest
from ansible_collections.sparkops.inference.plugins.plugin_utils._model_sync_targets import TargetsError, model_sync_targets, needs_snapshot

HEAD = "0123456789abcdef0123456789abcdef01234567"
OTHER = "89abcdef0123456789abcdef0123456789abcdef"
ADDRESSES = ["192.168.100.11", "192.168.100.12", "192.168.100.13"]


def check(complete: bool, commit: str | None = HEAD, **more: t.Any) -> dict[str, t.Any]:
    """A worker's hf_snapshot result (the keys the targets depend on, and others it ignores)."""
    return {"complete": complete, "commit": commit, "files": [], "corrupt": [], **more}


def test_workers_incomplete_or_at_another_commit_are_targets_in_chain_order() -> None:
    checks = [check(True, OTHER), check(True), check(False)]
    assert model_sync_targets(checks, ADDRESSES, HEAD) == ["192.168.100.11", "192.168.100.13"]
    # The order is the workers', not the addresses' sorted order.
    assert model_sync_targets(list(reversed(checks)), list(reversed(ADDRESSES)), HEAD) == ["192.168.100.13", "192.168.100.11"]


def test_workers_that_hold_the_heads_commit_complete_need_nothing() -> None:
    assert model_sync_targets([check(True)] * 3, ADDRESSES, HEAD) == []
    assert model_sync_targets([], [], HEAD) == []


def test_an_empty_cache_is_incomplete_and_without_a_commit() -> None:
    assert needs_snapshot(check(False, None), HEAD) is True
    assert needs_snapshot(check(True, HEAD), HEAD) is False
    assert needs_snapshot(check(True, OTHER), HEAD) is True
    # Without a head commit, any commit a worker holds differs from it.
    assert needs_snapshot(check(True, OTHER), None) is True


def test_generators_are_taken_as_jinja_map_gives_them() -> None:
    checks = (item for item in [check(False), check(True)])
    assert model_sync_targets(checks, iter(ADDRESSES[:2]), HEAD) == ["192.168.100.11"]


@pytest.mark.parametrize(
    ("checks", "addresses", "message"),
    [
        ([check(True)], ADDRESSES, r"^1 snapshot checks for 3 addresses: one of each per worker$"),
        ([check(True)], [""], r"^worker 1: the address must be a non-empty string, not ''$"),
        ([check(True)], [None], r"^worker 1: the address must be a non-empty string, not None$"),
        (["complete"], ADDRESSES[:1], r"^worker 1 \(192\.168\.100\.11\): the snapshot check must be a hf_snapshot result, not str$"),
        (
            [check(True), {"changed": False, "skipped": True}],
            ADDRESSES[:2],
            r"^worker 2 \(192\.168\.100\.12\): the snapshot check has no complete or commit \(was its hf_snapshot task skipped\?\)$",
        ),
        ([{"complete": True}], ADDRESSES[:1], r"the snapshot check has no commit "),
    ],
)
def test_inputs_that_do_not_describe_the_workers_are_refused_naming_the_worker(checks: list[t.Any], addresses: list[t.Any], message: str) -> None:
    with pytest.raises(TargetsError, match=message):
        model_sync_targets(checks, addresses, HEAD)
