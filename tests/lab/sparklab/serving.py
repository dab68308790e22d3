"""What the scenarios that run the real engine check of it: the head's API answering a completion (what a user gets),
waits for it, the vLLM unit's properties on a node, and the recovery times the tests record (one JSON file beside the
JUnit files, read by bench/engine_recovery.py and bench/backends.py)."""

from __future__ import annotations

import contextlib
import json
import os
import time
import typing as t
from dataclasses import dataclass
from pathlib import Path

import requests

from .scenario import node

UNIT = "sparkops-vllm"
TIMINGS = Path(os.environ.get("SPARKOPS_JUNIT_DIR", "/tmp")) / "engine-recovery.json"


def record(name: str, seconds: float) -> None:
    """``seconds`` as the figure ``name`` in TIMINGS (the other figures kept)."""
    timings = json.loads(TIMINGS.read_text()) if TIMINGS.is_file() else {}
    timings[name] = round(seconds, 1)
    TIMINGS.write_text(json.dumps(timings, indent=2) + "\n")


def unit(name: str, prop: str) -> str:
    """A property of the vLLM unit on node ``name``."""
    return str(node(name).check_output(f"systemctl show --property {prop} --value {UNIT}"))


def main_pid(name: str) -> int:
    return int(unit(name, "MainPID"))


@contextlib.contextmanager
def liveness_probe_held(head: str) -> t.Iterator[None]:
    """The liveness probe's timer on ``head`` stopped (and its running probe finished) while the block runs, started
    again after: its completions (vllm_serve_liveness) would count in the engine's /metrics beside a benchmark's."""
    host = node(head)
    host.run_expect([0], "systemctl stop sparkops-vllm-liveness.timer")
    host.run_expect([0], "while systemctl is-active --quiet sparkops-vllm-liveness.service; do sleep 1; done")
    try:
        yield
    finally:
        host.run_expect([0], "systemctl start sparkops-vllm-liveness.timer")


@dataclass(frozen=True)
class Serving:
    """The scenario's head (its API at its management address) and worker."""

    head: str
    worker: str
    head_mgmt_ip: str
    api_key: str
    model: str

    @property
    def base(self) -> str:
        return f"http://{self.head_mgmt_ip}:8000"

    def serves(self) -> bool:
        """A completion from the head's API (what a user gets), not only an open port."""
        try:
            reply = requests.post(
                f"{self.base}/v1/chat/completions",
                headers={"Authorization": f"Bearer {self.api_key}"},
                json={"model": self.model, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 2},
                timeout=20,
            )
            return reply.status_code == 200 and reply.json()["usage"]["completion_tokens"] > 0
        except (requests.RequestException, ValueError, KeyError):
            return False

    def wait_serving(self, timeout: float, since: float | None = None) -> float:
        """Seconds from ``since`` (default: now) until a completion succeeds; fail after ``timeout``, with the vLLM
        unit's journal on both nodes."""
        start = time.monotonic() if since is None else since
        while time.monotonic() - start < timeout:
            if self.serves():
                return time.monotonic() - start
            time.sleep(0.5)
        head_journal = node(self.head).run(f"journalctl -u {UNIT} -n 60 --no-pager -o cat").stdout
        worker_journal = node(self.worker).run(f"journalctl -u {UNIT} -n 30 --no-pager -o cat").stdout
        raise AssertionError(f"not serving {timeout} s after the event\nhead:\n{head_journal}\nworker:\n{worker_journal}")

    def wait_not_serving(self, timeout: float) -> None:
        start = time.monotonic()
        while time.monotonic() - start < timeout:
            if not self.serves():
                return
            time.sleep(0.2)
        raise AssertionError(f"still serving {timeout} s after the event")
