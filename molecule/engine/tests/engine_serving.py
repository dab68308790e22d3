"""What the engine scenario's tests share: the head's API answering a completion (what a user gets), waits for it,
the rank units' properties, and the recovery times the tests record."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import requests

sys.path.insert(0, str(Path(os.environ["ENGINE_LAB_PROJECT"]) / "tests" / "lab"))
from sparklab.scenario import node  # noqa: E402

HEAD = os.environ["ENGINE_LAB_HEAD"]
WORKER = os.environ["ENGINE_LAB_WORKER"]
HEAD_MGMT_IP = os.environ["ENGINE_LAB_HEAD_MGMT_IP"]
API_KEY = os.environ["ENGINE_LAB_API_KEY"]
MODEL = os.environ["ENGINE_LAB_MODEL"]
UNIT = "sparkops-vllm"
BASE = f"http://{HEAD_MGMT_IP}:8000"
TIMINGS = Path(os.environ.get("SPARKOPS_JUNIT_DIR", "/tmp")) / "engine-recovery.json"


def unit(name: str, prop: str) -> str:
    return str(node(name).check_output(f"systemctl show --property {prop} --value {UNIT}"))


def serves() -> bool:
    """A completion from the head's API (what a user gets), not only an open port."""
    try:
        reply = requests.post(
            f"{BASE}/v1/chat/completions",
            headers={"Authorization": f"Bearer {API_KEY}"},
            json={"model": MODEL, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 2},
            timeout=20,
        )
        return reply.status_code == 200 and reply.json()["usage"]["completion_tokens"] > 0
    except (requests.RequestException, ValueError, KeyError):
        return False


def wait_serving(timeout: float, since: float | None = None) -> float:
    """Seconds from ``since`` (default: now) until a completion succeeds; fail after ``timeout``."""
    start = time.monotonic() if since is None else since
    while time.monotonic() - start < timeout:
        if serves():
            return time.monotonic() - start
        time.sleep(0.5)
    head_journal = node(HEAD).run(f"journalctl -u {UNIT} -n 60 --no-pager -o cat").stdout
    worker_journal = node(WORKER).run(f"journalctl -u {UNIT} -n 30 --no-pager -o cat").stdout
    raise AssertionError(f"not serving {timeout} s after the event\nhead:\n{head_journal}\nworker:\n{worker_journal}")


def wait_not_serving(timeout: float) -> None:
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        if not serves():
            return
        time.sleep(0.2)
    raise AssertionError(f"still serving {timeout} s after the event")


def record(name: str, seconds: float) -> None:
    timings = json.loads(TIMINGS.read_text()) if TIMINGS.is_file() else {}
    timings[name] = round(seconds, 1)
    TIMINGS.write_text(json.dumps(timings, indent=2) + "\n")


def main_pid(name: str) -> int:
    return int(unit(name, "MainPID"))
