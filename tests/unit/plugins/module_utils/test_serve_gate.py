# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests for _serve_gate: the vLLM unit's start gates, on a fake Ray probe, real hub caches and meminfo texts."""

from __future__ import annotations

import io
import json
import typing as t
from pathlib import Path

import pytest
from ansible_collections.sparkops.inference.plugins.module_utils._serve_gate import GateConfigError, GateSettings, main, run_gates
from ansible_collections.sparkops.inference.tests.unit.plugins.module_utils.hf_cache_factory import COMMIT, REPO_ID, build_cache
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
