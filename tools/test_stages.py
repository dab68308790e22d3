"""`make test`: every check of the collection, stage after stage (some side by side: LANES), timed.

Each stage's output goes to tests/output/ci/<stage>.log; a failing stage's tail is printed. Stages that
run pytest (unit tests, Molecule's testinfra verifiers) count their test cases; every other stage counts
as one check. The last line is `N passed, N failed`. Exit status 1 when anything failed.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import subprocess
import sys
import threading
import time
import xml.etree.ElementTree as ET
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
OUTPUT = REPO / "tests" / "output" / "ci"
TAIL_LINES = 150
LAB_STAGES = ("lab-prepare",)  # besides the molecule-* stages: what `make molecule` (--labs) runs


@dataclass(frozen=True)
class Stage:
    name: str
    argv: tuple[str, ...]
    junit: str | None = None  # a JUnit XML file the stage writes, relative to OUTPUT


UNIT = ("python", "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "auto")
STAGES: tuple[Stage, ...] = (
    Stage("ruff", ("ruff", "check", ".")),
    Stage("mypy", ("bash", "tools/mypy.sh")),
    Stage("yamllint", ("yamllint", "--strict", ".")),
    Stage("argument-specs", ("python", "tools/check_argspecs.py")),
    Stage("role-docs", ("python", "tools/role_docs.py", "--check")),
    Stage("awx-templates", ("python", "tools/check_awx_templates.py")),
    # The unit tests on every core (pytest-xdist), in two stages: those that run ansible-playbook (the roles' and
    # playbooks' tests: most of the unit tests' CPU), and the rest (beside the engine scenario's last, mostly waiting,
    # part).
    Stage("unit-ansible", (*UNIT, "tests/unit/roles", "tests/unit/playbooks", f"--junitxml={OUTPUT}/unit-ansible.xml"), "unit-ansible.xml"),
    Stage("lab-prepare", ("python", "tests/lab/spark_lab.py", "prepare", "--engine")),
    Stage("molecule-lab", ("molecule", "test", "-s", "lab"), "molecule-lab.xml"),
    Stage("molecule-reclaim", ("molecule", "test", "-s", "reclaim"), "molecule-reclaim.xml"),
    Stage("molecule-model", ("molecule", "test", "-s", "model"), "molecule-model.xml"),
    Stage("molecule-serve", ("molecule", "test", "-s", "serve"), "molecule-serve.xml"),
    # The engine scenario in four stages (tools/molecule_split.sh): its lab created and converged, then its side effect
    # (the reboot) and recovery tests, both beside other stages; its benchmark alone; its image tests (then its lab's
    # destruction) beside the other unit tests and static checks.
    Stage("molecule-engine-up", ("bash", "tools/molecule_split.sh", "up", "engine")),
    Stage(
        "molecule-engine-recovery",
        ("bash", "tools/molecule_split.sh", "part", "engine", "recovery", "not test_engine_benchmark and not test_engine_image", "side-effect"),
        "molecule-engine-recovery.xml",
    ),
    Stage(
        "molecule-engine-benchmark",
        ("bash", "tools/molecule_split.sh", "part", "engine", "benchmark", "test_engine_benchmark"),
        "molecule-engine-benchmark.xml",
    ),
    Stage("molecule-engine-image", ("bash", "tools/molecule_split.sh", "finish", "engine", "image", "test_engine_image"), "molecule-engine-image.xml"),
    Stage("molecule-lab_miswired", ("molecule", "test", "-s", "lab_miswired")),
    Stage("playbook-syntax", ("bash", "tools/check_playbooks.sh")),
    Stage("collection-build", ("bash", "tools/check_build.sh")),
    Stage("execution-environment", ("bash", "tools/check_ee.sh")),
    Stage("unit", (*UNIT, "tests/unit", "--ignore=tests/unit/roles", "--ignore=tests/unit/playbooks", f"--junitxml={OUTPUT}/unit.xml"), "unit.xml"),
    Stage("ansible-lint", ("ansible-lint", "--offline", "--profile", "production")),
    Stage("ansible-test-sanity", ("bash", "tools/ansible_test.sh", "sanity", "--requirements")),
)


# Stages that run at the same time: groups of lanes (a group starts where its first stage comes in STAGES), each
# lane's stages in order (CI has 2 cores); a stage in no group runs alone. First, two lanes:
# - the cheap static checks, then the unit tests that run ansible-playbook (on every core), then the lab, reclaim and
#   model scenarios and the engine scenario's lab (created and converged: its real engine installed and loaded, mp),
#   then the engine scenario's reboot and recovery tests (each timed against the engine's own start, both measured in
#   the same conditions);
# - the lab's preparation (node image, wheelhouses, the engine's download: once; every scenario's dependency step then
#   finds it done, or waits on its lock), then the serve scenario (the real engine in Ray mode: deployed through AWX,
#   operated, rebooted, its pieces killed, switched to mp and back, upgraded and torn down on one lab; the longest
#   scenario, so the reclaim scenario moved to the other lane when serve took the real engine, issue 34).
# Then, alone, the engine scenario's benchmark (two load generators compared within 15 %: a neighbour's load would skew
# one run and not the other). Then two lanes again: the engine scenario's image tests (they end with a teardown, so
# they come after the benchmark; they mostly wait on the engine's starts), beside the lab_miswired scenario, the
# playbooks' syntax, the collection's build, the other unit tests, ansible-lint and ansible-test sanity, which fill the
# CPU the waiting leaves.
# Measured (docs/benchmarks.md, seventh session): before this layout the engine's side effect and every test of it ran
# alone after the lanes (about 850-940 s) with the machine's CPUs about 65 % busy, and `make test` took 3131 s; with
# it, 2602 s. The recovery times the engine's tests write are now measured beside the serve lane: the figures in
# docs/ come from bench/engine_recovery.py, which runs the scenario alone. A group's stages' outcomes are listed in STAGES'
# order. Scenarios side by side share the lab's networks: `make test` keeps them (SPARKOPS_LAB_KEEP_NETWORKS) and
# releases them once at the end.

LANES: tuple[tuple[tuple[str, ...], ...], ...] = (
    (
        (
            "ruff",
            "mypy",
            "yamllint",
            "argument-specs",
            "role-docs",
            "awx-templates",
            "unit-ansible",
            "molecule-lab",
            "molecule-reclaim",
            "molecule-model",
            "molecule-engine-up",
            "molecule-engine-recovery",
        ),
        ("lab-prepare", "molecule-serve"),
    ),
    (
        ("molecule-engine-image",),
        (
            "molecule-lab_miswired",
            "playbook-syntax",
            "collection-build",
            "execution-environment",
            "unit",
            "ansible-lint",
            "ansible-test-sanity",
        ),
    ),
)


@dataclass
class Outcome:
    stage: Stage
    rc: int
    seconds: float
    passed: int
    failed: int
    skipped: int
    cpu: float  # seconds of CPU the stage's processes took on this machine (not the lab containers' own)
    failures: tuple[str, ...] = ()  # its failed test cases (junit_failures), named again at the end


def junit_counts(path: Path) -> tuple[int, int, int] | None:
    if not path.is_file():
        return None
    root = ET.parse(path).getroot()
    suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
    total = sum(int(s.get("tests", 0)) for s in suites)
    failed = sum(int(s.get("failures", 0)) + int(s.get("errors", 0)) for s in suites)
    skipped = sum(int(s.get("skipped", 0)) for s in suites)
    return total - failed - skipped, failed, skipped


def junit_failures(path: Path) -> list[str]:
    """``classname::name: the message's first line`` of each failed or erring test case in a JUnit XML file."""
    if not path.is_file():
        return []
    found = []
    for case in ET.parse(path).getroot().iter("testcase"):
        for problem in (*case.findall("failure"), *case.findall("error")):
            message = (problem.get("message") or "").splitlines()
            found.append(f"{case.get('classname')}::{case.get('name')}: {message[0] if message else problem.tag}"[:300])
    return found


