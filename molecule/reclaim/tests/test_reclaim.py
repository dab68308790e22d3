"""GPU memory reclaimed by gpu_reclaim on the lab: the old stack stays gone after a reboot, the rest survives."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
import typing as t
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(os.environ["RECLAIM_LAB_PROJECT"]) / "tests" / "lab"))
from sparklab.scenario import node, playbook, recap  # noqa: E402

HEAD = os.environ["RECLAIM_LAB_HEAD"]
WORKER = os.environ["RECLAIM_LAB_WORKER"]
OLD_UNITS = {
    HEAD: ["vllm-cluster", "vllm-embeddings", "vllm-reranker", "vllm-proxy"],
    WORKER: ["vllm-worker"],
}
APPS = "/usr/local/bin/nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv,noheader,nounits"


def gpu_apps(host: t.Any) -> list[str]:
    return [line for line in host.check_output(APPS).splitlines() if line.strip()]


def run_site(*args: str) -> subprocess.CompletedProcess[str]:
    return playbook("site.yml", "--tags", "reclaim", *args)


def flat(run: subprocess.CompletedProcess[str]) -> str:
    """Both streams (Ansible may print a failure on either), whitespace collapsed."""
    return " ".join((run.stdout + run.stderr).split())


def wait_for_apps(host: t.Any, count: int) -> list[str]:
    deadline = time.monotonic() + 30
    while True:
        apps = gpu_apps(host)
        if len(apps) >= count or time.monotonic() > deadline:
            return apps
        time.sleep(0.5)


@pytest.mark.parametrize("name", [HEAD, WORKER])
def test_old_units_inactive_and_disabled_after_reboot(name: str) -> None:
    host = node(name)
    for unit in OLD_UNITS[name]:
        service = host.service(unit)
        assert not service.is_running, f"{unit} came back on {name}"
        assert not service.is_enabled, f"{unit} is still enabled on {name}"
        assert host.file(f"/etc/systemd/system/{unit}.service").exists  # disabled, not deleted


@pytest.mark.parametrize("name", [HEAD, WORKER])
def test_unrelated_service_survived(name: str) -> None:
    service = node(name).service("lab-metrics")
    assert service.is_enabled and service.is_running


@pytest.mark.parametrize("name", [HEAD, WORKER])
def test_no_gpu_consumer_left(name: str) -> None:
    assert gpu_apps(node(name)) == []


def test_old_containers_removed_unrelated_container_kept() -> None:
    names = node(HEAD).check_output("/usr/local/bin/docker ps -a --format '{{.Names}}'").split()
    assert "node_exporter" in names
    assert not {"vllm_node", "vllm_embeddings", "reranker"} & set(names), names


def test_second_run_changes_nothing() -> None:
    run = run_site()
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    stats = recap(run)
    assert set(stats) == {HEAD, WORKER}, run.stdout[-2000:]
    assert all(s["changed"] == 0 and s["failed"] == 0 for s in stats.values()), stats


def test_check_mode_lists_the_plan_and_changes_nothing() -> None:
    head = node(HEAD)
    head.check_output("systemctl enable --now vllm-cluster")
    try:
        assert len(wait_for_apps(head, 1)) == 1
        run = run_site("--check", "--diff")
        assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
        output = flat(run)
        assert "would stop and disable: vllm-cluster.service" in output, output[-3000:]
        assert "would remove containers: vllm_node" in output, output[-3000:]
        assert head.service("vllm-cluster").is_running and head.service("vllm-cluster").is_enabled
        assert len(gpu_apps(head)) == 1
    finally:
        run = run_site("--limit", HEAD)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    assert not head.service("vllm-cluster").is_running and not head.service("vllm-cluster").is_enabled
    assert gpu_apps(head) == []


def test_stale_ray_worker_outside_any_unit_is_ended() -> None:
    worker = node(WORKER)
    # Through podman exec, not node()'s ssh: a process started in an ssh session would belong to ssh.service here (the
    # lab has no logind to give it a session scope), and the role would rightly refuse it (as prepare.yml's).
    holder = "nohup setsid /usr/local/bin/gpu-holder --mib 32 --title ray::RayWorkerWrapper >/dev/null 2>&1 &"
    subprocess.run(["podman", "exec", WORKER, "sh", "-c", holder], check=True)
    apps = wait_for_apps(worker, 1)
    assert len(apps) == 1 and "ray::RayWorkerWrapper" in apps[0], apps
    run = run_site("--limit", WORKER)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    assert gpu_apps(worker) == []
    assert recap(run)[WORKER]["changed"] >= 1


def test_unknown_consumer_fails_naming_it_and_changes_nothing() -> None:
    head = node(HEAD)
    head.check_output("systemd-run --unit mystery-trainer /usr/local/bin/gpu-holder --mib 48 --title trainer.py")
    try:
        apps = wait_for_apps(head, 1)
        assert len(apps) == 1, apps
        pid = apps[0].split(",")[0].strip()
        run = run_site("--limit", HEAD)
        assert run.returncode != 0, run.stdout[-3000:]
        output = flat(run)
        assert f"host {HEAD}: GPU memory is held by process(es) that no gpu_reclaim setting covers" in output, output[-3000:]
        assert re.search(rf"{pid}\s+48\s+trainer\.py\s+unit mystery-trainer\.service", run.stdout + run.stderr), output[-3000:]
        assert head.service("mystery-trainer").is_running  # refused before anything was changed
        assert head.service("lab-metrics").is_running
    finally:
        head.run("systemctl stop mystery-trainer")


def test_memory_below_threshold_fails_with_what_holds_it() -> None:
    run = run_site("--limit", WORKER, "-e", "gpu_reclaim_min_available_fraction=0.999", "-e", "gpu_reclaim_settle_timeout=4")
    assert run.returncode != 0, run.stdout[-3000:]
    output = flat(run)
    assert f"host {WORKER}: GPU memory is not free: MemAvailable (unified memory) is" in output, output[-3000:]
    assert "below the required" in output and "Largest memory holders:" in output, output[-3000:]
