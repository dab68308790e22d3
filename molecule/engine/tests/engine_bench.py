"""What the engine scenario's benchmark checks share: playbooks/benchmark.yml run at one level, the engine's own
record of the requests it served (vLLM's /metrics) and where a load generator's figures disagree with it."""

from __future__ import annotations

import functools
import os
import sys
import typing as t
from pathlib import Path

sys.path.insert(0, str(Path(os.environ["ENGINE_LAB_PROJECT"]) / "tests" / "lab"))
from sparklab import engine_record  # noqa: E402
from sparklab.engine_record import OUTPUT_TOKENS, PROMPT_TOKENS, REQUESTS, TOLERANCE, VENV, against_engine  # noqa: E402

HEAD = os.environ["ENGINE_LAB_HEAD"]
HEAD_IP = os.environ["ENGINE_LAB_HEAD_FABRIC_IP"]
API_KEY = os.environ["ENGINE_LAB_API_KEY"]
FIGURES = Path(os.environ.get("SPARKOPS_JUNIT_DIR", "/tmp")) / "engine-benchmark.json"
LEVELS = (1, 2)

# The tests import these from here, the shared ones included (re-exported).
__all__ = [
    "API_KEY",
    "FIGURES",
    "HEAD",
    "HEAD_IP",
    "LEVELS",
    "OUTPUT_TOKENS",
    "PROMPT_TOKENS",
    "REQUESTS",
    "TOLERANCE",
    "VENV",
    "against_engine",
    "measured",
    "ours",
]


def ours(output_dir: Path, concurrency: int, figures: Path = FIGURES) -> dict[str, t.Any]:
    """playbooks/benchmark.yml at one level (no warm-up), run on the head as `vllm bench serve` is, its endpoint the
    default from a node: the head's fabric address (sparklab.engine_record.benchmark_level)."""
    return engine_record.benchmark_level(HEAD_IP, API_KEY, output_dir, concurrency, figures, run_on=HEAD)


# The engine on the head's record of a load generator's requests (sparklab.engine_record.measured).
measured = functools.partial(engine_record.measured, HEAD)
