# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests for _node_checks (what the vLLM gate checks on each other node) and _ray_cluster's NODE_TASK_SCRIPT
(one Ray task pinned to each node, the code sent along), on real hub caches, meminfo texts and a fake ray package.

NODE_TASK_SCRIPT was also run by hand against a real single-node Ray 2.60.0 head (skip_head false, so the head ran
the check): the task imported the shipped module utils in a Ray worker and returned the facts; a too-short timeout
gave ``timeout``, a bad spec ``failed`` with ``RayTaskError(KeyError)``, a too-short deadline ``deadline_error``.
"""

from __future__ import annotations

import io
import json
import re
import shutil
import subprocess
import sys
import typing as t
from pathlib import Path

import pytest
from ansible_collections.sparkops.inference.plugins.module_utils import _node_checks
from ansible_collections.sparkops.inference.plugins.module_utils._node_checks import (
    SHIPPED_MODULES,
    check_node,
    describe,
    memory_facts,
    memory_problem,
    snapshot_facts,
    snapshot_problem,
)
from ansible_collections.sparkops.inference.plugins.module_utils._ray_cluster import (
    NODE_TASK_SCRIPT,
    RayClusterError,
    build_node_task_argv,
    node_task_args,
    parse_node_task_output,
)
from ansible_collections.sparkops.inference.plugins.module_utils._serve_gate import main
from ansible_collections.sparkops.inference.tests.unit.plugins.module_utils.hf_cache_factory import COMMIT, OTHER_COMMIT, REPO_ID, build_cache
from fake_clock import FakeClock

MODULE_DIR = str(Path(_node_checks.__file__).parent)
PACKAGE = _node_checks.__name__.rpartition(".")[0]


def meminfo(available_mib: int, total_mib: int = 122_000) -> str:
    return f"MemTotal: {total_mib * 1024} kB\nMemFree: {available_mib * 1024} kB\nMemAvailable: {available_mib * 1024} kB\nCached: 4096 kB\n"


def snapshot_spec(cache_dir: Path, commit: str = COMMIT) -> dict[str, str]:
    path = cache_dir / "models--acme--tiny-llm" / "snapshots" / commit
    return {"repo_id": REPO_ID, "revision": "main", "commit": commit, "path": str(path), "cache_dir": str(cache_dir)}


# --- the snapshot on a node -----------------------------------------------------------------------------------------


def test_the_head_snapshot_complete_on_the_node(tmp_path: Path) -> None:
    cache = build_cache(tmp_path)
    spec = snapshot_spec(cache.cache_dir)
    facts = snapshot_facts(spec)
    assert facts["complete"] and facts["exists"] and facts["ref"] == COMMIT and facts["shards"] == 3
    assert snapshot_problem(facts, spec) is None
    assert describe({"snapshot": facts}) == f"snapshot complete at {cache.snapshot} (3 shard(s))"


def test_a_node_without_the_snapshot_folder(tmp_path: Path) -> None:
    cache = build_cache(tmp_path)
    spec = snapshot_spec(cache.cache_dir)
    cache.snapshot.rename(tmp_path / "away")
    problem = snapshot_problem(snapshot_facts(spec), spec)
    assert problem == f"the snapshot the head serves is missing: no {cache.snapshot} (commit {COMMIT}); snapshots there: none"


def test_a_node_holding_another_commit(tmp_path: Path) -> None:
    cache = build_cache(tmp_path, commit=OTHER_COMMIT)
    spec = snapshot_spec(cache.cache_dir, COMMIT)
    problem = snapshot_problem(snapshot_facts(spec), spec)
    assert problem == (
        f"the snapshot the head serves is missing: no {spec['path']} (commit {COMMIT}); snapshots there: {OTHER_COMMIT};"
        f" refs/main there points to commit {OTHER_COMMIT}"
    )


def test_a_node_whose_main_points_elsewhere_fails_even_with_the_commit_there(tmp_path: Path) -> None:
    cache = build_cache(tmp_path)
    (cache.repo_dir / "refs" / "main").write_text(OTHER_COMMIT)
    spec = snapshot_spec(cache.cache_dir)
    assert (
        snapshot_problem(snapshot_facts(spec), spec)
        == f"refs/main there points to commit {OTHER_COMMIT}, not {COMMIT} that the head serves from {cache.snapshot}"
    )
    # A revision that is itself a commit needs no ref: the node's refs do not matter then.
    by_commit = {**spec, "revision": COMMIT}
    assert snapshot_problem(snapshot_facts(by_commit), by_commit) is None


def test_a_node_with_an_incomplete_snapshot_names_the_file(tmp_path: Path) -> None:
    cache = build_cache(tmp_path)
    cache.remove("model-00002-of-00003.safetensors")
    spec = snapshot_spec(cache.cache_dir)
    problem = snapshot_problem(snapshot_facts(spec), spec)
    assert problem is not None
    assert problem.startswith(f"the snapshot at {cache.snapshot} is incomplete (quick check, 1 problem): model-00002-of-00003.safetensors is missing")


def test_a_node_whose_cache_lacks_the_model(tmp_path: Path) -> None:
    (tmp_path / "hub").mkdir()
    spec = snapshot_spec(tmp_path / "hub")
    assert snapshot_problem(snapshot_facts(spec), spec) == f"the snapshot the head serves is missing: {REPO_ID} is not in its cache {tmp_path / 'hub'}"


def test_a_node_that_resolves_the_commit_elsewhere(tmp_path: Path) -> None:
    cache = build_cache(tmp_path)
    spec = snapshot_spec(cache.cache_dir)
    facts = {**snapshot_facts(spec), "resolved_path": "/elsewhere/snapshots/" + COMMIT}
    assert snapshot_problem(facts, spec) == f"commit {COMMIT} resolves to /elsewhere/snapshots/{COMMIT} there, not {cache.snapshot} that the head serves"


def test_many_problems_are_cut_short() -> None:
    facts = {"path": "/p", "exists": True, "complete": False, "problems": [f"f{i} is missing" for i in range(5)], "problem_count": 8, "ref": COMMIT}
    problem = snapshot_problem(facts, {"commit": COMMIT, "revision": "main", "repo_id": REPO_ID, "cache_dir": "/c"})
    assert (
        problem
        == "the snapshot at /p is incomplete (quick check, 8 problems): f0 is missing; f1 is missing; f2 is missing; f3 is missing; f4 is missing; and 3 more"
    )


# --- memory on a node -----------------------------------------------------------------------------------------------


def test_memory_waits_then_passes() -> None:
    clock = FakeClock()
    readings = iter([meminfo(50_000), meminfo(95_000)])
    facts = memory_facts({"min_available_mib": 90_000, "timeout": 10, "interval": 2}, read=lambda _p: next(readings), clock=clock.clock, sleep=clock.sleep)
    assert facts["ok"] and facts["waited"] == 2 and memory_problem(facts) is None
    assert describe({"memory": facts}) == "95000 MiB available of 122000 (need 90000)"


def test_memory_short_at_the_deadline_names_the_figures() -> None:
    clock = FakeClock()
    facts = memory_facts({"min_available_fraction": 0.8, "timeout": 5, "interval": 2}, read=lambda _p: meminfo(60_000), clock=clock.clock, sleep=clock.sleep)
    assert not facts["ok"] and clock.sleeps == [2, 2, 1]
    assert memory_problem(facts) == "memory: only 60000 MiB available of 122000 after 5s, need 97600 MiB (page cache 4 MiB)"


def test_memory_reads_once_with_no_time_left() -> None:
    clock = FakeClock()
    facts = memory_facts({"min_available_mib": 90_000, "timeout": 0}, read=lambda _p: meminfo(10), clock=clock.clock, sleep=clock.sleep)
    assert not facts["ok"] and clock.sleeps == []


def test_memory_unreadable() -> None:
    def unreadable(path: str) -> str:
        raise OSError(2, "No such file or directory")

    facts = memory_facts({"min_available_mib": 1, "meminfo_path": "/nope"}, read=unreadable)
    assert memory_problem(facts) == "cannot read /nope: [Errno 2] No such file or directory"


def test_check_node_runs_what_the_spec_asks(tmp_path: Path) -> None:
    cache = build_cache(tmp_path)
    info = tmp_path / "meminfo"
    info.write_text(meminfo(100_000))
    spec = {"snapshot": snapshot_spec(cache.cache_dir), "memory": {"min_available_mib": 90_000, "timeout": 0, "meminfo_path": str(info)}}
    facts = check_node(spec)
    assert set(facts) == {"snapshot", "memory"} and facts["snapshot"]["complete"] and facts["memory"]["ok"]
    assert json.loads(json.dumps(facts)) == facts  # plain JSON: it travels back through Ray and the script's output
    assert set(check_node({"memory": spec["memory"]})) == {"memory"}


def test_shipped_modules_cover_every_module_util_the_node_side_imports() -> None:
    for name in SHIPPED_MODULES:
        text = (Path(MODULE_DIR) / f"{name}.py").read_text(encoding="utf-8")
        for imported in set(re.findall(r"plugins\.module_utils\.(_\w+) import", text)):
            assert imported in SHIPPED_MODULES, f"{name} imports {imported}, which is not sent to the nodes"


# --- NODE_TASK_SCRIPT end to end, against a fake ray package --------------------------------------------------------

FAKE_RAY = """
import json, os, sys, time
__version__ = "2.60.0"
_cfg = json.loads(os.environ["FAKE_RAY"])


