"""Keeping it serving (issue 16): a wedged engine and memory released back to serving, as ratios to a restart (one run).

The Molecule scenario `serve` (the real vLLM 0.32.0 CPU build, Ray mode, TP=2) records, in one run on the same lab, as
JUnit properties of its tests, the seconds from the event to the first completion the head's API answers:

* the baseline: the vLLM unit restarted by hand (``systemctl restart``), counted once its new invocation runs
  (``restart_to_serving_s``, tests/test_memory_guard.py);
* the engine wedged (SIGSTOP: alive, nothing answers) until the liveness probe restarts it (``wedged_to_serving_s``,
  tests/test_liveness.py);
* 7 GiB taken on the head until the memory guard stopped vLLM, then released until the guard starts it
  (``released_to_serving_s``; ``held_s`` is how long it stayed stopped, tests/test_memory_guard.py).

Each figure is also given as a ratio to the restart, since absolute times on these machines are noise.

With ``--engine-timings`` (the Molecule scenario `engine`'s tests/output/ci/engine-recovery.json, as make test or
bench/engine_recovery.py leaves it), a second table: a wedge seen in the engine's own counters against one only the
timed completion can see, from the stop of rank 0's EngineCore to the probe's restart, with the same probe settings
in one run (``wedge_by_counters_s``, ``wedge_by_completion_s``, tests/test_engine_wedge.py), as a ratio to the latter.

    .venv/bin/python bench/keep_serving.py [--junit tests/output/ci/molecule-serve.xml]
        [--engine-timings tests/output/ci/engine-recovery.json] [--write]

Without ``--junit`` it runs ``molecule test -s serve`` first (about 40 minutes) and reads what it wrote.
"""

from __future__ import annotations

import argparse
import datetime
import json
import subprocess
import sys
import xml.etree.ElementTree as ET  # noqa: S405 - our own test run's JUnit file
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))
from benchmarks_doc import publish, ratio_rows  # noqa: E402
from tool_env import tool_env  # noqa: E402

SECTION = "## Keep it serving: liveness and the memory guard (issue 16)"
BASELINE = "restart_to_serving_s"
CASES = (
    (BASELINE, "the vLLM unit restarted by hand (baseline; from the restart, once its new invocation runs)"),
    ("wedged_to_serving_s", "API server wedged (SIGSTOP) → the liveness probe (every 5 s, 12 s timeout, 2 failures) restarts the unit"),
    ("released_to_serving_s", "7 GiB released on the head → the memory guard (1 s readings, 2 s hold) starts vLLM"),
)


def properties(junit: Path) -> dict[str, float]:
    """Every numeric ``<property>`` of the JUnit file's test cases, by name (a later one wins)."""
    found: dict[str, float] = {}
    for prop in ET.parse(junit).getroot().iter("property"):  # noqa: S314 - our own test run's JUnit file
        try:
            found[prop.get("name", "")] = float(prop.get("value", ""))
        except ValueError:
            continue
    return found


def run_scenario(junit_dir: Path) -> Path:
    junit = junit_dir / "molecule-serve.xml"
    junit.unlink(missing_ok=True)
    subprocess.run(["molecule", "test", "-s", "serve"], cwd=REPO, env=tool_env(SPARKOPS_JUNIT_DIR=str(junit_dir)), check=True)
    return junit


WEDGE_BASELINE = "wedge_by_completion_s"
WEDGE_CASES = (
    (WEDGE_BASELINE, "engine stopped while idle: only the timed completion sees it (3 failed probes of 8 s, 3 s apart; baseline)"),
    ("wedge_by_counters_s", "engine stopped mid-generation: requests running, no token for 12 s in vLLM's counters"),
)


def wedge_rows(engine_timings: dict[str, float]) -> list[str]:
    """The wedge table (from the stop to the probe's restart), or nothing when the engine scenario's figures lack it."""
    if not all(key in engine_timings for key, _label in WEDGE_CASES):
        return []
    return [
        "",
        "A wedge seen by the probe, from the Molecule scenario `engine` (mp, TP=2; tests/test_engine_wedge.py): from the",
        "stop of rank 0's EngineCore (SIGSTOP) to the liveness probe's restart of vLLM; ratio: to the completion's.",
        "",
        "| wedge | seconds to the restart | ratio to the completion's |",
        "| --- | ---: | ---: |",
        *ratio_rows(engine_timings, WEDGE_CASES, WEDGE_BASELINE),
    ]


def render(timings: dict[str, float], engine_timings: dict[str, float] | None = None) -> str:
    rows = ratio_rows(timings, CASES, BASELINE)
    held = f" vLLM stayed stopped {timings['held_s']:.1f} s while the memory was held." if "held_s" in timings else ""
    return "\n".join(
        [
            SECTION,
            "",
            f"Measured {datetime.date.today().isoformat()} by `bench/keep_serving.py` from one `molecule test -s serve` run (the",
            "real vLLM 0.32.0 CPU build, Ray mode, TP=2 across head and worker; 2-core host). Each time runs from the event to",
            "the first completion the head's API answers, with no Ansible run; ratio: to the restart by hand in the same run." + held,
            "",
            "| event | seconds to serving | ratio to a restart |",
            "| --- | ---: | ---: |",
            *rows,
            "",
            "The wedge figure is mostly detection (two failed probes of 12 s timeouts, 5 s apart) plus the restart; the",
            "release figure is the guard's hold (2 s) plus a start, which can beat the baseline: a restart first stops the",
            "running engine, the guard's start finds it stopped already.",
            *wedge_rows(engine_timings or {}),
            "",
        ]
    )


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--junit", type=Path, help="the serve scenario's JUnit file (default: run the scenario first)")
    parser.add_argument("--engine-timings", type=Path, help="the engine scenario's engine-recovery.json: the wedge table")
    parser.add_argument("--write", action="store_true", help="write the section into docs/benchmarks.md")
    args = parser.parse_args(argv)
    path = args.junit or run_scenario(REPO / "tests" / "output" / "bench")
    timings = properties(path)
    if BASELINE not in timings:
        parser.error(f"{path} has no {BASELINE} (the baseline)")
    engine_timings = json.loads(args.engine_timings.read_text(encoding="utf-8")) if args.engine_timings else None
    if engine_timings is not None and not wedge_rows(engine_timings):
        parser.error(f"{args.engine_timings} has no {' and '.join(key for key, _label in WEDGE_CASES)}")
    publish(SECTION, render(timings, engine_timings), args.write)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
