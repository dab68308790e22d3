# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The model_sync_targets filter: wiring to the _model_sync_targets plugin util, a list out, and errors that name the
filter."""

from __future__ import annotations

import typing as t

import pytest
from ansible.errors import AnsibleFilterError
from ansible_collections.sparkops.inference.plugins.filter.model_sync_targets import FilterModule

model_sync_targets = FilterModule().filters()["model_sync_targets"]
HEAD = "0123456789abcdef0123456789abcdef01234567"


def test_filter_returns_the_addresses_of_the_workers_that_need_the_snapshot() -> None:
    checks = [{"complete": True, "commit": HEAD}, {"complete": False, "commit": None}, {"complete": True, "commit": "f" * 40}]
    targets = model_sync_targets(checks, addresses=["10.0.0.2", "10.0.0.3", "10.0.0.4"], head_commit=HEAD)
    assert targets == ["10.0.0.3", "10.0.0.4"] and isinstance(targets, list)
    assert model_sync_targets(iter(checks[:1]), addresses=iter(["10.0.0.2"]), head_commit=HEAD) == []


@pytest.mark.parametrize(
    ("checks", "addresses", "message"),
    [
        ("[]", [], "the input must be a list, one item per worker, not str"),
        ({"complete": True, "commit": HEAD}, ["10.0.0.2"], "the input must be a list, one item per worker, not dict"),
        ([], "10.0.0.2", "addresses must be a list, one item per worker, not str"),
        ([], None, "addresses must be a list, one item per worker, not NoneType"),
        ([{"complete": True}], ["10.0.0.2"], r"worker 1 \(10\.0\.0\.2\): the snapshot check has no commit"),
        ([], ["10.0.0.2"], "0 snapshot checks for 1 addresses"),
    ],
)
def test_filter_errors_name_the_filter(checks: t.Any, addresses: t.Any, message: str) -> None:
    with pytest.raises(AnsibleFilterError, match=f"^sparkops.inference.model_sync_targets: {message}"):
        model_sync_targets(checks, addresses=addresses, head_commit=HEAD)