def _log(event):
    with open(os.environ["FAKE_RAY_LOG"], "a") as log:
        log.write(json.dumps(event) + "\\n")


def init(**kwargs):
    os.write(1, b"noise on fd 1\\n")
    _log({"init": kwargs})
    if _cfg.get("hang"):
        time.sleep(60)
    if _cfg.get("fail"):
        raise ConnectionError("Failed to connect to Ray cluster at " + kwargs["address"])


def nodes():
    return _cfg["nodes"]


def shutdown():
    _log({"shutdown": True})


def put(value):
    return value


class _Ref:
    def __init__(self, value=None, error=None, slow=False):
        self.value, self.error, self.slow = value, error, slow


class _Remote:
    def __init__(self, fn, options=None):
        self.fn, self.opts = fn, options or {}

    def options(self, **options):
        return _Remote(self.fn, options)

    def remote(self, *args):
        node = self.opts["scheduling_strategy"].node_id
        _log({"task": node, "options": {k: v for k, v in self.opts.items() if k != "scheduling_strategy"},
              "soft": self.opts["scheduling_strategy"].soft})
        for source, target in _cfg.get("worker_moves", {}).get(node, []):  # what this node's disk lacks
            os.rename(source, target)
        if node in _cfg.get("slow", []):
            return _Ref(slow=True)
        spec = dict(args[2], **_cfg.get("spec_for", {}).get(node, {}))
        try:
            value = self.fn(args[0], args[1], spec)
        except BaseException as exc:
            return _Ref(error=exc)
        _log({"after": node, "leftover": sorted(m for m in sys.modules if m.startswith("ansible_collections"))})
        return _Ref(value=value)


