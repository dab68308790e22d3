"""site.yml's runs on the lab as ratios to the first full run (same command, same machine): the first run on fresh
nodes (the baseline), a converged rerun, a `--tags serve` rerun, and the preflight alone (a tag no task has: only
the always-run preflight, with its reconnaissance, drift and fit checks). Goal (issue 14): converged rerun <= 0.25x
the first run. Each rerun kind is timed R times, interleaved; medians. Absolute seconds here are noise. One kind
reruns with ssh pipelining off, as Molecule's own ansible.cfg had it for every scenario run before the scenarios
turned it on (make test's test-speed step).

    .venv/bin/python bench/site_runs.py [--nodes 2] [--rounds 3] [--json out.json] [--write]

--write puts the table into docs/benchmarks.md (section "Runs of site.yml ... (issue 14)").
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchmarks_doc import publish  # noqa: E402
from tool_env import tool_env  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
LAB = [sys.executable, str(REPO / "tests" / "lab" / "spark_lab.py")]
HEADING = "## Runs of site.yml: first, converged, `--tags serve`, preflight alone (issue 14)"
# Each kind: site.yml's arguments and the environment it runs with (beside the project's ansible.cfg).
KINDS: dict[str, tuple[list[str], dict[str, str]]] = {
    "converged rerun": ([], {}),
    # What every Molecule run read before the scenarios set ANSIBLE_PIPELINING (Molecule's ansible.cfg leaves it off).
    "converged rerun, ssh pipelining off": ([], {"ANSIBLE_PIPELINING": "false"}),
    "--tags serve rerun": (["--tags", "serve"], {}),
    "preflight alone": (["--tags", "preflight-only"], {}),
}


def site(*args: str, environment: dict[str, str] | None = None) -> tuple[float, dict[str, int]]:
    """Seconds of one site.yml run and the changed count per host (the run must succeed)."""
    env = tool_env(ANSIBLE_FORCE_COLOR="0", **(environment or {}))
    began = time.monotonic()
    proc = subprocess.run(["ansible-playbook", "site.yml", "-i", "inventories/lab", *args], cwd=REPO, env=env, capture_output=True, text=True, check=False)
    seconds = time.monotonic() - began
    if proc.returncode != 0:
        raise RuntimeError(f"site.yml {' '.join(args)} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-2000:]}")
    changed = {host: int(count) for host, count in re.findall(r"^(\S+)\s+:\s+ok=\d+\s+changed=(\d+)", proc.stdout, re.MULTILINE)}
    return seconds, changed


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--write", action="store_true", help="put the table into docs/benchmarks.md")
    args = parser.parse_args(argv)
    runs: dict[str, list[float]] = {kind: [] for kind in KINDS}
    changed: dict[str, list[int]] = {kind: [] for kind in KINDS}
    try:
        subprocess.run([*LAB, "down"], check=True, cwd=REPO, stdout=subprocess.DEVNULL, env=tool_env())  # fresh nodes for the baseline
        subprocess.run([*LAB, "up", "--nodes", str(args.nodes)], check=True, cwd=REPO, stdout=subprocess.DEVNULL, env=tool_env())
        first = site()[0]
        print(f"first run: {first:.1f}s", flush=True)
        for _round in range(args.rounds):
            for kind, (extra, environment) in KINDS.items():
                seconds, counts = site(*extra, environment=environment)
                runs[kind].append(seconds)
                changed[kind].append(sum(counts.values()))
                print(f"{kind}: {seconds:.1f}s, changed={sum(counts.values())}", flush=True)
    finally:
        subprocess.run([*LAB, "down"], check=False, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    summary = {
        "nodes": args.nodes,
        "first_run_s": first,
        "kinds": {
            kind: {
                "median_s": statistics.median(runs[kind]),
                "ratio_to_first": statistics.median(runs[kind]) / first,
                "runs_s": runs[kind],
                "changed": changed[kind],
            }
            for kind in KINDS
        },
    }
    lines = [
        HEADING,
        "",
        f"`.venv/bin/python bench/site_runs.py --nodes {args.nodes} --rounds {args.rounds}` on the lab (the real CPU engine, mp mode; "
        "site.yml over ssh, workers through the head). Baseline: the first run on fresh nodes in the same command.",
        "",
        "| Run | Median (s) | x first run | changed (all hosts) |",
        "|---|---:|---:|---|",
        f"| first run (baseline) | {first:.1f} | 1.00 | |",
    ]
    for kind, row in summary["kinds"].items():
        lines.append(f"| {kind} | {row['median_s']:.1f} | {row['ratio_to_first']:.2f} | {', '.join(map(str, row['changed']))} |")
    goal = summary["kinds"]["converged rerun"]["ratio_to_first"]
    lines += ["", f"Goal: converged rerun <= 0.25x the first run: {'met' if goal <= 0.25 else 'NOT met'} ({goal:.2f}x)."]
    publish(HEADING, "\n".join(lines) + "\n", args.write)
    if args.json:
        args.json.write_text(json.dumps(summary, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