def machine_cpu(stat: str | None = None) -> tuple[float, float, float]:
    """(busy, idle, steal) seconds of every CPU of this machine since boot (/proc/stat's first line, or ``stat``'s: lab
    containers included). Steal, the time a virtual machine's hypervisor gave its CPUs to someone else, counts in busy:
    this machine could not use it either."""
    text = stat if stat is not None else Path("/proc/stat").read_text()
    fields = [int(v) for v in text.split("\n", 1)[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle, iowait
    busy = sum(fields[:8]) - idle  # user nice system idle iowait irq softirq steal (guest time is within user)
    tick = os.sysconf("SC_CLK_TCK")
    return busy / tick, idle / tick, fields[7] / tick


# Where podman keeps each container's CPU account: cgroup v1 (cgroupfs: libpod_parent/libpod-ID/cpuacct.usage, in ns)
# and cgroup v2 (libpod-ID.scope or libpod-ID under machine.slice or libpod_parent: cpu.stat's usage_usec).
CGROUP_ROOTS = (
    Path("/sys/fs/cgroup/cpuacct/libpod_parent"),
    Path("/sys/fs/cgroup/machine.slice"),
    Path("/sys/fs/cgroup/libpod_parent"),
)
CONTAINER_ID = re.compile(r"^libpod-([0-9a-f]{64})(?:\.scope)?$")


def container_cpu(roots: tuple[Path, ...] = CGROUP_ROOTS) -> dict[str, float]:
    """CPU seconds each running podman container has used so far, by its full ID (its processes, dead ones too)."""
    found: dict[str, float] = {}
    for root in roots:
        if not root.is_dir():
            continue
        for folder in root.iterdir():
            match = CONTAINER_ID.match(folder.name)
            if match is None:
                continue
            try:
                if (folder / "cpuacct.usage").is_file():
                    found[match[1]] = int((folder / "cpuacct.usage").read_text()) / 1e9
                elif (folder / "cpu.stat").is_file():
                    fields = dict(line.split() for line in (folder / "cpu.stat").read_text().splitlines() if line.count(" ") == 1)
                    found[match[1]] = int(fields["usage_usec"]) / 1e6
            except (OSError, ValueError, KeyError):
                continue  # removed while read
    return found


def by_scenario(usage: dict[str, float], names: dict[str, str]) -> dict[str, float]:
    """Each container's CPU summed by its scenario: the lab's containers are named SCENARIO-spark-ROLE (anything else:
    its own name; an ID whose name was never read: "unnamed")."""
    totals: dict[str, float] = {}
    for cid, seconds in usage.items():
        name = names.get(cid, "unnamed")
        scenario = name.split("-spark-")[0] if "-spark-" in name else name
        totals[scenario] = totals.get(scenario, 0.0) + seconds
    return dict(sorted(totals.items(), key=lambda kv: -kv[1]))


class ContainerCpu(threading.Thread):
    """While the stages run: every ``interval`` s each container's CPU so far (the last reading counts: a container is
    removed with its account), and the containers' names (podman ps) when an unknown one appears. The stages' own CPU
    (Outcome.cpu) does not hold it: a lab's processes are the container's, not the stage's."""

    def __init__(self, interval: float = 5.0) -> None:
        super().__init__(daemon=True)
        self.interval = interval
        self.usage: dict[str, float] = {}
        self.names: dict[str, str] = {}
        self.done = threading.Event()

    def read(self) -> None:
        now = container_cpu()
        self.usage.update({cid: max(seconds, self.usage.get(cid, 0.0)) for cid, seconds in now.items()})
        if set(now) - set(self.names):
            listed = subprocess.run(["podman", "ps", "-a", "--no-trunc", "--format", "{{.ID}} {{.Names}}"], capture_output=True, text=True, check=False)
            for line in listed.stdout.splitlines():
                if " " in line:
                    cid, name = line.split(" ", 1)
                    self.names[cid] = name

    def run(self) -> None:
        while not self.done.wait(self.interval):
            try:
                self.read()
            except OSError:
                return  # no podman here: nothing to count

    def stop(self) -> dict[str, float]:
        """The totals by scenario, with a last reading (containers still up, e.g. after an --only run)."""
        self.done.set()
        if self.is_alive():
            self.join()
        with contextlib.suppress(OSError):  # no podman here: what was read stands
            self.read()
        return by_scenario(self.usage, self.names)


def run_stage(stage: Stage) -> Outcome:
    log = OUTPUT / f"{stage.name}.log"
    junit = OUTPUT / stage.junit if stage.junit else None
    if junit is not None:
        junit.unlink(missing_ok=True)
    print(f"==> {stage.name}: {' '.join(stage.argv)}", flush=True)
    start = time.monotonic()
    with log.open("w") as out:
        process = subprocess.Popen(stage.argv, cwd=REPO, stdout=out, stderr=subprocess.STDOUT)
        status, usage = os.wait4(process.pid, 0)[1:]  # the exit status and what the stage's process tree used
        rc = process.returncode = os.waitstatus_to_exitcode(status)
    seconds = time.monotonic() - start
    cpu = usage.ru_utime + usage.ru_stime
    counts = junit_counts(junit) if junit is not None else None
    if counts is None:
        passed, failed, skipped = (1, 0, 0) if rc == 0 else (0, 1, 0)
    else:
        passed, failed, skipped = counts
        if rc != 0 and failed == 0:
            failed = 1  # the stage failed outside its test cases (create, converge, idempotence...)
    verdict = "ok" if rc == 0 else f"FAILED (rc={rc})"
    counted = f"{passed} passed, {failed} failed, {skipped} skipped"
    print(f"<== {stage.name}: {verdict} in {seconds:.1f}s ({cpu:.0f}s CPU); {counted}; log: {log.relative_to(REPO)}", flush=True)
    failures = tuple(junit_failures(junit)) if rc != 0 and junit is not None else ()
    if rc != 0:
        print("\n".join(f"    failed: {line}" for line in failures), flush=True)
        lines = log.read_text(errors="replace").splitlines()
        print("\n".join(f"    | {line}" for line in lines[-TAIL_LINES:]), flush=True)
    return Outcome(stage, rc, seconds, passed, failed, skipped, cpu, failures)


def schedule(names: list[str]) -> list[list[list[str]]]:
    """The order ``names`` (stages, in STAGES' order) run in: steps one after the other, each step's lanes side by
    side, each lane's stages in order (a group of LANES is a step where its first stage comes; a stage in no group is
    a step of its own)."""
    steps: list[list[list[str]]] = []
    placed: set[str] = set()
    for name in names:
        if name in placed:
            continue
        group = next((g for g in LANES if name in {n for lane in g for n in lane}), None)
        lanes = [[n for n in lane if n in names] for lane in group] if group else [[name]]
        steps.append([lane for lane in lanes if lane])
        placed.update(n for lane in steps[-1] for n in lane)
    return steps


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", action="append", default=[], help="run only these stages (repeatable)")
    parser.add_argument("--labs", action="store_true", help="run only the lab's stages (its preparation and every Molecule scenario)")
    parser.add_argument("--list", action="store_true", help="list the stages and exit")
    args = parser.parse_args(argv)
    if args.list:
        print("\n".join(s.name for s in STAGES))
        return 0
    unknown = set(args.only) - {s.name for s in STAGES}
    if unknown:
        parser.error(f"unknown stage(s): {', '.join(sorted(unknown))}")
    wanted = set(args.only) | ({s.name for s in STAGES if s.name in LAB_STAGES or s.name.startswith("molecule-")} if args.labs else set())
    stages = [s for s in STAGES if s.name in wanted] if wanted else list(STAGES)
    OUTPUT.mkdir(parents=True, exist_ok=True)
    os.environ["SPARKOPS_JUNIT_DIR"] = str(OUTPUT)
    # A scenario's cleanup must not remove the lab networks while a scenario beside it is between its prepare and its
    # create; they are released once, after every stage.
    os.environ["SPARKOPS_LAB_KEEP_NETWORKS"] = "1"
    started, cpu_at_start = time.monotonic(), machine_cpu()
    containers = ContainerCpu()
    containers.start()
    by_name = {s.name: s for s in stages}
    done: dict[str, Outcome] = {}
    for names in schedule([s.name for s in stages]):
        lanes = [[by_name[n] for n in lane] for lane in names]
        with ThreadPoolExecutor(max_workers=len(lanes)) as pool:
            for lane_outcomes in pool.map(lambda lane: [run_stage(s) for s in lane], lanes):
                done.update((o.stage.name, o) for o in lane_outcomes)
    if any(s.name.startswith("molecule-") for s in stages):
        release = [sys.executable, str(REPO / "tests" / "lab" / "spark_lab.py"), "release"]
        subprocess.run(release, cwd=REPO, env={k: v for k, v in os.environ.items() if k != "SPARKOPS_LAB_KEEP_NETWORKS"}, check=False, capture_output=True)
    outcomes = [done[s.name] for s in stages]
    print("\nstage                      seconds  cpu (s)  passed  failed  skipped")
    for o in outcomes:
        print(f"{o.stage.name:<26} {o.seconds:7.1f} {o.cpu:8.0f} {o.passed:7d} {o.failed:7d} {o.skipped:8d}")
    print(f"{'total':<26} {time.monotonic() - started:7.1f} {sum(o.cpu for o in outcomes):8.0f}")
    busy, idle, steal = (end - start for end, start in zip(machine_cpu(), cpu_at_start, strict=True))
    total = max(busy + idle, 1e-9)
    print(
        f"this machine's CPUs ({os.cpu_count()}, the lab's containers included) were busy {100 * busy / total:.0f} % of the time"
        f" (stolen by the hypervisor: {100 * steal / total:.0f} %)"
    )
    labs = containers.stop()
    if labs:  # what the stages' CPU leaves out: the labs' own processes (Ansible's modules on the nodes, Ray, vLLM)
        print(f"the labs' containers used {sum(labs.values()):.0f} s of CPU: " + ", ".join(f"{k} {v:.0f}" for k, v in labs.items()))
    # What failed, named again beside the closing line: a CI page that shows only the end of the output shows it too.
    for o in outcomes:
        if o.rc != 0:
            log = (OUTPUT / f"{o.stage.name}.log").relative_to(REPO)
            print("\n".join([f"FAILED {o.stage.name} (rc={o.rc}); log: {log}", *(f"    {line}" for line in o.failures)]))
    passed = sum(o.passed for o in outcomes)
    failed = sum(o.failed for o in outcomes)
    skipped = sum(o.skipped for o in outcomes)
    print(f"{passed} passed, {failed} failed" + (f", {skipped} skipped" if skipped else ""))
    return 0 if failed == 0 and all(o.rc == 0 for o in outcomes) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