def remote(fn):
    return _Remote(fn)


def wait(refs, num_returns, timeout):
    _log({"wait": timeout, "num_returns": num_returns})
    return [r for r in refs if not r.slow], [r for r in refs if r.slow]


def get(ref):
    if ref.error is not None:
        raise ref.error
    return ref.value


def cancel(ref, force=False):
    _log({"cancel": force})
"""

SCHEDULING = """
class NodeAffinitySchedulingStrategy:
    def __init__(self, node_id, soft):
        self.node_id, self.soft = node_id, soft
"""


def ray_node(node_id: str, ip: str, gpus: float = 1.0, head: bool = False, alive: bool = True) -> dict[str, t.Any]:
    resources: dict[str, float] = {"CPU": 1.0, f"node:{ip}": 1.0, **({"GPU": gpus} if gpus else {}), **({"node:__internal_head__": 1.0} if head else {})}
    return {"NodeID": node_id, "NodeManagerAddress": ip, "NodeManagerHostname": f"host-{node_id}", "Alive": alive, "Resources": resources}


NODES = [
    ray_node("h", "192.168.200.11", head=True),
    ray_node("w1", "192.168.200.12"),
    ray_node("w2", "192.168.200.13", gpus=0),  # no GPU, but in the inventory: checked
    ray_node("w3", "192.168.200.14", gpus=0),  # no GPU, not in the inventory: not checked
    ray_node("w4", "192.168.200.15", alive=False),
]


def run_script(
    tmp_path: Path, spec: dict[str, t.Any], cfg: dict[str, t.Any] | None = None, with_ray: bool = True, deadline: float = 30, skip_head: bool = True
) -> tuple[subprocess.CompletedProcess[str], list[dict[str, t.Any]]]:
    fake = tmp_path / "fake"
    if with_ray:
        (fake / "ray" / "util").mkdir(parents=True)
        (fake / "ray" / "__init__.py").write_text(FAKE_RAY, encoding="utf-8")
        (fake / "ray" / "util" / "__init__.py").write_text("", encoding="utf-8")
        (fake / "ray" / "util" / "scheduling_strategies.py").write_text(SCHEDULING, encoding="utf-8")
    else:
        fake.mkdir()
    log = tmp_path / "ray.log"
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(fake), "FAKE_RAY": json.dumps({"nodes": NODES, **(cfg or {})}), "FAKE_RAY_LOG": str(log)}
    arguments = node_task_args(
        "192.168.200.11:6379",
        MODULE_DIR,
        PACKAGE,
        SHIPPED_MODULES,
        _node_checks.ENTRY,
        spec,
        timeout=70,
        deadline=deadline,
        include_ips=["192.168.200.11", "192.168.200.12", "192.168.200.13"],
        skip_head=skip_head,
    )
    argv = build_node_task_argv(sys.executable, arguments)
    # -S keeps site-packages (a real ray, the collection) out: the task can only import the code it was sent.
    proc = subprocess.run([argv[0], "-S", *argv[1:]], capture_output=True, text=True, env=env, cwd=fake, timeout=60, check=False)
    events = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    return proc, events


def test_script_runs_the_shipped_check_pinned_to_each_chosen_node(tmp_path: Path) -> None:
    cache = build_cache(tmp_path)
    info = tmp_path / "meminfo"
    info.write_text(meminfo(100_000))
    spec = {"snapshot": snapshot_spec(cache.cache_dir), "memory": {"min_available_mib": 90_000, "timeout": 0, "meminfo_path": str(info)}}
    proc, events = run_script(tmp_path, spec)
    assert proc.returncode == 0, proc.stderr
    assert len(proc.stdout.splitlines()) == 1 and "noise on fd 1" in proc.stderr
    run = parse_node_task_output(proc.returncode, proc.stdout, proc.stderr, sys.executable)
    assert run.failure is None and run.ray_version == "2.60.0"
    assert [node["ip"] for node in run.alive] == ["192.168.200.11", "192.168.200.12", "192.168.200.13", "192.168.200.14"]
    assert run.head_ips == ["192.168.200.11"]
    # The head is skipped (its own gates ran), w3 has no GPU and is not in the inventory, w4 is dead.
    assert [(r.ip, r.state) for r in run.results] == [("192.168.200.12", "done"), ("192.168.200.13", "done")]
    for result in run.results:
        assert snapshot_problem(result.value["snapshot"], spec["snapshot"]) is None and memory_problem(result.value["memory"]) is None
    tasks = [e for e in events if "task" in e]
    assert [e["task"] for e in tasks] == ["w1", "w2"]
    assert all(e["soft"] is False and e["options"] == {"num_cpus": 0, "num_gpus": 0, "max_retries": 0, "name": "sparkops-node-check"} for e in tasks)
    assert {"wait": 70.0, "num_returns": 2} in events and {"shutdown": True} in events
    # The shipped modules are gone from the worker once the task is done.
    assert [e["leftover"] for e in events if "after" in e] == [[], []]
    assert events[0]["init"] == {"address": "192.168.200.11:6379", "logging_level": 40, "log_to_driver": False, "configure_logging": False}


def test_script_reports_a_node_that_failed_and_one_that_did_not_answer(tmp_path: Path) -> None:
    cache = build_cache(tmp_path)
    spec = {"snapshot": snapshot_spec(cache.cache_dir)}
    proc, events = run_script(tmp_path, spec, {"slow": ["w2"], "spec_for": {"w1": {"snapshot": {"repo_id": "x"}}}})
    run = parse_node_task_output(proc.returncode, proc.stdout, proc.stderr, sys.executable)
    assert run.failure is None
    assert [(r.ip, r.state, r.error) for r in run.results] == [
        ("192.168.200.12", "failed", "KeyError: 'revision'"),
        ("192.168.200.13", "timeout", ""),
    ]
    assert {"cancel": True} in events


def test_script_without_skipping_the_head_checks_it_too(tmp_path: Path) -> None:
    info = tmp_path / "meminfo"
    info.write_text(meminfo(100_000))
    proc, _events = run_script(tmp_path, {"memory": {"min_available_mib": 1, "meminfo_path": str(info)}}, skip_head=False)
    run = parse_node_task_output(proc.returncode, proc.stdout, proc.stderr, sys.executable)
    assert [r.ip for r in run.results] == ["192.168.200.11", "192.168.200.12", "192.168.200.13"]


def test_script_reports_a_connection_failure(tmp_path: Path) -> None:
    proc, _events = run_script(tmp_path, {}, {"fail": True})
    run = parse_node_task_output(proc.returncode, proc.stdout, proc.stderr, sys.executable)
    assert run.failure == "ConnectionError: Failed to connect to Ray cluster at 192.168.200.11:6379" and run.results == []


def test_script_ends_at_its_deadline_whatever_ray_does(tmp_path: Path) -> None:
    proc, _events = run_script(tmp_path, {}, {"hang": True}, deadline=1)
    run = parse_node_task_output(proc.returncode, proc.stdout, proc.stderr, sys.executable)
    assert run.failure == "no answer within 1s"


def test_script_reports_ray_missing(tmp_path: Path) -> None:
    proc, _events = run_script(tmp_path, {}, with_ray=False)
    with pytest.raises(RayClusterError, match=r"^ray is not importable by /opt/sparkops/ray/bin/python: ModuleNotFoundError: No module named 'ray'$"):
        parse_node_task_output(proc.returncode, proc.stdout, proc.stderr, "/opt/sparkops/ray/bin/python")


def test_script_reports_module_utils_it_cannot_read(tmp_path: Path) -> None:
    shutil.copytree(MODULE_DIR, tmp_path / "lib", ignore=shutil.ignore_patterns("_meminfo.py", "__pycache__"))
    fake = tmp_path / "fake" / "ray" / "util"
    fake.mkdir(parents=True)
    (fake.parent / "__init__.py").write_text(FAKE_RAY, encoding="utf-8")
    (fake / "__init__.py").write_text("", encoding="utf-8")
    (fake / "scheduling_strategies.py").write_text(SCHEDULING, encoding="utf-8")
    arguments = node_task_args("a:1", str(tmp_path / "lib"), PACKAGE, SHIPPED_MODULES, _node_checks.ENTRY, {}, timeout=1, deadline=30)
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(tmp_path / "fake"), "FAKE_RAY": json.dumps({"nodes": NODES}), "FAKE_RAY_LOG": str(tmp_path / "log")}
    proc = subprocess.run([sys.executable, "-S", "-c", NODE_TASK_SCRIPT, arguments], capture_output=True, text=True, env=env, timeout=60, check=False)
    run = parse_node_task_output(proc.returncode, proc.stdout, proc.stderr, sys.executable)
    assert run.failure is not None and run.failure.startswith("cannot read the module utils to send: [Errno 2] No such file or directory")


def test_parse_node_task_output_rejects_garbage() -> None:
    with pytest.raises(RayClusterError, match=r"did not print the expected JSON object \(rc=1\); stderr: Segmentation fault"):
        parse_node_task_output(1, "", "Segmentation fault\n", "/py")
    with pytest.raises(RayClusterError, match="a node result that is not an object"):
        parse_node_task_output(0, json.dumps({"ray_version": "2.60.0", "results": ["x"]}), "", "/py")


def test_node_task_args() -> None:
    args = json.loads(node_task_args(None, "/lib", "pkg", ["_a"], "_a:f", {"k": 1}, timeout=5, deadline=35, include_ips=["b", "a", "b"]))
    assert args == {
        "address": "auto",
        "module_dir": "/lib",
        "package": "pkg",
        "modules": ["_a"],
        "entry": "_a:f",
        "spec": {"k": 1},
        "timeout": 5.0,
        "deadline": 35.0,
        "include_ips": ["a", "b"],
        "skip_head": True,
    }
    assert build_node_task_argv("/py", "{}") == ["/py", "-c", NODE_TASK_SCRIPT, "{}"]


# --- the gate command end to end: the head's gates, then NODE_TASK_SCRIPT (fake ray) running the shipped check ---------


def gate_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cfg: dict[str, t.Any]) -> tuple[int, str, Path]:
    cache = build_cache(tmp_path)
    fake = tmp_path / "fake" / "ray" / "util"
    fake.mkdir(parents=True)
    (fake.parent / "__init__.py").write_text(FAKE_RAY, encoding="utf-8")
    (fake / "__init__.py").write_text("", encoding="utf-8")
    (fake / "scheduling_strategies.py").write_text(SCHEDULING, encoding="utf-8")
    python = tmp_path / "ray-python"
    python.write_text(f'#!/bin/sh\nexec {sys.executable} -S "$@"\n', encoding="utf-8")
    python.chmod(0o755)
    info = tmp_path / "meminfo"
    info.write_text(meminfo(100_000))
    two_nodes = [ray_node("h", "192.168.200.11", head=True), ray_node("w1", "192.168.200.12")]
    monkeypatch.setenv("PYTHONPATH", str(tmp_path / "fake"))
    monkeypatch.setenv("FAKE_RAY", json.dumps({"nodes": two_nodes, **cfg}))
    monkeypatch.setenv("FAKE_RAY_LOG", str(tmp_path / "ray.log"))
    settings = {
        "gates": ["snapshot", "memory"],
        "repo_id": REPO_ID,
        "cache_dir": str(cache.cache_dir),
        "ray_python": str(python),
        "ray_address": "192.168.200.11:6379",
        "expected_nodes": {"spark-head": "192.168.200.11", "spark-worker1": "192.168.200.12"},
        "min_available_mib": 90_000,
        "memory_timeout": 0,
        "meminfo_path": str(info),
        "check_nodes": True,
    }
    (tmp_path / "gate.json").write_text(json.dumps(settings))
    out = io.StringIO()
    rc = main([str(tmp_path / "gate.json")], out)
    return rc, out.getvalue(), cache.snapshot


def test_the_gate_command_checks_the_worker_through_ray(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rc, out, snapshot = gate_command(tmp_path, monkeypatch, {})
    assert rc == 0, out
    lines = out.splitlines()
    assert [line.split(":", 1)[0] for line in lines] == ["gate snapshot", "gate memory", "gate nodes"]
    assert lines[2].startswith("gate nodes: ok after ") and lines[2].endswith(
        f"spark-worker1 (192.168.200.12): snapshot complete at {snapshot} (3 shard(s)), 100000 MiB available of 122000 (need 90000)"
    )


def test_the_gate_command_fails_naming_the_worker_without_the_snapshot(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    snapshot = tmp_path / "hub" / "models--acme--tiny-llm" / "snapshots" / COMMIT
    rc, out, _snapshot = gate_command(tmp_path, monkeypatch, {"worker_moves": {"w1": [[str(snapshot), str(tmp_path / "away")]]}})
    assert rc == 1
    last = out.splitlines()[-1]
    assert last.startswith("gate nodes: FAILED after ")
    assert last.endswith(f": spark-worker1 (192.168.200.12): the snapshot the head serves is missing: no {snapshot} (commit {COMMIT}); snapshots there: none")
