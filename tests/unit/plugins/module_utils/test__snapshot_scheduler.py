# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests for _snapshot_scheduler's jobs: which node sends each blob to which, cut-through or by rsync, in a chain
and a star. (The pipeline that runs them is tested through distribute, in test__snapshot_distribute.py.)"""

from __future__ import annotations

from ansible_collections.sparkops.inference.plugins.module_utils._blob_relay import PARTIAL_DIR
from ansible_collections.sparkops.inference.plugins.module_utils._snapshot_plan import Blob, Link, Plan, make_links
from ansible_collections.sparkops.inference.plugins.module_utils._snapshot_scheduler import Job, make_jobs

REPO = "/srv/hf hub/models--acme--tiny-llm"
TARGETS = ("10.0.0.2", "10.0.0.3", "10.0.0.4")


def plan_with(held: dict[str, dict[str, int]], topology: str = "chain") -> Plan:
    blobs = (Blob("a", 30), Blob("b", 20), Blob("c", 10))
    targets = tuple(held)
    return Plan(REPO, topology, targets, blobs, held, make_links(targets, topology))


def test_jobs_skip_holders_and_send_partials_by_rsync() -> None:
    t0, t1, t2 = TARGETS
    held = {t0: {f"{PARTIAL_DIR}/b": 7}, t1: {"a": 30}, t2: {"c": 10}}
    a, b, c = plan_with(held).blobs
    assert make_jobs(plan_with(held), cut_through=True) == [
        Job(a, (None, t0), True),  # t1 holds a: it passes a on to t2
        Job(a, (t1, t2), True),
        Job(b, (None, t0), False),  # t0 keeps a partial of b: rsync resumes it, then b goes on from t0
        Job(b, (t0, t1, t2), True),
        Job(c, (None, t0, t1), True),
    ]
    assert make_jobs(plan_with(held), cut_through=False) == [
        Job(a, (None, t0), False),
        Job(a, (t1, t2), False),
        Job(b, (None, t0), False),
        Job(b, (t0, t1), False),
        Job(b, (t1, t2), False),
        Job(c, (None, t0), False),
        Job(c, (t0, t1), False),
    ]
    assert make_jobs(plan_with(held, "star"), cut_through=True) == [
        Job(a, (None, t0), True),
        Job(a, (None, t2), True),
        Job(b, (None, t0), False),
        Job(b, (None, t1), True),
        Job(b, (None, t2), True),
        Job(c, (None, t0), True),
        Job(c, (None, t1), True),
    ]
    assert Job(b, (t0, t1, t2), True).links == (Link(t0, t1), Link(t1, t2))
