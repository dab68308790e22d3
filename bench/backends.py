"""The real vLLM in mp mode against Ray mode, on the same lab and model in one run: start to serving and each recovery,
as ratios to mp (`make bench` runs it after engine_recovery, from the same run's figures).

The Molecule scenarios `engine` (mp, the role's default) and `serve` (Ray mode, molecule/serve/tests/
test_engine_ray.py), one after the other, each alone: the same CPU build of vLLM 0.32.0, model, lab shape (TP=2 across
a head and a worker over the fabric, gloo) and host. Both backends' times come from that one command, from the event
to the first completion the head's API answers, with no Ansible run:

* the engine's start: mp both ranks stopped then started; Ray the head's vLLM stopped then started (Ray stays up);
* the head's EngineCore killed (SIGKILL);
* the worker's rank killed: mp its `vllm serve --headless` (SIGKILL), Ray its RayWorkerProc actor (SIGKILL);
* Ray only: every process of the worker's Ray unit killed (its raylet with them), compared with mp's worker rank;
* playbooks/benchmark.yml at 1 and 2 requests in flight: mean TTFT, mean TPOT and output throughput (mp's from
  test_engine_benchmark.py's engine-benchmark.json, Ray's from engine-benchmark-ray.json, both beside the timings).

    .venv/bin/python bench/backends.py [--timings tests/output/ci/engine-recovery.json] [--write]

Without ``--timings`` it runs ``molecule test -s engine`` then ``-s serve`` first (about 60 minutes) and reads what
they wrote.
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
import typing as t
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))
from benchmarks_doc import publish  # noqa: E402
from engine_recovery import run_scenario  # noqa: E402

SECTION = "## mp against Ray: the real engine's start and recovery on both backends (issue 34)"
# (label, mp's figure, Ray's figure)
CASES = (
    ("engine start (baseline)", "engine_start_s", "ray_engine_start_s"),
    ("the head's EngineCore killed", "engine_killed_to_serving_s", "ray_engine_killed_to_serving_s"),
    ("the worker's rank killed (mp: its headless vLLM; Ray: its RayWorkerProc)", "worker_rank_killed_to_serving_s", "ray_worker_proc_killed_to_serving_s"),
    ("the worker's Ray unit killed, raylet and all (mp: its headless vLLM)", "worker_rank_killed_to_serving_s", "ray_raylet_killed_to_serving_s"),
)


def rows(timings: dict[str, float]) -> list[str]:
    """``| event | mp s | Ray s | Ray / mp | Ray / mp's start |`` for each case both figures of which were measured."""
    start = timings["engine_start_s"]
    return [
        f"| {label} | {timings[mp]:.1f} | {timings[ray]:.1f} | {timings[ray] / timings[mp]:.2f} | {timings[ray] / start:.2f} |"
        for label, mp, ray in CASES
        if mp in timings and ray in timings
    ]


LOAD = (("mean_ttft_ms", "mean TTFT (ms)"), ("mean_tpot_ms", "mean TPOT (ms)"), ("output_throughput", "output tokens/s"))


def load_rows(mp: dict[str, t.Any], ray: dict[str, t.Any]) -> list[str]:
    """``| in flight | figure | mp | Ray | Ray / mp |`` for each level both benchmark reports hold (our load generator's)."""
    found = []
    for level in sorted(set(mp.get("levels", {})) & set(ray.get("levels", {})), key=int):
        mine, theirs = mp["levels"][level]["ours"], ray["levels"][level]["ours"]
        for key, label in LOAD:
            found.append(f"| {level} | {label} | {mine[key]:.1f} | {theirs[key]:.1f} | {theirs[key] / mine[key]:.2f} |")
    return found


def figures(path: Path) -> dict[str, t.Any]:
    return dict(json.loads(path.read_text())) if path.is_file() else {}


def render(timings: dict[str, float], load: list[str] | None = None) -> str:
    return "\n".join(
        [
            SECTION,
            "",
            f"Measured {datetime.date.today().isoformat()} by `bench/backends.py` (the Molecule scenarios `engine`, mp, and `serve`, Ray:",
            "PyPI's CPU build of vLLM 0.32.0 installed by the role as `vllm`, TP=2 across a lab head and worker over the",
            "fabric, a 40 MB Qwen3-MoE, 2-core host; Ray mode through the lab's platform plugin, tests/lab/cpu_ray_platform).",
            "One command, the two scenarios one after the other, each alone. Each time runs from the event to the first",
            "completion the head's API answers, with no Ansible run; ratios: Ray to mp for the same event, and to mp's start.",
            "",
            "Two things of this lab weigh on Ray's side, not on a Spark's. Each Ray recovery holds about 30 s of the lab's",
            "cgroup v1: once vLLM has exited, systemd kills a process it left and then misses the emptied cgroup, waiting out",
            "`vllm_serve_stop_timeout_s` (30 in the lab; DGX OS runs cgroup v2). And vLLM's Ray executor hands the driver's",
            "environment to every worker (0.32.0 `vllm/v1/executor/ray_env_utils.py`, `get_driver_env_vars`), so the head's",
            "`VLLM_CPU_OMP_THREADS_BIND` (core 0; the worker's own unit has core 1 in mp) most likely binds both ranks to one",
            "core of the 2-core host in Ray mode (read from the code, not measured).",
            "",
            "| event | mp s | Ray s | Ray / mp | Ray / mp's start |",
            "| --- | ---: | ---: | ---: | ---: |",
            *rows(timings),
            "",
            *(
                [
                    "The same run's load (playbooks/benchmark.yml, 16 requests a level, 32-token prompts, 16 tokens out; each level",
                    "checked against the engine's own /metrics):",
                    "",
                    "| in flight | figure | mp | Ray | Ray / mp |",
                    "| ---: | --- | ---: | ---: | ---: |",
                    *load,
                    "",
                ]
                if load
                else []
            ),
        ]
    )


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--timings", type=Path, help="the JSON the scenario wrote (default: run the scenario first)")
    parser.add_argument("--write", action="store_true", help="write the section into docs/benchmarks.md")
    args = parser.parse_args(argv)
    path = args.timings or run_scenario(REPO / "tests" / "output" / "bench", "engine", "serve")
    timings = {key: float(value) for key, value in json.loads(path.read_text()).items()}
    missing = [key for key in ("engine_start_s", "ray_engine_start_s") if key not in timings]
    if missing:
        parser.error(f"{path} has no {', '.join(missing)} (the baselines)")
    load = load_rows(figures(path.with_name("engine-benchmark.json")), figures(path.with_name("engine-benchmark-ray.json")))
    publish(SECTION, render(timings, load), args.write)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
