"""The real vLLM in Ray mode (vllm_serve_backend: ray), as AWX's Deploy left it (tests/test_deploy_via_awx.py) and the
reboot brought it back: vLLM's Ray executor with a RayWorkerProc on each node, benchmarked against the engine's own
record, recovering from a killed RayWorkerProc, raylet and engine with no Ansible run; then switched to the mp backend
by the variable and back, with the real engine both ways.

vLLM's CPU platform refuses Ray; the lab's engine wheelhouse gives the engine a platform plugin that allows it
(tests/lab/cpu_ray_platform, required by the lab's relabelled vllm wheels, nothing of the collection names it): the
CPU platform with Ray's "GPU" key, and a communicator that keeps shared memory to ranks on one host. Each lab node's
Ray declares one GPU (the nvidia-smi stand-in's), so RayExecutorV2's placement group puts rank 0's RayWorkerProc on
the head and rank 1's on the worker: the same TP=2 across nodes as mp, over gloo on the fabric.

What the real engine does when Ray loses a piece (vLLM 0.32.0 wheel, vllm/v1/executor/ray_executor_v2.py:502-531):
its RayWorkerMonitor thread waits on every worker's run() reference; one that ends means the actor died: it logs
"RayWorkerProc rank=[N] died unexpectedly, shutting down executor", shuts the executor down and calls the engine's
failure callback, the API server gets EngineDeadError and exits 0 (no hang). The unit's Restart=always starts it
again, its cluster gate waits for every Ray node (the worker's Ray unit restarts itself when its raylet was killed),
and it serves again with no Ansible run. Each recovery is timed into tests/output/ci/engine-recovery.json, beside the
engine scenario's mp figures (bench/backends.py compares them).

The Ray driver (vLLM on the head) joins with Ray's token authentication on: the unit reads ray_cluster's ray.env
(RAY_AUTH_MODE=token and the token's path, never the token)."""

from __future__ import annotations

import functools
import json
import os
import sys
import time
import typing as t
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from ray_engine import HEAD, TIMINGS, UNIT, WORKER, main_pid, record, serves, unit, wait_not_serving, wait_serving

sys.path.insert(0, str(Path(os.environ["RAY_LAB_PROJECT"]) / "tests" / "lab"))
from sparklab import engine_record  # noqa: E402
from sparklab.scenario import installed_vllm, node, playbook, recap, tail  # noqa: E402

MP = ("-e", "vllm_serve_backend=mp")  # the scenario's inventory says ray
RAY_UNITS = {HEAD: "sparkops-ray-head", WORKER: "sparkops-ray-worker"}
WORKER_PROC = "^ray::RayWorkerProc"  # the process title Ray gives vLLM's worker actor
RAY_LOGS = "/var/lib/sparkops/tmp/ray/session_latest/logs"  # ray_cluster's --temp-dir: each worker process's output
# The Ray figures of playbooks/benchmark.yml (mp's are the engine scenario's engine-benchmark.json).
RAY_FIGURES = TIMINGS.with_name("engine-benchmark-ray.json")
HEAD_MGMT_IP = os.environ["RAY_LAB_HEAD_MGMT_IP"]
WORKER_IP = os.environ["SERVE_LAB_WORKER_FABRIC_IP"]
API_KEY = os.environ["SERVE_LAB_API_KEY"]
LEVELS = (1, 2)


def journal_since(since: str) -> str:
    return str(node(HEAD).check_output(f"journalctl -u {UNIT} --since '{since}' --no-pager -o cat"))


def head_time() -> str:
    return str(node(HEAD).check_output("date '+%Y-%m-%d %H:%M:%S'"))


def maps_vllm_extension(name: str, pid: int | str) -> bool:
    """The process has vLLM's compiled extension (vllm/_C*.so) mapped: the real engine, not a stand-in."""
    return node(name).run(f"grep -q '/vllm/_C[^/]*[.]so' /proc/{pid}/maps").rc == 0


