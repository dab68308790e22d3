# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests for _serve_gate: the vLLM unit's start gates, on a fake Ray probe, real hub caches and meminfo texts."""

from __future__ import annotations

import io
import json
import re
import time
import typing as t
from pathlib import Path

import pytest
import yaml
from ansible_collections.sparkops.inference.plugins.module_utils._node_checks import SHIPPED_MODULES, memory_facts, snapshot_facts
from ansible_collections.sparkops.inference.plugins.module_utils._ray_cluster import NODE_TASK_SCRIPT
from ansible_collections.sparkops.inference.plugins.module_utils._serve_gate import GateConfigError, GateSettings, main, run_gates
from ansible_collections.sparkops.inference.tests.unit.plugins.module_utils.hf_cache_factory import (
    COMMIT,
    OTHER_COMMIT,
    REPO_ID,
    HubCache,
    build_cache,
    model_files,
    shard_name,
)
from ansible_collections.sparkops.inference.tests.unit.plugins.module_utils.test__hf_snapshot import DEEP_CONFIG, DEEP_SHARD, HUGE_DIMS_SHARD, SLOW_SHARD
from fake_clock import FakeClock

NODES = {"spark-head": "192.168.200.11", "spark-worker1": "192.168.200.12"}


def ray_output(*nodes: tuple[str, bool, float]) -> str:
    raw = [{"NodeManagerAddress": ip, "Alive": alive, "Resources": {"GPU": gpus, "CPU": 1.0}} for ip, alive, gpus in nodes]
    return json.dumps({"ray_version": "2.60.0", "python_version": "3.11.2", "nodes": raw})


def meminfo(available_mib: int, total_mib: int = 122_000) -> str:
    return f"MemTotal: {total_mib * 1024} kB\nMemFree: {available_mib * 1024} kB\nMemAvailable: {available_mib * 1024} kB\nCached: 2048 kB\n"


def settings(cache_dir: str, **kwargs: t.Any) -> GateSettings:
    raw = {
        "gates": ["cluster", "snapshot", "memory"],
        "repo_id": REPO_ID,
        "cache_dir": cache_dir,
        "ray_python": "/opt/sparkops/ray/bin/python",
        "ray_address": "192.168.200.11:6379",
        "expected_nodes": NODES,
        "gpus_per_node": 1,
        "cluster_timeout": 20,
        "min_available_mib": 90_000,
        "memory_timeout": 10,
        "interval": 2,
        **kwargs,
    }
    return GateSettings.from_dict(raw)


def test_every_gate_passes(tmp_path: Path) -> None:
    cache = build_cache(tmp_path)
    clock = FakeClock()
    calls: list[list[str]] = []

    def runner(argv: list[str]) -> tuple[int, str, str]:
        calls.append(argv)
        return 0, ray_output(("192.168.200.11", True, 1.0), ("192.168.200.12", True, 1.0)), ""

    results = run_gates(settings(str(cache.cache_dir)), runner=runner, read=lambda _path: meminfo(100_000), clock=clock.clock, sleep=clock.sleep)
    assert [(r.name, r.ok) for r in results] == [("cluster", True), ("snapshot", True), ("memory", True)]
    assert results[0].message == "2 node(s) alive with 2 GPU(s), every expected node joined"
    assert results[1].message == f"{REPO_ID} at {COMMIT} complete in {cache.cache_dir} (3 shard(s))"
    assert results[2].message == "100000 MiB available of 122000 (need 90000)"
    assert calls[0][0] == "/opt/sparkops/ray/bin/python" and json.loads(calls[0][-1])["address"] == "192.168.200.11:6379"
    assert clock.sleeps == []


def test_cluster_gate_waits_for_the_worker_then_passes(tmp_path: Path) -> None:
    cache = build_cache(tmp_path)
    clock = FakeClock()
    outputs = [
        (0, json.dumps({"ray_version": "2.60.0", "python_version": "3.11.2", "nodes": None, "connect_error": "GCS not ready"}), ""),
        (0, ray_output(("192.168.200.11", True, 1.0)), ""),
        (0, ray_output(("192.168.200.11", True, 1.0), ("192.168.200.12", True, 1.0)), ""),
    ]
    results = run_gates(
        settings(str(cache.cache_dir)), runner=lambda _argv: outputs.pop(0), read=lambda _p: meminfo(95_000), clock=clock.clock, sleep=clock.sleep
    )
    assert all(r.ok for r in results), results
    assert clock.sleeps == [2, 2] and results[0].seconds == 4


