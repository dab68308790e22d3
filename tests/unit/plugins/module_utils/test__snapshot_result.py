# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests for _snapshot_result: the module's result built from a plan and the transfers (per target, bytes, the
timeline rounded, check mode's would_transfer), and when a run or a check reports a change."""

from __future__ import annotations

from ansible_collections.sparkops.inference.plugins.module_utils._snapshot_plan import Blob, Link, Plan, make_links
from ansible_collections.sparkops.inference.plugins.module_utils._snapshot_result import Result, Transfer

REPO = "/srv/hub/models--acme--tiny-llm"
T0, T1 = "10.0.0.2", "10.0.0.3"
A, B = Blob("a" * 64, 3000), Blob("b" * 40, 20)


def plan(held: dict[str, dict[str, int]]) -> Plan:
    return Plan(REPO, "chain", (T0, T1), (A, B), held, make_links((T0, T1), "chain"))


def test_a_run_reports_each_transfer_per_target_and_in_all() -> None:
    result = Result(plan({T0: {}, T1: {B.name: 20}}), streams=2, check_mode=False, seconds=1.23456)
    result.transfers = [Transfer(A, Link(None, T0), 0.1234, 0.5678, 1), Transfer(A, Link(T0, T1), 0.1234, 0.5678, 1), Transfer(B, Link(None, T0), 0.2, 0.3, 2)]
    result.metadata = {T0: [">f+++++++++ refs/main"]}
    assert result.as_dict() == {
        "changed": True,
        "transferred": [
            {"file": A.name, "source": "head", "target": T0, "bytes": 3000, "started": 0.123, "seconds": 0.444},
            {"file": A.name, "source": T0, "target": T1, "bytes": 3000, "started": 0.123, "seconds": 0.444},
            {"file": B.name, "source": "head", "target": T0, "bytes": 20, "started": 0.2, "seconds": 0.1},
        ],
        "bytes": 6020,
        "seconds": 1.235,
        "per_target": {T0: {"files": [A.name, B.name], "bytes": 3020}, T1: {"files": [A.name], "bytes": 3000}},
        "plan": {T0: {"files": [A.name, B.name], "bytes": 3020}, T1: {"files": [A.name], "bytes": 3000}},
        "metadata": {T0: [">f+++++++++ refs/main"], T1: []},
        "topology": "chain",
        "streams": 2,
        "relay_failures": [],
    }


def test_a_run_that_sent_nothing_and_changed_no_metadata_reports_no_change() -> None:
    result = Result(plan({T0: {A.name: 3000, B.name: 20}, T1: {A.name: 3000, B.name: 20}}), streams=4, check_mode=False)
    result.metadata = {T0: [], T1: []}
    assert result.changed is False
    assert "would_transfer" not in result.as_dict()


def test_check_mode_reports_what_a_run_would_send() -> None:
    needs = Result(plan({T0: {A.name: 3000}, T1: {A.name: 3000, B.name: 20}}), streams=4, check_mode=True)
    assert needs.changed is True
    assert needs.as_dict()["would_transfer"] == {T0: {"files": [B.name], "bytes": 20}, T1: {"files": [], "bytes": 0}}
    assert needs.as_dict()["transferred"] == []
    # Everything in place: a change only when the dry run found metadata to change.
    ready = Result(plan({T0: {A.name: 3000, B.name: 20}, T1: {A.name: 3000, B.name: 20}}), streams=4, check_mode=True)
    assert ready.changed is False
    ready.metadata = {T1: [">f+++++++++ refs/main"]}
    assert ready.changed is True
