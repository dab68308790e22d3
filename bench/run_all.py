"""Every bench of bench/ in turn, each as docs/benchmarks.md runs it (`make bench` runs this).

    .venv/bin/python bench/run_all.py [--only NAME ...] [--no-lab] [--write] [--dry-run]

First the benches that need no lab (snapshot_verify, relay_throughput), then those that bring up a lab of their own
and remove it (model_distribution, ray_formation, site_runs), then engine_recovery (the Molecule scenario `engine`,
about 25 minutes), backends (mp against Ray, from that run's figures) and keep_serving (the scenario `serve`, about
20), then serve_readiness with --reboot (readiness detection against the real engine, then reboot to serving), which
needs a converged lab: this script brings up the `make demo` lab (2 nodes, site.yml) for it and removes it after.
All together take well over an hour on a 2-core machine; --no-lab runs only the first group (a few minutes). --write
has each bench that can (all but ray_formation, which prints its table) replace its section of docs/benchmarks.md.
--dry-run prints the commands and runs none. A failing bench stops the run (its exit status is this script's).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))
from tool_env import tool_env  # noqa: E402

LAB = [sys.executable, str(REPO / "tests" / "lab" / "spark_lab.py")]


@dataclass(frozen=True)
class Bench:
    name: str
    args: tuple[str, ...] = ()
    lab: str = "none"  # "none": no lab; "own": brings up and removes its own; "demo": needs the converged demo lab
    writes: bool = True  # takes --write (replaces its section of docs/benchmarks.md)


BENCHES: tuple[Bench, ...] = (
    Bench("snapshot_verify"),
    Bench("relay_throughput"),
    Bench("model_distribution", lab="own"),
    Bench("ray_formation", lab="own", writes=False),
    Bench("site_runs", lab="own"),
    Bench("engine_recovery", lab="own"),
    # mp against Ray from the figures engine_recovery's run of the scenario wrote (no second run).
    Bench("backends", ("--timings", "tests/output/bench/engine-recovery.json"), lab="own"),
    Bench("keep_serving", lab="own"),
    # Both parts (readiness detection, reboot to serving) on the real engine of the converged demo lab.
    Bench("serve_readiness", ("--reboot",), lab="demo"),
)
NAMES = sorted({bench.name for bench in BENCHES})


def selected(only: list[str], no_lab: bool) -> list[Bench]:
    """The benches to run, in BENCHES' order; with ``no_lab`` only those that need no lab."""
    chosen = [bench for bench in BENCHES if not only or bench.name in only]
    return [bench for bench in chosen if bench.lab == "none"] if no_lab else chosen


def commands(bench: Bench, write: bool) -> list[list[str]]:
    """The commands that run one bench: the demo lab's bring-up and removal around it where it needs that lab."""
    run = [sys.executable, str(Path("bench") / f"{bench.name}.py"), *bench.args, *(["--write"] if write and bench.writes else [])]
    if bench.lab != "demo":
        return [run]
    return [[*LAB, "up", "--nodes", "2"], ["ansible-playbook", "site.yml", "-i", "inventories/lab"], run]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", action="append", choices=NAMES, default=[], metavar="NAME", help=f"run only this bench (repeatable): {', '.join(NAMES)}")
    parser.add_argument("--no-lab", action="store_true", help="only the benches that need no lab")
    parser.add_argument("--write", action="store_true", help="each bench that can replaces its section of docs/benchmarks.md")
    parser.add_argument("--dry-run", action="store_true", help="print the commands, run none")
    args = parser.parse_args(argv)
    env = tool_env()
    for bench in selected(args.only, args.no_lab):
        demo = bench.lab == "demo"
        try:
            for command in commands(bench, args.write):
                print(f"==> {' '.join(command)}", flush=True)
                if not args.dry_run:
                    rc = subprocess.run(command, cwd=REPO, env=env, check=False).returncode
                    if rc != 0:
                        print(f"<== {bench.name}: failed (rc={rc})", flush=True)
                        return rc
        finally:
            if demo:
                down = [*LAB, "down"]
                print(f"==> {' '.join(down)}", flush=True)
                if not args.dry_run:
                    subprocess.run(down, cwd=REPO, env=env, check=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