def worker_proc() -> str:
    return str(node(WORKER).check_output(f"pgrep -f '{WORKER_PROC}'"))


def restarted(before: int, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while int(unit(HEAD, "NRestarts")) == before and time.monotonic() < deadline:
        time.sleep(1)
    assert int(unit(HEAD, "NRestarts")) > before, "the head's vLLM unit did not restart"


def test_the_real_engine_serves_through_ray_s_executor_across_both_nodes() -> None:
    wait_serving(600)  # back from side_effect's reboot
    head, worker = node(HEAD), node(WORKER)
    # vLLM runs on the head only, after its Ray head; the worker's rank unit is gone, its Ray worker runs.
    assert head.service(UNIT).is_enabled and head.service(UNIT).is_running
    assert not worker.file(f"/etc/systemd/system/{UNIT}.service").exists
    for name, ray_unit in RAY_UNITS.items():
        assert node(name).service(ray_unit).is_enabled and node(name).service(ray_unit).is_running, name
    args = head.check_output(f"cat /proc/{main_pid(HEAD)}/cmdline | tr '\\0' ' '")
    assert "--distributed-executor-backend ray" in args and "--tensor-parallel-size 2" in args, args
    assert "--nnodes" not in args and "sparkops-vllm-rank" not in args, args
    assert installed_vllm(HEAD) == installed_vllm(WORKER) == "0.32.0+cpu"
    # The real engine on both nodes: the API server and rank 1's Ray worker actor (on the worker) map vLLM's extension.
    assert maps_vllm_extension(HEAD, main_pid(HEAD))
    actor = worker_proc()
    assert maps_vllm_extension(WORKER, actor), worker.check_output("ps -eo pid,args")
    # The platform vLLM resolves in the engine's venv: the lab's plugin, CPU with Ray's "GPU" key (0.32 logs nothing of it).
    platform = "from vllm.platforms import current_platform as p; print(type(p).__module__, type(p).__name__, p.ray_device_key)"
    assert head.check_output(f'/opt/sparkops/ray/bin/python -c "{platform}" 2>/dev/null') == "sparklab_cpu_ray.platform CpuRayPlatform GPU"
    log = head.check_output(f"journalctl _SYSTEMD_INVOCATION_ID={unit(HEAD, 'InvocationID')} --no-pager --output cat")
    # Rank 1 on the worker, its group over gloo: what the actor wrote to its own Ray log there (the head's journal gets
    # the workers' lines too, but Ray folds lines that differ only in numbers: "[repeated 2x across cluster]").
    said = worker.check_output(f"cat {RAY_LOGS}/worker-*-{actor}.*")
    assert "world_size=2 rank=1" in said and "CPU SHM communicator disabled for group tp:0" in said, said[-3000:]
    # The driver joins with Ray's token authentication: the mode and the token's path from ray.env, not the token.
    assert "EnvironmentFile=/etc/sparkops/ray.env" in head.file(f"/etc/systemd/system/{UNIT}.service").content_string
    assert "RAY_AUTH_MODE=token" in head.file("/etc/sparkops/ray.env").content_string
    token = head.file("/etc/sparkops/private/ray-auth-token").content_string.strip()
    assert token and token not in head.check_output("ps -eo args") and token not in log


@pytest.mark.usefixtures("no_liveness_probe")
def test_the_benchmark_in_ray_mode_agrees_with_the_engine_s_own_record(tmp_path: Path) -> None:
    """playbooks/benchmark.yml at 1 and 2 in flight against the engine in Ray mode, each level checked against what the
    engine recorded of the same requests (its /metrics), as test_engine_benchmark.py checks mp; the figures are what
    bench/backends.py compares with mp's."""
    with ThreadPoolExecutor(max_workers=max(LEVELS)) as pool:  # the first batches of a new shape are slow: not counted
        assert all(pool.map(lambda _: serves(), range(2 * max(LEVELS))))
    runs: dict[str, dict[str, t.Any]] = {}
    problems: list[str] = []
    for level in LEVELS:
        # As the README runs it: from the controller, the endpoint the default (the head's management address).
        run = functools.partial(engine_record.benchmark_level, HEAD_MGMT_IP, API_KEY, tmp_path / f"c{level}", level, RAY_FIGURES)
        mine = engine_record.measured(HEAD, run, level)
        problems += engine_record.against_engine(f"ours at {level} in flight", *mine)
        runs[str(level)] = {"ours": mine[0], "engine_during_ours": mine[1]}
    RAY_FIGURES.write_text(json.dumps({"backend": "ray", "levels": runs}, indent=2, default=str) + "\n")
    assert not problems, (problems, runs)


def test_ray_engine_start() -> None:
    """The baseline of the Ray figures: the head's vLLM stopped, then started (the Ray cluster stays up)."""
    node(HEAD).check_output(f"systemctl stop {UNIT}")
    start = time.monotonic()
    node(HEAD).check_output(f"systemctl start {UNIT}")
    record("ray_engine_start_s", wait_serving(600, since=start))


def test_a_killed_ray_worker_proc_ends_vllm_cleanly_and_it_serves_again_with_no_ansible_run() -> None:
    restarts, since = int(unit(HEAD, "NRestarts")), head_time()
    start = time.monotonic()
    node(WORKER).check_output(f"kill -KILL {worker_proc()}")
    restarted(restarts)
    record("ray_worker_proc_killed_to_serving_s", wait_serving(600, since=start))
    log = journal_since(since)
    assert "RayWorkerProc rank=[1] died unexpectedly, shutting down executor." in log, log[-3000:]
    assert "EngineDeadError" in log and "Main process exited" not in log, log[-3000:]  # vLLM exits 0
    assert maps_vllm_extension(WORKER, worker_proc())  # a new actor on the worker


@pytest.mark.usefixtures("no_liveness_probe")
def test_the_worker_s_raylet_killed_ray_and_vllm_come_back_with_no_ansible_run() -> None:
    """SIGKILL of every process of the worker's Ray unit (raylet, its workers, the actor): the unit restarts itself
    (Restart=on-failure), vLLM on the head loses its actor, exits, and its cluster gate waits for the worker again.
    The liveness probe is held: a restart of its own (test_liveness.py's subject) is not what this test looks at."""
    restarts, since = int(unit(HEAD, "NRestarts")), head_time()
    ray_starts = int(node(WORKER).check_output(f"systemctl show --property NRestarts --value {RAY_UNITS[WORKER]}"))
    start = time.monotonic()
    node(WORKER).check_output(f"systemctl kill --signal SIGKILL {RAY_UNITS[WORKER]}")
    restarted(restarts)
    record("ray_raylet_killed_to_serving_s", wait_serving(600, since=start))
    assert int(node(WORKER).check_output(f"systemctl show --property NRestarts --value {RAY_UNITS[WORKER]}")) > ray_starts
    log = journal_since(since)
    # Idle, the RayWorkerMonitor sees the actor's end first; with a request in flight (a probe, a client), rank 0's
    # gloo collective loses its peer first ("Connection closed by peer [worker]") and the EngineCore dies of it
    # (0.32.0 vllm/v1/engine/core.py:1496-1512): EngineDeadError and the same clean exit either way.
    monitor = "died unexpectedly, shutting down executor." in log
    # gloo words the lost peer two ways (third_party/gloo/gloo/transport/tcp/pair.cc): "Connection closed by peer
    # [<ip>]:<port>" and "Read error [<ip>]:<port>: Connection reset by peer"; both seen in the lab.
    lost = f"Connection closed by peer [{WORKER_IP}]" in log or (f"[{WORKER_IP}]" in log and "Connection reset by peer" in log)
    collective = lost and "EngineCore encountered a fatal error" in log
    said = "\n".join(line for line in log.splitlines() if any(word in line for word in ("died", "Error", "error", "gate ", "Stopped", "Started")))
    assert (monitor or collective) and "EngineDeadError" in log and "gate cluster: ok" in log, said[-6000:]


def test_the_head_s_engine_killed_serving_again_with_no_ansible_run() -> None:
    restarts = int(unit(HEAD, "NRestarts"))
    engine = node(HEAD).check_output(f"pgrep --parent {main_pid(HEAD)} --full '^VLLM::EngineCore'")
    start = time.monotonic()
    node(HEAD).check_output(f"kill -KILL {engine}")
    wait_not_serving(60)
    record("ray_engine_killed_to_serving_s", wait_serving(600, since=start))
    assert int(unit(HEAD, "NRestarts")) > restarts


def test_switched_to_mp_the_ray_units_go_and_both_ranks_serve_a_rerun_changes_nothing() -> None:
    """The backend changed by the variable on a running cluster (tag-scoped, as an operator reruns): Ray's units
    stopped, disabled and removed, a rank unit on every node, serving; a rerun changes nothing."""
    switched = playbook("site.yml", "--tags", "ray,serve", *MP)
    assert switched.returncode == 0, tail(switched)
    assert "stopped, disabled and removed" in switched.stdout, tail(switched)
    assert serves()
    for name, ray_unit in RAY_UNITS.items():
        host = node(name)
        assert not host.file(f"/etc/systemd/system/{ray_unit}.service").exists, name
        assert not host.file(f"/etc/systemd/system/multi-user.target.wants/{ray_unit}.service").exists, name
        assert not host.run("pgrep -f 'gcs_server|raylet|RayWorkerProc'").stdout.strip(), name
        assert not host.file("/etc/sparkops/ray.env").exists, name
        assert host.service(UNIT).is_enabled and host.service(UNIT).is_running, name
        assert host.file("/opt/sparkops/ray/bin/vllm").exists, name  # the venv stays: vLLM runs from it
    worker_args = node(WORKER).check_output(f"cat /proc/{main_pid(WORKER)}/cmdline | tr '\\0' ' '")
    assert "--distributed-executor-backend mp --nnodes 2 --node-rank 1" in worker_args and "--headless" in worker_args, worker_args
    again = playbook("site.yml", "--tags", "ray,serve", *MP)
    assert again.returncode == 0 and {counts["changed"] for counts in recap(again).values()} == {0}, tail(again)


def test_switched_back_to_ray_the_worker_s_rank_unit_goes_and_ray_serves_a_rerun_changes_nothing() -> None:
    """And back by the inventory's own value: the worker's rank unit stopped, disabled and removed, Ray's units on
    every node, vLLM on the head through Ray's executor again; a rerun changes nothing."""
    switched = playbook("site.yml", "--tags", "ray,serve")
    assert switched.returncode == 0, tail(switched)
    assert serves()
    worker = node(WORKER)
    assert not worker.file(f"/etc/systemd/system/{UNIT}.service").exists
    assert not worker.file(f"/etc/systemd/system/multi-user.target.wants/{UNIT}.service").exists
    assert not worker.run("pgrep -f 'vllm serve'").stdout.strip()
    for name, ray_unit in RAY_UNITS.items():
        assert node(name).service(ray_unit).is_enabled and node(name).service(ray_unit).is_running, name
    args = node(HEAD).check_output(f"cat /proc/{main_pid(HEAD)}/cmdline | tr '\\0' ' '")
    assert "--distributed-executor-backend ray" in args and "--nnodes" not in args, args
    assert maps_vllm_extension(WORKER, worker_proc())
    again = playbook("site.yml", "--tags", "ray,serve")
    assert again.returncode == 0 and {counts["changed"] for counts in recap(again).values()} == {0}, tail(again)
