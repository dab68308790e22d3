# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests for _snapshot_errors: how messages name the head, count attempts and quote the end of a failed
command's stderr, and the error carrying the result so far."""

from __future__ import annotations

from ansible_collections.sparkops.inference.plugins.module_utils._snapshot_errors import STDERR_TAIL, DistributeError, attempts_label, node_name, stderr_tail
from ansible_collections.sparkops.inference.plugins.module_utils._snapshot_plan import Plan
from ansible_collections.sparkops.inference.plugins.module_utils._snapshot_result import Result


def test_the_head_is_named_head_and_a_target_by_its_address() -> None:
    assert node_name(None) == "head"
    assert node_name("10.0.0.2") == "10.0.0.2"


def test_attempts_are_counted_in_words() -> None:
    assert attempts_label(1) == "1 attempt"
    assert attempts_label(4) == "4 attempts"


def test_only_the_end_of_a_long_stderr_is_quoted() -> None:
    assert stderr_tail("  rsync: connection unexpectedly closed\n") == "rsync: connection unexpectedly closed"
    long = "x" * STDERR_TAIL + "the end"
    assert stderr_tail(long) == "..." + long[-STDERR_TAIL:]
    assert stderr_tail(long).endswith("the end") and len(stderr_tail(long)) == STDERR_TAIL + 3


def test_the_error_carries_the_result_so_far() -> None:
    assert DistributeError("targets is empty").result is None
    so_far = Result(Plan("/srv/hub/models--acme--tiny-llm", "star", ("10.0.0.2",), (), {"10.0.0.2": {}}, ()), streams=1, check_mode=False)
    error = DistributeError("cannot send", so_far)
    assert str(error) == "cannot send" and error.result is so_far
