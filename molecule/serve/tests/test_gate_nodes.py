"""The vLLM unit's start gate checks every node in Ray mode, not only the head it runs on: a worker without the head's
snapshot (same commit, same absolute path) stops the start, naming the worker, and serving comes back once the
snapshot is back. Runs before test_ray.py and test_serve.py (file order), while the lab is in Ray mode."""

from __future__ import annotations

import json
import os
import sys
import time
import typing as t
from pathlib import Path

sys.path.insert(0, str(Path(os.environ["RAY_LAB_PROJECT"]) / "tests" / "lab"))
from sparklab.scenario import module_result, node, unit_property  # noqa: E402

HEAD = os.environ["RAY_LAB_HEAD"]
WORKER = os.environ["RAY_LAB_WORKERS"].split(",")[0]
HEAD_IP = os.environ["RAY_LAB_HEAD_FABRIC_IP"]
API_KEY = os.environ["SERVE_LAB_API_KEY"]
MODEL = os.environ["SERVE_LAB_MODEL"]
UNIT = "sparkops-vllm"
GATE_SETTINGS = "/etc/sparkops/vllm-gate.json"


def endpoint(timeout: int) -> dict[str, t.Any]:
    """sparkops.inference.openai_endpoint, run on the head against its fabric address."""
    args = {"url": f"http://{HEAD_IP}:8000", "model": MODEL, "api_key": API_KEY, "timeout": timeout, "interval": 1, "fail_on_timeout": False}
    return module_result(HEAD, "sparkops.inference.openai_endpoint", args)


def wait_serving(timeout: int) -> None:
    result = endpoint(timeout)
    assert result["ready"], result


def unit(prop: str) -> str:
    return unit_property(node(HEAD), UNIT, prop)


def current_journal() -> str:
    return str(node(HEAD).check_output(f"journalctl _SYSTEMD_INVOCATION_ID={unit('InvocationID')} --no-pager --output cat"))


def test_a_worker_without_the_head_snapshot_stops_the_start_naming_it_and_serving_comes_back() -> None:
    head, worker = node(HEAD), node(WORKER)
    wait_serving(600)  # the reboot of side_effect: the cluster re-formed and vLLM came back through its gates
    settings = json.loads(head.file(GATE_SETTINGS).content_string)
    assert settings["check_nodes"] is True  # Ray mode
    worker_ip = settings["expected_nodes"][WORKER]
    repo_dir = f"{settings['cache_dir']}/models--{settings['repo_id'].replace('/', '--')}"
    commit = head.file(f"{repo_dir}/refs/{settings['revision']}").content_string.strip()
    snapshot = f"{repo_dir}/snapshots/{commit}"
    # After the reboot, with no Ansible run, the gate checked the worker too.
    journal = current_journal()
    assert f"{WORKER} ({worker_ip}): snapshot complete at {snapshot}" in journal and "gate nodes: ok" in journal, journal[-3000:]
    assert worker.file(snapshot).is_directory  # model_sync left the same commit at the same path

    away = f"{repo_dir}/gate-test-away"
    since = head.check_output("date +%s")
    worker.check_output(f"mv {snapshot} {away}")
    try:
        head.check_output(f"systemctl restart --no-block {UNIT}")
        # The gate fails at once (no waiting on a snapshot); systemd retries after RestartSec until its start limit.
        deadline = time.monotonic() + 300
        failed = ""
        while time.monotonic() < deadline:
            failed = head.check_output(f"journalctl --unit {UNIT} --since @{since} --no-pager --output cat | grep 'gate nodes: FAILED' || true")
            if failed and unit("ActiveState") == "failed":
                break
            time.sleep(2)
        assert failed, head.check_output(f"journalctl --unit {UNIT} --since @{since} --no-pager --output cat")[-3000:]
        line = failed.splitlines()[0]
        assert f"{WORKER} ({worker_ip}): the snapshot the head serves is missing: no {snapshot} (commit {commit})" in line, line
        # The start failed in its gate: the engine never ran, and systemd gave up at the start limit.
        assert unit("ActiveState") == "failed" and unit("MainPID") == "0", unit("ActiveState")
        assert not endpoint(3)["ready"]
    finally:
        if worker.file(away).exists:
            worker.check_output(f"mv {away} {snapshot}")
        head.check_output(f"systemctl reset-failed {UNIT}")  # also clears the start limit's count
        head.run(f"systemctl start {UNIT}")
    wait_serving(600)
    journal = current_journal()
    assert "gate nodes: ok" in journal and f"{WORKER} ({worker_ip}): snapshot complete at {snapshot}" in journal, journal[-3000:]
