"""The real vLLM engine (CPU build of 0.30.0) served by site.yml in mp mode, TP=2 across head and worker, and brought
back with no Ansible run whatever ends it: its engine killed, the worker's rank killed, rank 0 restarted alone, both
nodes rebooted (side_effect). Each recovery is timed against the engine's own start; the times go to
tests/output/ci/engine-recovery.json (bench/engine_recovery.py writes them to docs/benchmarks.md)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
import typing as t
from pathlib import Path

import openai
import pytest
import requests
import testinfra

HEAD = os.environ["ENGINE_LAB_HEAD"]
WORKER = os.environ["ENGINE_LAB_WORKER"]
HEAD_IP = os.environ["ENGINE_LAB_HEAD_FABRIC_IP"]
HEAD_MGMT_IP = os.environ["ENGINE_LAB_HEAD_MGMT_IP"]
PROJECT = os.environ["ENGINE_LAB_PROJECT"]
API_KEY = os.environ["ENGINE_LAB_API_KEY"]
MODEL = os.environ["ENGINE_LAB_MODEL"]
UNIT = "sparkops-vllm"
BASE = f"http://{HEAD_MGMT_IP}:8000"
TIMINGS = Path(os.environ.get("SPARKOPS_JUNIT_DIR", "/tmp")) / "engine-recovery.json"


def node(name: str) -> t.Any:
    return testinfra.get_host(f"podman://{name}")


def ansible(*args: str, command: str = "ansible-playbook") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [command, "-i", os.environ["MOLECULE_INVENTORY_FILE"], *args],
        cwd=PROJECT,
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "ANSIBLE_COLLECTIONS_PATH": f"{PROJECT}/.collections", "ANSIBLE_FORCE_COLOR": "0"},
    )


def recap(run: subprocess.CompletedProcess[str]) -> dict[str, dict[str, int]]:
    return {host: {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", counts)} for host, counts in re.findall(r"^(\S+)\s+:\s+(ok=.*)$", run.stdout, re.MULTILINE)}


def unit(name: str, prop: str) -> str:
    return str(node(name).check_output(f"systemctl show --property {prop} --value {UNIT}"))


def serves() -> bool:
    """A completion from the head's API (what a user gets), not only an open port."""
    try:
        reply = requests.post(
            f"{BASE}/v1/chat/completions",
            headers={"Authorization": f"Bearer {API_KEY}"},
            json={"model": MODEL, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 2},
            timeout=20,
        )
        return reply.status_code == 200 and reply.json()["usage"]["completion_tokens"] > 0
    except (requests.RequestException, ValueError, KeyError):
        return False


def wait_serving(timeout: float, since: float | None = None) -> float:
    """Seconds from ``since`` (default: now) until a completion succeeds; fail after ``timeout``."""
    start = time.monotonic() if since is None else since
    while time.monotonic() - start < timeout:
        if serves():
            return time.monotonic() - start
        time.sleep(0.5)
    head_journal = node(HEAD).run(f"journalctl -u {UNIT} -n 60 --no-pager -o cat").stdout
    worker_journal = node(WORKER).run(f"journalctl -u {UNIT} -n 30 --no-pager -o cat").stdout
    raise AssertionError(f"not serving {timeout} s after the event\nhead:\n{head_journal}\nworker:\n{worker_journal}")


def wait_not_serving(timeout: float) -> None:
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        if not serves():
            return
        time.sleep(0.2)
    raise AssertionError(f"still serving {timeout} s after the event")


def record(name: str, seconds: float) -> None:
    timings = json.loads(TIMINGS.read_text()) if TIMINGS.is_file() else {}
    timings[name] = round(seconds, 1)
    TIMINGS.write_text(json.dumps(timings, indent=2) + "\n")


def main_pid(name: str) -> int:
    return int(unit(name, "MainPID"))


def test_both_ranks_serve_after_the_reboot_with_no_ansible_run() -> None:
    """side_effect rebooted both nodes: the ranks met again and serve, through their gates."""
    record("reboot_to_serving_s", wait_serving(600))
    head, worker = node(HEAD), node(WORKER)
    assert head.service(UNIT).is_enabled and worker.service(UNIT).is_enabled
    head_args = head.check_output(f"cat /proc/{main_pid(HEAD)}/cmdline | tr '\\0' ' '")
    worker_args = worker.check_output(f"cat /proc/{main_pid(WORKER)}/cmdline | tr '\\0' ' '")
    assert "sparkops-vllm-rank /etc/sparkops/vllm-group.json -- /opt/sparkops/ray/bin/vllm serve" in head_args, head_args
    assert f"--distributed-executor-backend mp --nnodes 2 --node-rank 0 --master-addr {HEAD_IP}" in head_args, head_args
    assert "--node-rank 1" in worker_args and "--headless" in worker_args and "--headless" not in head_args, worker_args
    # The real engine, installed by the role as `vllm` (the CPU build is versioned 0.30.0+cpu, as vLLM's own are).
    assert worker.run("/opt/sparkops/ray/bin/python -c 'import importlib.metadata as m; print(m.version(\"vllm\"))'").stdout.strip() == "0.30.0+cpu"
    journal = head.check_output(f"journalctl _SYSTEMD_INVOCATION_ID={unit(HEAD, 'InvocationID')} --no-pager --output cat")
    assert "gate snapshot: ok" in journal and "gate memory: ok" in journal, journal[-3000:]
    assert "every headless rank answers; starting vLLM" in journal, journal[-3000:]


def test_the_engine_start_time() -> None:
    """The baseline of the recovery times: the group stopped, then started as the role's handler does."""
    for name in (HEAD, WORKER):
        node(name).check_output(f"systemctl stop {UNIT}")
    start = time.monotonic()
    for name in (HEAD, WORKER):
        node(name).check_output(f"systemctl start {UNIT}")
    record("engine_start_s", wait_serving(600, since=start))


