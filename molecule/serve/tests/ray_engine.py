"""What the serve scenario's tests of the real engine share: its head and worker, the head's API (sparklab.serving)
and the recovery times the tests record."""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(os.environ["RAY_LAB_PROJECT"]) / "tests" / "lab"))
from sparklab.serving import TIMINGS, UNIT, Serving, main_pid, record, unit  # noqa: E402

HEAD = os.environ["RAY_LAB_HEAD"]
WORKER = os.environ["RAY_LAB_WORKERS"].split(",")[0]
SERVING = Serving(HEAD, WORKER, os.environ["RAY_LAB_HEAD_MGMT_IP"], os.environ["SERVE_LAB_API_KEY"], os.environ["SERVE_LAB_MODEL"])
serves = SERVING.serves
wait_serving = SERVING.wait_serving
wait_not_serving = SERVING.wait_not_serving

# The tests import these from here, the shared ones included (re-exported).
__all__ = [
    "HEAD",
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