def test_cluster_gate_fails_at_its_deadline_naming_the_missing_node(tmp_path: Path) -> None:
    cache = build_cache(tmp_path)
    clock = FakeClock()
    results = run_gates(
        settings(str(cache.cache_dir)),
        runner=lambda _argv: (0, ray_output(("192.168.200.11", True, 1.0), ("192.168.200.12", False, 1.0)), ""),
        read=lambda _p: pytest.fail("no gate after a failed one"),
        clock=clock.clock,
        sleep=clock.sleep,
    )
    assert [(r.name, r.ok) for r in results] == [("cluster", False)]
    assert "spark-worker1 (192.168.200.12) is DEAD" in results[0].message
    assert results[0].seconds == 20
    assert results[0].line().startswith("gate cluster: FAILED after 20.0s: ")


def test_snapshot_gate_fails_on_a_missing_shard(tmp_path: Path) -> None:
    cache = build_cache(tmp_path, omit=["model-00002-of-00003.safetensors"])
    results = run_gates(settings(str(cache.cache_dir), gates=["snapshot", "memory"]), read=lambda _p: meminfo(95_000))
    assert [(r.name, r.ok) for r in results] == [("snapshot", False)]
    assert "model-00002-of-00003.safetensors is missing" in results[0].message


def test_the_snapshot_gate_checks_the_draft_model_too(tmp_path: Path) -> None:
    """The draft model vllm_serve_speculative names (draft_repo_id): complete, both named; missing or incomplete, the
    gate fails naming it and the variable."""
    cache = build_cache(tmp_path)
    build_cache(tmp_path, repo_id="org/drafter", shards=1)
    gate = settings(str(cache.cache_dir), gates=["snapshot"], draft_repo_id="org/drafter", draft_revision="main")
    (result,) = run_gates(gate)
    assert result.ok and result.message.endswith(f"; the draft model org/drafter at {COMMIT} complete (1 shard(s))"), result.message
    (result,) = run_gates(settings(str(cache.cache_dir), gates=["snapshot"], draft_repo_id="org/other-drafter"))
    assert not result.ok and result.message.startswith("the draft model (vllm_serve_speculative): "), result.message
    assert "org/other-drafter" in result.message, result.message
    (result,) = run_gates(settings(str(cache.cache_dir), gates=["snapshot"]))
    assert result.ok and "draft" not in result.message


def test_memory_gate_waits_for_memory_to_come_back_then_fails_at_its_deadline(tmp_path: Path) -> None:
    cache = build_cache(tmp_path)
    clock = FakeClock()
    readings = iter([meminfo(50_000), meminfo(80_000), meminfo(91_000)])
    results = run_gates(settings(str(cache.cache_dir), gates=["memory"]), read=lambda _p: next(readings), clock=clock.clock, sleep=clock.sleep)
    assert results[0].ok and results[0].seconds == 4
    clock = FakeClock()
    results = run_gates(settings(str(cache.cache_dir), gates=["memory"]), read=lambda _p: meminfo(60_000), clock=clock.clock, sleep=clock.sleep)
    assert not results[0].ok
    assert results[0].message.startswith("only 60000 MiB available of 122000 after 10s, need 90000 MiB (page cache 2 MiB)")
    assert results[0].seconds == 10


