"""What the engine scenario's tests share: its head and worker, the head's API (sparklab.serving) and the recovery
times the tests record."""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(os.environ["ENGINE_LAB_PROJECT"]) / "tests" / "lab"))
from sparklab.serving import TIMINGS, UNIT, Serving, main_pid, record, unit  # noqa: E402

HEAD = os.environ["ENGINE_LAB_HEAD"]
WORKER = os.environ["ENGINE_LAB_WORKER"]
HEAD_MGMT_IP = os.environ["ENGINE_LAB_HEAD_MGMT_IP"]
API_KEY = os.environ["ENGINE_LAB_API_KEY"]
MODEL = os.environ["ENGINE_LAB_MODEL"]
SERVING = Serving(HEAD, WORKER, HEAD_MGMT_IP, API_KEY, MODEL)
BASE = SERVING.base
serves = SERVING.serves
wait_serving = SERVING.wait_serving
wait_not_serving = SERVING.wait_not_serving

# The tests import these from here, the shared ones included (re-exported).
__all__ = [
    "API_KEY",
    "BASE",
    "HEAD",
    "HEAD_MGMT_IP",
    "MODEL",
    "SERVING",
    "TIMINGS",
    "UNIT",
    "WORKER",
    "main_pid",
    "record",
    "serves",
    "unit",
    "wait_not_serving",
    "wait_serving",
]
