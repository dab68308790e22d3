"""The real vLLM engine in the lab: its start to serving, and each way it ends back to serving, as ratios (one run).

The Molecule scenario `engine` (the CPU build of vLLM 0.30.0, mp mode, TP=2 across head and worker) times, in one
run on the same lab, from the event to the first completion answered by the head's API:

* the baseline: the engine's own start (both ranks stopped, then started as the role's handler starts them);
* both nodes rebooted at once (no Ansible run);
* rank 0's EngineCore killed (SIGKILL: vLLM exits 0; Restart=always and the group bring both ranks back);
* the worker's rank killed (SIGKILL of its unit: rank 0 notices within vllm_serve_group_lost_after_s and restarts);
* rank 0's unit restarted alone (the headless rank leaves the old rendezvous and meets the new one).

Each figure is also given as a ratio to the engine's start, since absolute times on these machines are noise.

    .venv/bin/python bench/engine_recovery.py [--timings tests/output/ci/engine-recovery.json] [--write]

Without ``--timings`` it runs ``molecule test -s engine`` first (about 10 minutes) and reads what it wrote.
"""

from __future__ import annotations

import argparse
import datetime
import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))
from benchmarks_doc import publish, ratio_rows  # noqa: E402
from tool_env import tool_env  # noqa: E402

SECTION = "## The real engine: start and recovery to serving (issue 12)"
CASES = (
    ("engine_start_s", "engine start (baseline: both ranks stopped, then started)"),
    ("reboot_to_serving_s", "both nodes rebooted (from the reboot command)"),
    ("engine_killed_to_serving_s", "rank 0's EngineCore killed (vLLM exits 0)"),
    ("worker_rank_killed_to_serving_s", "the worker's rank killed"),
    ("rank0_restarted_to_serving_s", "rank 0's unit restarted alone"),
)


def run_scenario(junit_dir: Path, *scenarios: str) -> Path:
    """``molecule test`` of each scenario (default: engine), one after the other, each alone, all writing their times
    into the same engine-recovery.json (emptied first)."""
    junit_dir.mkdir(parents=True, exist_ok=True)  # the scenario's side effect writes its start time there
    timings = junit_dir / "engine-recovery.json"
    timings.unlink(missing_ok=True)
    env = tool_env(SPARKOPS_JUNIT_DIR=str(junit_dir))
    for scenario in scenarios or ("engine",):
        subprocess.run(["molecule", "test", "-s", scenario], cwd=REPO, env=env, check=True)
    return timings


def render(timings: dict[str, float]) -> str:
    rows = ratio_rows(timings, CASES, "engine_start_s")
    return "\n".join(
        [
            SECTION,
            "",
            f"Measured {datetime.date.today().isoformat()} by `bench/engine_recovery.py` (the Molecule scenario `engine`: PyPI's CPU",
            "build of vLLM 0.30.0 installed by the role as `vllm`, mp mode, TP=2 across the lab's head and worker over the",
            "fabric, a 40 MB Qwen3-MoE; 2-core host). Each time runs from the event to the first completion the head's API",
            "answers, with no Ansible run; ratio: to the engine's own start in the same run.",
            "",
            "| event | seconds to serving | ratio to the engine's start |",
            "| --- | ---: | ---: |",
            *rows,
            "",
        ]
    )


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--timings", type=Path, help="the JSON the scenario wrote (default: run the scenario first)")
    parser.add_argument("--write", action="store_true", help="write the section into docs/benchmarks.md")
    args = parser.parse_args(argv)
    path = args.timings or run_scenario(REPO / "tests" / "output" / "bench")
    timings = {key: float(value) for key, value in json.loads(path.read_text()).items()}
    if "engine_start_s" not in timings:
        parser.error(f"{path} has no engine_start_s (the baseline)")
    publish(SECTION, render(timings), args.write)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
