"""The liveness probe on the lab's head (a probe every 5 s, 12 s each, 2 failures in a row, 1 restart an hour): a wedged engine
(its process alive and stopped: nothing answers, the unit stays active) is restarted with no Ansible run and serves
again; wedged a second time within the hour, the probe stops acting and says so, until an operator restarts vLLM."""

from __future__ import annotations

import json
import os
import sys
import time
import typing as t
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(os.environ["RAY_LAB_PROJECT"]) / "tests" / "lab"))
from sparklab.scenario import Api, host_time, journal, node, role_var, unit_property, wait_until  # noqa: E402

HEAD = os.environ["RAY_LAB_HEAD"]
API = Api.from_env()
UNIT = "sparkops-vllm.service"
STATE = role_var("vllm_serve", "__vllm_serve_liveness_state")  # the probe's state: failures, restarts, the invocation it saw serve
RESET: list[str] = []  # when the head fixture reset the probe's state: its decisions since then


@pytest.fixture(scope="module")
def head() -> t.Iterator[t.Any]:
    """The head, its probe's state afresh (no restart counted from earlier in the hour); whatever the tests leave,
    vLLM is not left wedged for the scenario's other tests."""
    host = node(HEAD)
    host.run_expect([0], f"systemctl stop sparkops-vllm-liveness.timer && rm -f {STATE}")
    RESET.append(host_time(host))
    host.run_expect([0], "systemctl start sparkops-vllm-liveness.timer")
    try:
        yield host
    finally:
        # Its restarts (the probe's, the operator's) counted in the unit's start limit (3 an hour in the lab): the
        # scenario's later tests restart vLLM too, so the counter starts afresh (systemctl reset-failed resets it).
        host.run(f"systemctl reset-failed {UNIT}")
        pid = unit_property(host, UNIT, "MainPID")
        if pid not in ("", "0") and host.check_output(f"ps -o stat= -p {pid} || true").startswith("T"):
            host.run(f"systemctl restart --no-block {UNIT}")
            wait_until(API.serves, 600)


def probe_state(head: t.Any) -> dict[str, t.Any]:
    """The probe's state file (root-only), as the last probe wrote it; {} while there is none."""
    state = head.file(STATE)
    return dict(json.loads(state.content_string)) if state.exists else {}


def invocation(head: t.Any) -> str:
    return unit_property(head, UNIT, "InvocationID")


def liveness_journal(head: t.Any, since: str) -> str:
    # The probe's own lines (its SyslogIdentifier), not systemd's "Starting ..."/"Finished ..." about its service.
    return journal(head, "sparkops-vllm-liveness", since)


def last_decision(head: t.Any, since: str = "-15s") -> str:
    lines = liveness_journal(head, since).strip().splitlines()
    return lines[-1] if lines else ""


def wedge(head: t.Any) -> str:
    """Stop vLLM's main process (SIGSTOP): alive, the unit active, nothing answered; the time, for the journal."""
    pid = unit_property(head, UNIT, "MainPID")
    assert pid not in ("", "0")
    since = host_time(head)
    head.run_expect([0], f"kill -STOP {pid}")
    return since


def test_the_timer_probes_the_serving_engine(head: t.Any) -> None:
    assert head.check_output("systemctl is-enabled sparkops-vllm-liveness.timer") == "enabled"
    assert head.check_output("systemctl is-active sparkops-vllm-liveness.timer") == "active"
    assert wait_until(API.serves, 120), "vLLM does not serve before the liveness test"
    # A probe since the reset saw it serve (what the next test's wedge is counted against).
    assert wait_until(lambda: "serving: health: HTTP 200" in liveness_journal(head, RESET[0]), 30), liveness_journal(head, RESET[0])
    # ... and its state file says so. The journal's line alone can come from a probe that ran through the reset (the
    # journal's --since counts whole seconds) and wrote its state before the fixture removed the file: the next probe
    # would then start afresh, and count the wedge as a start that has not answered yet.
    assert wait_until(lambda: probe_state(head).get("ready_invocation") == invocation(head), 30), probe_state(head)
    key = head.file("/etc/sparkops/private/vllm-api-key").content_string.strip()
    assert key and key not in head.file("/etc/sparkops/vllm-liveness.json").content_string
    assert key not in head.check_output("journalctl --identifier sparkops-vllm-liveness --no-pager --output cat")


def test_a_wedged_engine_is_restarted_with_no_ansible_run_and_serves_again(head: t.Any, record_property: t.Callable[[str, t.Any], None]) -> None:
    before = invocation(head)
    since = wedge(head)
    wedged_at = time.monotonic()
    assert not API.serves()  # wedged: no answer
    assert head.check_output(f"systemctl is-active {UNIT}") == "active"  # systemd alone sees nothing wrong
    assert wait_until(lambda: invocation(head) != before, 150), liveness_journal(head, since)
    assert wait_until(API.serves, 600), liveness_journal(head, since)
    record_property("wedged_to_serving_s", round(time.monotonic() - wedged_at, 1))
    lines = liveness_journal(head, since)
    assert "probe failed (1 of 2 in a row)" in lines and "probe failed 2 times in a row" in lines, lines
    assert f"restarting {UNIT}" in lines, lines


def test_wedged_again_within_the_hour_it_stops_acting_and_says_so_until_vllm_is_restarted(head: t.Any) -> None:
    assert wait_until(lambda: last_decision(head).startswith("serving:"), 120)  # the probe saw it serve again
    before = invocation(head)
    since = wedge(head)
    assert wait_until(lambda: "stopped acting" in liveness_journal(head, since), 150), liveness_journal(head, since)
    lines = liveness_journal(head, since)
    assert "1 restart(s) in the last hour reached vllm_serve_liveness_max_restarts_per_hour (1): stopped acting" in lines, lines
    # More probes (a wedged one takes two 12 s timeouts, then 5 s): it keeps saying so, and restarts nothing.
    assert wait_until(lambda: last_decision(head, since).startswith("stopped acting: 1 restart(s) in the last hour"), 90), last_decision(head, since)
    time.sleep(30)
    assert invocation(head) == before
    assert last_decision(head, since).startswith("stopped acting: 1 restart(s) in the last hour"), last_decision(head, since)
    # The operator restarts vLLM: it serves, and the probe acts again (a new invocation).
    head.run_expect([0], f"systemctl restart --no-block {UNIT}")
    assert wait_until(API.serves, 600)
    assert wait_until(lambda: last_decision(head).startswith("serving:"), 120), last_decision(head, "-120s")
