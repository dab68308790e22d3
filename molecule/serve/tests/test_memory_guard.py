"""The unified-memory guard on the lab's nodes: memory really taken on the head (a process holding 7 GiB of written
pages) past a stop level set under what the host has stops vLLM, with the figures in the guard's journal; released,
the guard starts vLLM again and it serves, with no Ansible run. Lab nodes read the host's /proc/meminfo (shared with
everything else the host runs: both nodes' engine, another scenario's), so the test reads MemAvailable while vLLM
serves, after its restart by hand, and sets the levels around it: the stop level 4 GiB under it (the real engine's
load takes about 2 GiB of the host's memory for a while, another scenario's engine beside it about as much), the
resume level 256 MiB above that."""

from __future__ import annotations

import json
import os
import sys
import time
import typing as t
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(os.environ["RAY_LAB_PROJECT"]) / "tests" / "lab"))
from sparklab.scenario import Api, host_time, journal, node, unit_property, wait_until  # noqa: E402

HEAD = os.environ["RAY_LAB_HEAD"]
WORKER = os.environ["RAY_LAB_WORKERS"].split(",")[0]
API = Api.from_env()
UNIT = "sparkops-vllm.service"
GUARD = "sparkops-vllm-memory-guard.service"
GUARD_ID = "sparkops-vllm-memory-guard"
SETTINGS = "/etc/sparkops/vllm-memory-guard.json"
STATE = "/var/lib/sparkops/vllm-memory-guard.json"
HOG = "sparkops-lab-memory-hog"
HOG_MIB = 7168
MARGIN_MIB = 4096  # the stop level under what the host has while vLLM serves


def available_mib(host: t.Any) -> int:
    line = host.check_output("grep MemAvailable: /proc/meminfo")
    return int(line.split()[1]) // 1024


def test_the_guard_runs_on_every_node_guarding_what_holds_vllms_memory_there() -> None:
    for name, units in ((HEAD, [UNIT]), (WORKER, ["sparkops-ray-worker.service"])):
        host = node(name)
        assert host.check_output(f"systemctl is-enabled {GUARD}") == "enabled", name
        assert host.check_output(f"systemctl is-active {GUARD}") == "active", name
        settings = json.loads(host.file(SETTINGS).content_string)
        assert settings["units"] == units and settings["stop_available_mib"] == 256, (name, settings)
        first = journal(host, GUARD_ID, "-2h")
        assert f"memory guard for {', '.join(units)}: stop at MemAvailable < 256 MiB PSI off; resume at >= 1024 MiB" in first, (name, first)


@pytest.fixture
def head_levels_near_the_host(record_property: t.Callable[[str, t.Any], None]) -> t.Iterator[tuple[t.Any, int, int]]:
    """vLLM restarted by hand to serving first (the baseline for docs/benchmarks.md), then the head's guard with levels
    under the host's MemAvailable as it is now; afterwards its lab settings, a fresh state and vLLM's start counter
    reset (the guard's start counts in the unit's start limit), serving."""
    head = node(HEAD)
    assert wait_until(API.serves, 120), "vLLM does not serve before the memory guard test"
    # The old engine answers until systemd has stopped it: serving counts once the unit's new invocation runs.
    before = unit_property(head, UNIT, "InvocationID")
    restarted_at = time.monotonic()
    head.run_expect([0], f"systemctl restart --no-block {UNIT}")
    assert wait_until(lambda: unit_property(head, UNIT, "InvocationID") not in ("", before), 120)
    assert wait_until(API.serves, 600)
    record_property("restart_to_serving_s", round(time.monotonic() - restarted_at, 1))
    original = head.file(SETTINGS).content_string
    have = available_mib(head)
    assert have > HOG_MIB + MARGIN_MIB, f"the host has {have} MiB available: too little to take {HOG_MIB} MiB for the test"
    stop = have - MARGIN_MIB
    settings = {**json.loads(original), "stop_available_mib": stop, "resume_available_mib": stop + 256, "resume_hold_s": 2}
    head.run_expect([0], f"printf '%s' '{json.dumps(settings)}' > {SETTINGS} && rm -f {STATE} && systemctl restart {GUARD}")
    try:
        yield head, stop, stop + 256
    finally:
        head.run(f"systemctl stop {HOG}")
        head.run_expect([0], f"printf '%s' '{original}' > {SETTINGS} && rm -f {STATE} && systemctl restart {GUARD}")
        head.run(f"systemctl reset-failed {UNIT}")
        head.run(f"systemctl start --no-block {UNIT}")
        assert wait_until(API.serves, 600)


def test_memory_really_taken_stops_vllm_and_once_released_it_serves_again(
    head_levels_near_the_host: tuple[t.Any, int, int], record_property: t.Callable[[str, t.Any], None]
) -> None:
    head, stop, resume = head_levels_near_the_host
    since = host_time(head)
    # Written pages (bytes * n), not a calloc'd bytearray whose untouched pages the kernel never hands out.
    take = f"import time; held = b'\\x01' * ({HOG_MIB} << 20); time.sleep(600)"
    head.run_expect([0], f'systemd-run --unit {HOG} --quiet /usr/bin/python3 -c "{take}"')
    assert wait_until(lambda: f"stopped {UNIT}" in journal(head, GUARD_ID, since), 60), journal(head, GUARD_ID, since)
    taken_at = time.monotonic()
    lines = journal(head, GUARD_ID, since)
    assert "stop: MemAvailable " in lines and f" MiB < {stop} MiB (vllm_serve_memory_guard_stop_available_mib)" in lines, lines
    # Stopped: inactive, or failed when the engine's exit on SIGTERM is not 0 (as while it was still loading).
    assert head.check_output(f"systemctl is-active {UNIT} || true") in ("inactive", "deactivating", "failed"), lines
    assert not API.serves()
    assert head.check_output(f"systemctl is-active {GUARD}") == "active"

    head.run_expect([0], f"systemctl stop {HOG}")
    released_at = time.monotonic()
    assert wait_until(lambda: f"started {UNIT}" in journal(head, GUARD_ID, since), 60), journal(head, GUARD_ID, since)
    lines = journal(head, GUARD_ID, since)
    assert f"start: MemAvailable >= {resume} MiB (vllm_serve_memory_guard_resume_available_mib)" in lines, lines
    assert wait_until(API.serves, 600), journal(head, GUARD_ID, since)
    record_property("released_to_serving_s", round(time.monotonic() - released_at, 1))
    record_property("held_s", round(released_at - taken_at, 1))
    state = json.loads(head.file(STATE).content_string)
    assert state["phase"] == "watching" and state["stops_total"] == 1 and state["stopped"] == [], state