def test_memory_gate_names_an_unreadable_meminfo(tmp_path: Path) -> None:
    cache = build_cache(tmp_path)

    def unreadable(path: str) -> str:
        raise OSError(2, "No such file or directory")

    results = run_gates(settings(str(cache.cache_dir), gates=["memory"], meminfo_path="/nope"), read=unreadable)
    assert not results[0].ok and results[0].message == "cannot read /nope: [Errno 2] No such file or directory"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"gates": ["cluster", "disk"]}, "unknown gate(s) disk; known: cluster, snapshot, memory"),
        ({"repo_id": None}, "the gate settings lack 'repo_id'"),
        ({"min_available_mib": "lots"}, "bad gate settings: invalid literal for int()"),
    ],
)
def test_bad_settings(change: dict[str, t.Any], message: str) -> None:
    raw = {"gates": ["memory"], "repo_id": REPO_ID, "cache_dir": "/c", **change}
    raw = {k: v for k, v in raw.items() if v is not None}
    with pytest.raises(GateConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        GateSettings.from_dict(raw)


def test_main_prints_a_line_per_gate_and_exits_by_the_result(tmp_path: Path) -> None:
    cache = build_cache(tmp_path)
    config = tmp_path / "gate.json"
    config.write_text(json.dumps({"gates": ["snapshot"], "repo_id": REPO_ID, "cache_dir": str(cache.cache_dir)}))
    out = io.StringIO()
    assert main([str(config)], out) == 0
    assert out.getvalue().startswith("gate snapshot: ok after ") and out.getvalue().endswith(
        f"{REPO_ID} at {COMMIT} complete in {cache.cache_dir} (3 shard(s))\n"
    )
    config.write_text(json.dumps({"gates": ["snapshot"], "repo_id": "acme/absent", "cache_dir": str(cache.cache_dir)}))
    out = io.StringIO()
    assert main([str(config)], out) == 1
    assert "gate snapshot: FAILED" in out.getvalue() and "acme/absent" in out.getvalue()
    out = io.StringIO()
    assert main([str(tmp_path / "missing.json")], out) == 2 and "missing.json" in out.getvalue()
    assert main([], io.StringIO()) == 2


def test_without_a_size_the_memory_gate_needs_the_fraction_vllm_takes_of_memtotal(tmp_path: Path) -> None:
    clock = FakeClock()
    gate = settings(str(tmp_path), gates=["memory"], min_available_mib=None, min_available_fraction=0.8)
    passed = run_gates(gate, read=lambda _path: meminfo(100_000), clock=clock.clock, sleep=clock.sleep)
    assert [(r.ok, r.message) for r in passed] == [(True, "100000 MiB available of 122000 (need 97600)")]
    short = run_gates(gate, read=lambda _path: meminfo(97_599), clock=clock.clock, sleep=clock.sleep)
    assert not short[0].ok and "need 97600 MiB" in short[0].message


# --- Ray mode: the other nodes ---------------------------------------------------------------------------------------

HEAD_NODE = {"node_id": "h", "ip": "192.168.200.11", "hostname": "spark-head", "is_head": True, "gpus": 1.0}
WORKER_NODE = {"node_id": "w1", "ip": "192.168.200.12", "hostname": "spark-worker1", "is_head": False, "gpus": 1.0}


class FakeCluster:
    """The gate's runner: the cluster probe sees every node; the node task script runs the real node checks as each
    worker would (``worker_view`` changes the cache into what the worker holds, ``worker_memory`` is its meminfo)."""

    def __init__(
        self,
        clock: FakeClock,
        worker_memory: t.Sequence[int] = (100_000,),
        worker_view: t.Callable[[], t.Any] | None = None,
        workers: t.Sequence[dict[str, t.Any]] = (WORKER_NODE,),
        states: t.Mapping[str, str] | None = None,
        extra: t.Mapping[str, t.Any] | None = None,
    ) -> None:
        self.clock = clock
        self.memory = list(worker_memory)
        self.worker_view = worker_view
        self.workers = list(workers)
        self.states = dict(states or {})
        self.extra = dict(extra or {})
        self.node_args: list[dict[str, t.Any]] = []

    def read_memory(self, _path: str) -> str:
        return meminfo(self.memory.pop(0) if len(self.memory) > 1 else self.memory[0])

    def __call__(self, argv: list[str]) -> tuple[int, str, str]:
        if argv[2] != NODE_TASK_SCRIPT:
            return 0, ray_output(("192.168.200.11", True, 1.0), ("192.168.200.12", True, 1.0)), ""
        args = json.loads(argv[3])
        self.node_args.append(args)
        if self.worker_view is not None:
            self.worker_view()
        results = []
        for node in self.workers:
            state = self.states.get(node["node_id"], "done")
            value: dict[str, t.Any] = {}
            if "snapshot" in args["spec"]:
                value["snapshot"] = snapshot_facts(args["spec"]["snapshot"])
            if "memory" in args["spec"]:
                value["memory"] = memory_facts(args["spec"]["memory"], read=self.read_memory, clock=self.clock.clock, sleep=self.clock.sleep)
            result = {**node, "state": state}
            if state == "done":
                result["value"] = value
            elif state == "failed":
                result["error"] = "RayTaskError(ModuleNotFoundError): ModuleNotFoundError: No module named 'json'"
            results.append(result)
        output = {"ray_version": "2.60.0", "python_version": "3.11.2", "alive": [HEAD_NODE, *self.workers], "results": results, **self.extra}
        return 0, json.dumps(output), ""


def ray_settings(cache: HubCache, **kwargs: t.Any) -> GateSettings:
    return settings(str(cache.cache_dir), check_nodes=True, **kwargs)


def test_ray_mode_checks_the_other_node_at_the_head_path_and_commit_within_the_memory_deadline(tmp_path: Path) -> None:
    cache = build_cache(tmp_path)
    clock = FakeClock()
    cluster = FakeCluster(clock)
    head_memory = iter([meminfo(50_000), meminfo(80_000), meminfo(95_000)])
    results = run_gates(ray_settings(cache), runner=cluster, read=lambda _p: next(head_memory), clock=clock.clock, sleep=clock.sleep)
    assert [(r.name, r.ok) for r in results] == [("cluster", True), ("snapshot", True), ("memory", True), ("nodes", True)], results
    assert (
        results[3].message == f"spark-worker1 (192.168.200.12): snapshot complete at {cache.snapshot} (3 shard(s)), 100000 MiB available of 122000 (need 90000)"
    )
    args = cluster.node_args[0]
    assert args["spec"]["snapshot"] == {
        "repo_id": REPO_ID,
        "revision": "main",
        "commit": COMMIT,
        "path": str(cache.snapshot),
        "cache_dir": str(cache.cache_dir),
    }
    # The head waited 4 s of the 10 s memory timeout: the other nodes get what is left.
    assert args["spec"]["memory"] == {
        "min_available_mib": 90_000,
        "min_available_fraction": 0.0,
        "timeout": 6.0,
        "interval": 2.0,
        "meminfo_path": "/proc/meminfo",
    }
    assert args["timeout"] == 66.0 and args["deadline"] == 96.0
    assert args["address"] == "192.168.200.11:6379" and args["skip_head"] is True and args["include_ips"] == sorted(NODES.values())
    assert args["modules"] == list(SHIPPED_MODULES) and args["entry"] == "_node_checks:check_node"
    assert args["package"] == "ansible_collections.sparkops.inference.plugins.module_utils"
    assert all((Path(args["module_dir"]) / f"{name}.py").is_file() for name in SHIPPED_MODULES)


def test_a_worker_without_the_snapshot_fails_the_start_at_once_naming_it(tmp_path: Path) -> None:
    cache = build_cache(tmp_path)
    clock = FakeClock()
    cluster = FakeCluster(clock, worker_view=lambda: cache.snapshot.rename(tmp_path / "away"))
    results = run_gates(ray_settings(cache), runner=cluster, read=lambda _p: meminfo(100_000), clock=clock.clock, sleep=clock.sleep)
    assert [(r.name, r.ok) for r in results][-1] == ("nodes", False)
    assert results[-1].message == (
        f"spark-worker1 (192.168.200.12): the snapshot the head serves is missing: no {cache.snapshot} (commit {COMMIT}); snapshots there: none"
    )
    assert results[-1].line().startswith("gate nodes: FAILED after 0.0s: spark-worker1 (192.168.200.12): ")
    assert clock.sleeps == []


def test_a_worker_on_another_commit_fails(tmp_path: Path) -> None:
    cache = build_cache(tmp_path)
    clock = FakeClock()
    cluster = FakeCluster(clock, worker_view=lambda: (cache.repo_dir / "refs" / "main").write_text(OTHER_COMMIT))
    results = run_gates(ray_settings(cache), runner=cluster, read=lambda _p: meminfo(100_000), clock=clock.clock, sleep=clock.sleep)
    assert not results[-1].ok
    assert (
        results[-1].message
        == f"spark-worker1 (192.168.200.12): refs/main there points to commit {OTHER_COMMIT}, not {COMMIT} that the head serves from {cache.snapshot}"
    )


def test_a_worker_with_an_incomplete_snapshot_names_the_file(tmp_path: Path) -> None:
    cache = build_cache(tmp_path)
    clock = FakeClock()
    cluster = FakeCluster(clock, worker_view=lambda: cache.remove("model-00003-of-00003.safetensors"))
    results = run_gates(ray_settings(cache), runner=cluster, read=lambda _p: meminfo(100_000), clock=clock.clock, sleep=clock.sleep)
    assert not results[-1].ok
    assert results[-1].message.startswith(
        f"spark-worker1 (192.168.200.12): the snapshot at {cache.snapshot} is incomplete (quick check, 1 problem): model-00003-of-00003.safetensors is missing"
    )


def test_a_worker_short_of_memory_fails_at_the_shared_deadline(tmp_path: Path) -> None:
    cache = build_cache(tmp_path)
    clock = FakeClock()
    cluster = FakeCluster(clock, worker_memory=[50_000])
    results = run_gates(ray_settings(cache), runner=cluster, read=lambda _p: meminfo(100_000), clock=clock.clock, sleep=clock.sleep)
    assert [(r.name, r.ok) for r in results][-1] == ("nodes", False)
    assert results[-1].message == "spark-worker1 (192.168.200.12): memory: only 50000 MiB available of 122000 after 10s, need 90000 MiB (page cache 2 MiB)"
    assert results[-1].seconds == 10
    # The memory comes back in time: it passes.
    clock = FakeClock()
    cluster = FakeCluster(clock, worker_memory=[50_000, 60_000, 91_000])
    results = run_gates(ray_settings(cache), runner=cluster, read=lambda _p: meminfo(100_000), clock=clock.clock, sleep=clock.sleep)
    assert results[-1].ok and results[-1].seconds == 4


def test_every_failing_node_is_named_with_all_that_is_wrong(tmp_path: Path) -> None:
    cache = build_cache(tmp_path)
    clock = FakeClock()
    worker2 = {"node_id": "w2", "ip": "192.168.200.13", "hostname": "spark-worker2", "is_head": False, "gpus": 1.0}
    stranger = {"node_id": "x", "ip": "192.168.200.99", "hostname": "lab-pc", "is_head": False, "gpus": 1.0}
    cluster = FakeCluster(
        clock,
        worker_memory=[1_000],
        worker_view=lambda: cache.snapshot.rename(tmp_path / "away"),
        workers=[WORKER_NODE, worker2, stranger],
        states={"w2": "timeout"},
    )
    nodes = {**NODES, "spark-worker2": "192.168.200.13", "spark-worker3": "192.168.200.14"}
    results = run_gates(
        ray_settings(cache, gates=["snapshot", "memory"], expected_nodes=nodes),
        runner=cluster,
        read=lambda _p: meminfo(100_000),
        clock=clock.clock,
        sleep=clock.sleep,
    )
    problems = results[-1].message.split(" | ")
    assert problems == [
        f"spark-worker1 (192.168.200.12): the snapshot the head serves is missing: no {cache.snapshot} (commit {COMMIT}); snapshots there: none;"
        " memory: only 1000 MiB available of 122000 after 10s, need 90000 MiB (page cache 2 MiB)",
        "spark-worker2 (192.168.200.13): no answer from its check within 70s (Ray could not start a task there?)",
        f"lab-pc (192.168.200.99, not in the inventory): the snapshot the head serves is missing: no {cache.snapshot} (commit {COMMIT}); snapshots there: none;"
        " memory: only 1000 MiB available of 122000 after 10s, need 90000 MiB (page cache 2 MiB)",
        "spark-worker3 (192.168.200.14): not alive in the Ray cluster at 192.168.200.11:6379, not checked",
    ]


def test_a_check_that_raised_and_a_cluster_out_of_reach(tmp_path: Path) -> None:
    cache = build_cache(tmp_path)
    clock = FakeClock()
    results = run_gates(
        ray_settings(cache), runner=FakeCluster(clock, states={"w1": "failed"}), read=lambda _p: meminfo(100_000), clock=clock.clock, sleep=clock.sleep
    )
    assert (
        results[-1].message
        == "spark-worker1 (192.168.200.12): its check failed: RayTaskError(ModuleNotFoundError): ModuleNotFoundError: No module named 'json'"
    )
    cluster = FakeCluster(clock, extra={"connect_error": "ConnectionError: GCS gone"})
    results = run_gates(ray_settings(cache, gates=["snapshot"]), runner=cluster, read=lambda _p: meminfo(100_000), clock=clock.clock, sleep=clock.sleep)
    assert [(r.name, r.ok) for r in results] == [("snapshot", True), ("nodes", False)]
    assert results[-1].message == "cannot check the other nodes through the Ray cluster at 192.168.200.11:6379: ConnectionError: GCS gone"
    assert "memory" not in cluster.node_args[0]["spec"] and cluster.node_args[0]["timeout"] == 60.0

    def broken(argv: list[str]) -> tuple[int, str, str]:
        return 1, "", "Traceback (most recent call last):\nModuleNotFoundError: No module named 'ray'\n"

    results = run_gates(ray_settings(cache, gates=["memory"]), runner=broken, read=lambda _p: meminfo(100_000), clock=clock.clock, sleep=clock.sleep)
    assert (
        results[-1].message == "cannot check the other nodes: ray is not importable by /opt/sparkops/ray/bin/python: ModuleNotFoundError: No module named 'ray'"
    )


def test_a_single_node_cluster_has_no_other_node_to_check(tmp_path: Path) -> None:
    cache = build_cache(tmp_path)
    clock = FakeClock()
    cluster = FakeCluster(clock, workers=[])
    results = run_gates(
        ray_settings(cache, gates=["snapshot", "memory"], expected_nodes={"spark-head": "192.168.200.11"}),
        runner=cluster,
        read=lambda _p: meminfo(100_000),
        clock=clock.clock,
        sleep=clock.sleep,
    )
    assert results[-1].name == "nodes" and results[-1].ok and results[-1].message == "no other node in the Ray cluster"


def test_mp_mode_and_gates_without_snapshot_or_memory_check_no_other_node(tmp_path: Path) -> None:
    cache = build_cache(tmp_path)
    clock = FakeClock()
    cluster = FakeCluster(clock)
    results = run_gates(settings(str(cache.cache_dir)), runner=cluster, read=lambda _p: meminfo(100_000), clock=clock.clock, sleep=clock.sleep)
    assert [r.name for r in results] == ["cluster", "snapshot", "memory"]
    results = run_gates(ray_settings(cache, gates=["cluster"]), runner=cluster, clock=clock.clock, sleep=clock.sleep)
    assert [r.name for r in results] == ["cluster"]
    assert cluster.node_args == []
    # A failed gate on the head stops there: the other nodes are not asked.
    results = run_gates(ray_settings(cache), runner=cluster, read=lambda _p: meminfo(1_000), clock=clock.clock, sleep=clock.sleep)
    assert [(r.name, r.ok) for r in results] == [("cluster", True), ("snapshot", True), ("memory", False)] and cluster.node_args == []


def test_settings_read_check_nodes() -> None:
    raw = {"gates": ["memory"], "repo_id": REPO_ID, "cache_dir": "/c"}
    assert GateSettings.from_dict(raw).check_nodes is False
    parsed = GateSettings.from_dict({**raw, "check_nodes": True, "nodes_timeout": 30})
    assert parsed.check_nodes is True and parsed.nodes_timeout == 30.0


def test_the_role_installs_every_module_util_the_gate_imports() -> None:
    """The gate runs from /opt/sparkops/lib with the files vars/main.yml lists: a missing one fails every start."""
    utils = Path(__file__).resolve().parents[4] / "plugins" / "module_utils"
    role_vars = yaml.safe_load((utils.parents[1] / "roles" / "vllm_serve" / "vars" / "main.yml").read_text(encoding="utf-8"))
    needed: set[str] = set()
    todo = ["_serve_gate"]
    while todo:
        name = todo.pop()
        if name in needed:
            continue
        needed.add(name)
        for from_module, imported in re.findall(r"plugins\.module_utils(?:\.(_\w+) import| import (_\w+))", (utils / f"{name}.py").read_text(encoding="utf-8")):
            todo.append(from_module or imported)
    assert "_node_checks" in needed
    # The lib may hold more (other commands the role installs run from it too).
    assert sorted(f"{name}.py" for name in needed if f"{name}.py" not in role_vars["__vllm_serve_gate_utils"]) == []


# --- hostile model files and settings (issue 15): the gate fails with a line naming what is wrong, never a traceback ---


@pytest.mark.parametrize(
    ("shard", "reason"),
    [
        (HUGE_DIMS_SHARD, "bad safetensors file: tensor 'w': shape holds 1000000000000000000000000000000, more than 64 bits hold"),
        (DEEP_SHARD, "bad safetensors file: the header is nested too deeply"),
        (SLOW_SHARD, "bad safetensors file: tensor 'w': shape holds 1000000000000000000000000000000, more than 64 bits hold"),
    ],
    ids=["dims-10e30", "deep-100000", "2.6MB-of-dims"],
)
def test_the_snapshot_gate_fails_on_a_hostile_shard_naming_it(tmp_path: Path, shard: bytes, reason: str) -> None:
    files = model_files(tmp_path / "staging")
    files[shard_name(2, 3)] = shard
    cache = build_cache(tmp_path, files=files)
    start = time.monotonic()
    results = run_gates(settings(str(cache.cache_dir), gates=["snapshot", "memory"]), read=lambda _p: meminfo(95_000))
    assert time.monotonic() - start < 2.0
    assert [(r.name, r.ok) for r in results] == [("snapshot", False)]
    assert f"{shard_name(2, 3)}: {reason}" in results[0].message


def test_the_snapshot_gate_fails_on_a_hostile_config_naming_it(tmp_path: Path) -> None:
    files = model_files(tmp_path / "staging")
    files["config.json"] = DEEP_CONFIG
    results = run_gates(settings(str(build_cache(tmp_path, files=files).cache_dir), gates=["snapshot"]))
    assert [(r.name, r.ok) for r in results] == [("snapshot", False)]
    assert "config.json: not a readable JSON file: nested more than 64 levels deep" in results[0].message


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('"min_available_mib": 1e400', "bad gate settings: cannot convert float infinity to integer"),  # OverflowError
        ('"memory_timeout": Infinity', "bad gate settings: memory_timeout is inf, not a finite number"),  # waited forever
        ('"interval": NaN', "bad gate settings: interval is nan, not a finite number"),  # time.sleep(nan) raised ValueError
        ('"min_available_fraction": -Infinity', "bad gate settings: min_available_fraction is -inf, not a finite number"),
        ('"expected_nodes": ' + "[" * 100_000 + "]" * 100_000, "maximum recursion depth exceeded"),  # RecursionError
    ],
    ids=["1e400", "Infinity", "NaN", "-Infinity", "deep-100000"],
)
def test_main_refuses_hostile_settings_with_status_2(tmp_path: Path, text: str, message: str) -> None:
    config = tmp_path / "gate.json"
    config.write_text('{"gates": ["memory"], "repo_id": "acme/m", "cache_dir": "/c", ' + text + "}")
    out = io.StringIO()
    assert main([str(config)], out) == 2
    assert out.getvalue().startswith(f"gate settings {config}: ") and message in out.getvalue()
    assert len(out.getvalue()) < 300