def test_a_completion_with_the_reasoning_apart_and_a_wrong_key_refused() -> None:
    client = openai.OpenAI(base_url=f"{BASE}/v1", api_key=API_KEY, timeout=60)
    reply = client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "Say hello."}], max_tokens=32)
    assert reply.usage is not None and reply.usage.completion_tokens > 0
    message = reply.choices[0].message.model_dump()
    # --reasoning-parser qwen3 (0.30: `reasoning`, not `reasoning_content`): the thinking is apart from the answer.
    assert "reasoning" in message and "reasoning_content" not in message, message
    assert message["reasoning"] or message["content"], message
    with pytest.raises(openai.AuthenticationError):
        openai.OpenAI(base_url=f"{BASE}/v1", api_key="wrong", timeout=30).models.list()
    wrong = requests.get(f"{BASE}/v1/models", headers={"Authorization": "Bearer wrong"}, timeout=10)
    assert wrong.status_code == 401 and wrong.json() == {"error": "Unauthorized"}


def test_the_module_reports_ready() -> None:
    args = {"url": f"http://{HEAD_IP}:8000", "model": MODEL, "api_key": API_KEY, "timeout": 60, "interval": 1, "fail_on_timeout": False}
    run = ansible(HEAD, "-m", "sparkops.inference.openai_endpoint", "-a", json.dumps(args), command="ansible")
    assert " => " in run.stdout, run.stdout + run.stderr
    result = json.loads(run.stdout.split(" => ", 1)[1])
    assert result["ready"] and result["state"] == "ready" and result["usage"]["completion_tokens"] > 0, result
    assert API_KEY not in run.stdout + run.stderr


def test_secrets_only_in_the_0600_file() -> None:
    for name in (HEAD, WORKER):
        host = node(name)
        secrets = host.file("/etc/sparkops/vllm-secrets.env")
        assert secrets.mode == 0o600 and f"VLLM_API_KEY={API_KEY}" in secrets.content_string
        assert API_KEY not in host.check_output("ps -eo args")
        assert API_KEY not in host.file(f"/etc/systemd/system/{UNIT}.service").content_string


def test_rank_0s_engine_killed_serving_again_with_no_ansible_run() -> None:
    """SIGKILL of rank 0's EngineCore: vLLM exits 0 (vllm#48966); Restart=always and the group bring it back."""
    head = node(HEAD)
    worker_pid = main_pid(WORKER)
    engine = head.check_output("pgrep --exact VLLM::EngineCor | head -1")
    assert engine, head.check_output("ps -eo pid,comm,args")
    start = time.monotonic()
    head.check_output(f"kill -KILL {engine}")
    wait_not_serving(60)
    record("engine_killed_to_serving_s", wait_serving(600, since=start))
    journal = head.check_output(f"journalctl -u {UNIT} --since '-10min' --no-pager -o cat")
    assert "vLLM exited with status 0" in journal, journal[-3000:]  # the engine's own exit status on engine death
    assert main_pid(WORKER) != worker_pid  # the headless rank restarted with it


def test_the_worker_rank_killed_serving_again_with_no_ansible_run() -> None:
    head_pid = main_pid(HEAD)
    start = time.monotonic()
    node(WORKER).check_output(f"systemctl kill --signal SIGKILL {UNIT}")
    record("worker_rank_killed_to_serving_s", wait_serving(600, since=start))
    assert main_pid(HEAD) != head_pid  # rank 0 left the old group and met the new one
    journal = node(HEAD).check_output(f"journalctl -u {UNIT} --since '-10min' --no-pager -o cat")
    assert "rank 1 (engine-spark-worker1, 192.168.200.82)" in journal, journal[-3000:]


def test_rank_0_restarted_alone_serving_again_with_no_ansible_run() -> None:
    worker_pid = main_pid(WORKER)
    start = time.monotonic()
    node(HEAD).check_output(f"systemctl restart {UNIT}")
    record("rank0_restarted_to_serving_s", wait_serving(600, since=start))
    assert main_pid(WORKER) != worker_pid  # the headless rank did not stay in the old rendezvous


def test_an_argument_the_engine_does_not_know_stops_the_role_and_the_unit_stays() -> None:
    """--swap-space: vLLM 0.30 removed it. The role stops with vLLM's own message and the variable that carried it."""
    units = {name: node(name).file(f"/etc/systemd/system/{UNIT}.service").content_string for name in (HEAD, WORKER)}
    pids = (main_pid(HEAD), main_pid(WORKER))
    extra = {"vllm_serve_extra_args": ["--enforce-eager", "--kv-cache-memory-bytes", "64M", "--swap-space", "4"]}
    run = ansible(f"{PROJECT}/site.yml", "--tags", "serve", "-e", json.dumps(extra))
    output = run.stdout + run.stderr
    assert run.returncode != 0
    assert "vLLM 0.30.0 refuses the arguments the unit would run it with; nothing was changed" in output, output[-3000:]
    assert "unrecognized arguments: --swap-space 4" in output and "refused; from vllm_serve_extra_args" in output, output[-3000:]
    assert {name: node(name).file(f"/etc/systemd/system/{UNIT}.service").content_string for name in (HEAD, WORKER)} == units
    assert (main_pid(HEAD), main_pid(WORKER)) == pids and serves()


def test_a_rerun_changes_nothing() -> None:
    pids = (main_pid(HEAD), main_pid(WORKER))
    run = ansible(f"{PROJECT}/site.yml", "--tags", "nccl,ray,serve")
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    assert recap(run) and all(s["changed"] == 0 for s in recap(run).values()), recap(run)
    assert (main_pid(HEAD), main_pid(WORKER)) == pids
