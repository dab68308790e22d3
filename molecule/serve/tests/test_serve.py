"""vLLM served by site.yml on the lab (Ray mode, TP=2): ordered units, ready endpoint, back after a reboot with no
Ansible run, recovering from a lost Ray worker (the engine exits 0, as vLLM does), stopping a crash loop at the start
limit, restarted once per change. The engine is the lab's stand-in for Ray mode (tests/lab/standins/vllm: the CPU
build of vLLM refuses the Ray executor), installed as the wheel `vllm`; mp mode runs the real engine (molecule/engine)."""

from __future__ import annotations

import os
import re
import sys
import time
import typing as t
from pathlib import Path

import openai
import pytest

sys.path.insert(0, str(Path(os.environ["RAY_LAB_PROJECT"]) / "tests" / "lab"))
from sparklab.scenario import module_result, node, playbook, recap, unit_property  # noqa: E402

HEAD = os.environ["RAY_LAB_HEAD"]
WORKER = os.environ["RAY_LAB_WORKERS"].split(",")[0]
HEAD_IP = os.environ["RAY_LAB_HEAD_FABRIC_IP"]
HEAD_MGMT_IP = os.environ["RAY_LAB_HEAD_MGMT_IP"]
API_KEY = os.environ["SERVE_LAB_API_KEY"]
MODEL = os.environ["SERVE_LAB_MODEL"]
UNIT = "sparkops-vllm"
STANDIN_CONFIG = "/etc/sparkops-lab/vllm.json"
FAST_LOAD = '{"load_seconds": 1, "unhealthy_seconds": 0.5}'  # what prepare.yml writes: a short load keeps CI short


def endpoint(timeout: int = 5, **extra: t.Any) -> dict[str, t.Any]:
    """sparkops.inference.openai_endpoint, run on the head against its fabric address."""
    args = {"url": f"http://{HEAD_IP}:8000", "model": MODEL, "api_key": API_KEY, "timeout": timeout, "interval": 1, "fail_on_timeout": False, **extra}
    return module_result(HEAD, "sparkops.inference.openai_endpoint", args)


def unit(name: str, prop: str) -> str:
    return unit_property(node(name), UNIT, prop)


def wait_serving(timeout: int) -> dict[str, t.Any]:
    result = endpoint(timeout=timeout)
    assert result["ready"], result
    return result


def test_units_start_in_order_after_the_ray_head() -> None:
    head = node(HEAD)
    assert head.service(UNIT).is_enabled and head.service(UNIT).is_running
    assert "sparkops-ray-head.service" in unit(HEAD, "After") and "sparkops-ray-head.service" in unit(HEAD, "Requires")
    ray_started = int(head.check_output("systemctl show --property ActiveEnterTimestampMonotonic --value sparkops-ray-head"))
    assert int(unit(HEAD, "ExecMainStartTimestampMonotonic")) > ray_started
    # Ray mode: the worker runs no vLLM unit, but has vLLM in Ray's venv (its Ray workers import it).
    assert not node(WORKER).file(f"/etc/systemd/system/{UNIT}.service").exists
    assert node(WORKER).run("/opt/sparkops/ray/bin/vllm --version").stdout.strip() == "0.30.0"


def test_serving_after_the_reboot_with_no_ansible_run() -> None:
    """side_effect rebooted both nodes: the cluster re-formed and vLLM came back through its gates."""
    result = wait_serving(180)
    assert result["models"] == [MODEL]
    invocation = unit(HEAD, "InvocationID")
    journal = node(HEAD).check_output(f"journalctl _SYSTEMD_INVOCATION_ID={invocation} --no-pager --output cat")
    assert "gate cluster: ok" in journal and "gate snapshot: ok" in journal and "gate memory: ok" in journal, journal[-3000:]


def test_module_reports_ready_with_the_reasoning_of_a_reasoning_model() -> None:
    result = wait_serving(60)
    assert result["state"] == "ready" and result["usage"]["completion_tokens"] > 0
    assert result["reasoning"]  # --reasoning-parser qwen3: the thinking comes apart from the answer
    short = endpoint(timeout=10, max_tokens=4)
    assert short["ready"] and short["content"] in (None, "") and short["reasoning"] and short["finish_reason"] == "length", short


def test_the_openai_client_gets_a_completion_and_a_wrong_key_is_refused() -> None:
    client = openai.OpenAI(base_url=f"http://{HEAD_MGMT_IP}:8000/v1", api_key=API_KEY, timeout=30)
    reply = client.chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": "Say hello."}], max_tokens=64, extra_body={"chat_template_kwargs": {"enable_thinking": False}}
    )
    assert reply.choices[0].message.content and reply.usage is not None and reply.usage.completion_tokens > 0
    with pytest.raises(openai.AuthenticationError):
        openai.OpenAI(base_url=f"http://{HEAD_MGMT_IP}:8000/v1", api_key="wrong", timeout=30).models.list()


