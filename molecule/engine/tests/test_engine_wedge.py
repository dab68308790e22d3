"""A wedged engine seen in its own counters (the real engine, mp, TP=2): rank 0's EngineCore stopped (SIGSTOP: alive,
its requests still "running", nothing produced) while a long request streams; the liveness probe reads /metrics,
sees requests running and no token for vllm_serve_liveness_wedge_after_s, and restarts the group at once, with no
completion of its own. The baseline in the same run, with the same probe settings: the engine stopped while idle,
which only the timed completion can see (failures in a row, each waiting for its timeout), as it saw every wedge
before it read the counters. Both times, from the stop to the restart, go to tests/output/ci/engine-recovery.json
(bench/keep_serving.py gives their ratio)."""

from __future__ import annotations

import json
import os
import sys
import threading
import time
import typing as t
from pathlib import Path

import pytest
import requests
from engine_serving import API_KEY, BASE, HEAD, MODEL, UNIT, WORKER, main_pid, record, wait_serving

sys.path.insert(0, str(Path(os.environ["ENGINE_LAB_PROJECT"]) / "tests" / "lab"))
from sparklab.scenario import node, playbook  # noqa: E402

# The probe every 3 s, each request at most 8 s, 3 failures in a row; a wedge after 12 s without a token.
PROBE = {
    "vllm_serve_liveness_interval_s": 3,
    "vllm_serve_liveness_timeout_s": 8,
    "vllm_serve_liveness_failures": 3,
    "vllm_serve_liveness_max_restarts_per_hour": 10,
    "vllm_serve_liveness_wedge_after_s": 12,
}
STATE = "/var/lib/sparkops/vllm-liveness.json"
LIVENESS = "sparkops-vllm-liveness.service"


def invocation() -> str:
    return str(node(HEAD).check_output(f"systemctl show --property InvocationID --value {UNIT}"))


@pytest.fixture(scope="module")
def fast_probe() -> t.Iterator[None]:
    """The probe's settings for the test (its files and timer only: vLLM keeps running); the scenario's back after."""
    pids = (main_pid(HEAD), main_pid(WORKER))
    run = playbook("site.yml", "--tags", "serve", "-e", json.dumps(PROBE))
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    assert (main_pid(HEAD), main_pid(WORKER)) == pids
    yield
    run = playbook("site.yml", "--tags", "serve")
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]


def probe_saw_it_serve() -> None:
    """Until the probe has seen this invocation of vLLM serve (a failure before that counts as a start, not a wedge)."""
    now = invocation()
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        saved = node(HEAD).run(f"cat {STATE}").stdout
        if saved and json.loads(saved).get("ready_invocation") == now:
            return
        time.sleep(1)
    raise AssertionError(f"the probe did not see {UNIT} serve: {node(HEAD).run(f'journalctl -u {LIVENESS} -n 20 --no-pager -o cat').stdout}")


def stream_long(started: threading.Event, stop: threading.Event) -> None:
    """A long streamed completion: ``started`` once tokens flow; it ends when the engine goes away."""
    # The scenario's max_model_len is 512 (molecule.yml): most of it for the answer.
    body = {"model": MODEL, "messages": [{"role": "user", "content": "Count."}], "max_tokens": 400, "ignore_eos": True, "stream": True}
    try:
        with requests.post(f"{BASE}/v1/chat/completions", headers={"Authorization": f"Bearer {API_KEY}"}, json=body, stream=True, timeout=(10, 600)) as reply:
            chunks = 0
            for line in reply.iter_lines():
                chunks += line.startswith(b"data: ")
                if chunks >= 5:
                    started.set()
                if stop.is_set():
                    return
    except requests.RequestException:
        return


def stop_engine_until_restarted(*, mid_generation: bool) -> tuple[float, str]:
    """Rank 0's EngineCore stopped (SIGSTOP), while a long request streams or while idle; the seconds until the
    liveness probe restarted vLLM (a new invocation of its unit), and the probe's journal since the stop."""
    probe_saw_it_serve()
    head = node(HEAD)
    started, stop = threading.Event(), threading.Event()
    streaming = threading.Thread(target=stream_long, args=(started, stop), daemon=True)
    if mid_generation:
        streaming.start()
        assert started.wait(120), "the long request did not stream"
    before = invocation()
    engine = head.check_output("pgrep --exact VLLM::EngineCor | head -1")
    assert engine, head.check_output("ps -eo pid,comm,args")
    since = head.check_output("date '+%Y-%m-%d %H:%M:%S'")
    stopped = time.monotonic()
    head.check_output(f"kill -STOP {engine}")
    try:
        while invocation() in ("", before):
            assert time.monotonic() - stopped < 300, head.run(f"journalctl -u {LIVENESS} --since '{since}' --no-pager -o cat").stdout[-3000:]
            time.sleep(0.5)
        took = time.monotonic() - stopped
    finally:
        stop.set()
        head.run(f"kill -CONT {engine}")  # a no-op once systemd's stop killed it
    journal = head.check_output(f"journalctl -u {LIVENESS} --since '{since}' --no-pager -o cat")
    wait_serving(600)
    return took, journal


@pytest.mark.usefixtures("fast_probe")
def test_a_wedge_mid_generation_is_seen_in_the_engine_s_counters_and_restarted_sooner_than_a_completion_would() -> None:
    seen, journal = stop_engine_until_restarted(mid_generation=True)
    assert "wedged: 1 request(s) running and no token generated or prompt processed for" in journal, journal[-3000:]
    assert "probe failed" not in journal, journal[-3000:]  # no completion of its own decided it
    record("wedge_by_counters_s", round(seen, 1))
    idle, journal = stop_engine_until_restarted(mid_generation=False)
    assert "probe failed 3 times in a row" in journal and "completion: timed out after 8 s" in journal, journal[-3000:]
    record("wedge_by_completion_s", round(idle, 1))
    # The counters: the wedge time (12 s) plus up to a probe interval; the completions: 3 probes in a row, each
    # waiting out its 8 s timeout, 3 s apart (33 s at least).
    assert seen < idle, (seen, idle)