def test_secrets_only_in_the_0600_file() -> None:
    head = node(HEAD)
    secrets = head.file("/etc/sparkops/vllm-secrets.env")
    assert secrets.mode == 0o600 and secrets.user == "root" and f"VLLM_API_KEY={API_KEY}" in secrets.content_string
    assert API_KEY not in head.check_output("ps -eo args")
    assert API_KEY not in head.file(f"/etc/systemd/system/{UNIT}.service").content_string
    assert API_KEY not in head.file("/etc/sparkops/vllm.env").content_string
    env = head.file("/etc/sparkops/vllm.env").content_string
    assert "HF_HUB_OFFLINE=1" in env and "VLLM_ENGINE_READY_TIMEOUT_S=1800" in env and f"RAY_ADDRESS={HEAD_IP}:6379" in env


def test_a_lost_ray_worker_stops_the_engine_and_serving_recovers_once_ray_is_back() -> None:
    """vLLM 0.30's V2 Ray executor sees the worker die and the server shuts down cleanly: exit 0 (vllm#48966).
    Restart=always brings it back anyway (Restart=on-failure left serving down)."""
    restarts = int(unit(HEAD, "NRestarts"))
    since = node(HEAD).check_output("date '+%Y-%m-%d %H:%M:%S'")
    node(WORKER).check_output("systemctl kill --signal SIGKILL sparkops-ray-worker")
    deadline = time.monotonic() + 60
    while int(unit(HEAD, "NRestarts")) == restarts and time.monotonic() < deadline:
        time.sleep(1)
    assert int(unit(HEAD, "NRestarts")) > restarts, "vLLM did not notice the lost Ray worker"
    wait_serving(150)
    assert node(WORKER).service("sparkops-ray-worker").is_running
    journal = node(HEAD).check_output(f"journalctl -u {UNIT} --since '{since}' --no-pager -o cat")
    assert "died unexpectedly, shutting down executor" in journal, journal[-3000:]
    assert "Deactivated successfully" in journal and "Scheduled restart job" in journal, journal[-3000:]  # exit 0, restarted


def test_a_flag_change_restarts_the_service_once() -> None:
    """A configuration change run by the role's configure tag alone: the unit changes, vLLM restarts, the wait proves it."""
    pid = unit(HEAD, "MainPID")
    run = playbook("site.yml", "--tags", "vllm_serve_configure", "-e", "vllm_serve_max_model_len=1024")
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    assert "RUNNING HANDLER [sparkops.inference.vllm_serve : Restart vLLM]" in run.stdout
    assert re.search(r"tiny-moe served on http://\S+ after [\d.]+ s", run.stdout), run.stdout[-3000:]
    changed_pid = unit(HEAD, "MainPID")
    assert changed_pid != pid
    assert "--max-model-len 1024" in node(HEAD).check_output(f"cat /proc/{changed_pid}/cmdline | tr '\\0' ' '")
    # A tag-scoped rerun changing nothing: test_deploy_via_awx.py's Redeploy serving (--tags ray,serve) and second Deploy.


def test_the_roles_run_tags_alone_change_nothing_and_prove_the_service() -> None:
    """The run tags alone (the start, the waits, the fabric gate): no task they leave out is needed, nothing changes."""
    pid = unit(HEAD, "MainPID")
    run = playbook("site.yml", "--tags", "nccl_env_run,ray_cluster_run,vllm_serve_run", "-e", "vllm_serve_max_model_len=1024")
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    assert {counts["changed"] for counts in recap(run).values()} == {0}, recap(run)
    assert "wait | Wait until every node is alive with its GPUs" in run.stdout  # Ray's wait ran
    assert re.search(r"tiny-moe served on http://\S+ after [\d.]+ s", run.stdout), run.stdout[-3000:]  # and vLLM's
    assert "units | Write the vLLM unit" not in run.stdout and "install_venv |" not in run.stdout
    assert unit(HEAD, "MainPID") == pid


def test_a_crash_at_start_stops_at_the_start_limit_and_the_role_shows_the_journal() -> None:
    head = node(HEAD)
    head.check_output(f'echo \'{{"crash_at_start": true, "load_seconds": 1}}\' > {STANDIN_CONFIG}')
    try:
        run = playbook("site.yml", "--tags", "serve", "-e", "vllm_serve_max_model_len=2048")  # a change: the handler restarts it
        assert run.returncode != 0
        output = run.stdout + run.stderr
        assert f"host {HEAD}: vLLM ({UNIT}.service: " in output and "ActiveState=failed" in output, output[-4000:]
        assert "did not serve tiny-moe" in output and "Last 40 lines of its journal" in output, output[-4000:]
        assert "CUDA error: an illegal memory access was encountered" in output  # the engine's own words, from the journal
        assert "Start request repeated too quickly" in output  # systemd stopped the loop at the start limit
        assert unit(HEAD, "ActiveState") == "failed" and int(unit(HEAD, "NRestarts")) >= 2
    finally:
        head.check_output(f"echo '{FAST_LOAD}' > {STANDIN_CONFIG}")
    # The next test's run (a change) brings the failed unit back: the role clears the failed state before starting.
