"""The real vLLM served by site.yml on the lab in Ray mode (TP=2 across head and worker): ordered units, ready endpoint,
back after a reboot with no Ansible run, a real failing start stopped at the start limit with the engine's own words,
restarted once per change. What Ray's executor does when a piece dies is tests/test_engine_ray.py's."""

from __future__ import annotations

import os
import re
import sys
import typing as t
from pathlib import Path

import openai
import pytest

sys.path.insert(0, str(Path(os.environ["RAY_LAB_PROJECT"]) / "tests" / "lab"))
from sparklab.scenario import installed_vllm, module_result, node, playbook, recap, unit_property  # noqa: E402

HEAD = os.environ["RAY_LAB_HEAD"]
WORKER = os.environ["RAY_LAB_WORKERS"].split(",")[0]
HEAD_IP = os.environ["RAY_LAB_HEAD_FABRIC_IP"]
HEAD_MGMT_IP = os.environ["RAY_LAB_HEAD_MGMT_IP"]
API_KEY = os.environ["SERVE_LAB_API_KEY"]
MODEL = os.environ["SERVE_LAB_MODEL"]
UNIT = "sparkops-vllm"


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
    assert installed_vllm(WORKER) == installed_vllm(HEAD) == "0.32.0+cpu"


def test_serving_after_the_reboot_with_no_ansible_run() -> None:
    """side_effect rebooted both nodes: the cluster re-formed and vLLM came back through its gates."""
    result = wait_serving(600)
    assert result["models"] == [MODEL]
    invocation = unit(HEAD, "InvocationID")
    journal = node(HEAD).check_output(f"journalctl _SYSTEMD_INVOCATION_ID={invocation} --no-pager --output cat")
    assert "gate cluster: ok" in journal and "gate snapshot: ok" in journal and "gate memory: ok" in journal, journal[-3000:]


def test_the_openai_client_gets_a_completion_and_a_wrong_key_is_refused() -> None:
    """Through the management address, as a user's client reaches it. (The reasoning apart from the answer is the
    engine scenario's check: the same API server in either backend.)"""
    client = openai.OpenAI(base_url=f"http://{HEAD_MGMT_IP}:8000/v1", api_key=API_KEY, timeout=60)
    reply = client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "Say hello."}], max_tokens=16)
    assert reply.usage is not None and reply.usage.completion_tokens > 0
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


# 0.32.0 vllm/config/model.py:2639-2667: a max_model_len above the model's (max_position_embeddings, 4096 for the
# lab's model) is a ValueError while the API server builds its configuration, before any engine process starts. The
# role's argument check runs the engine's parser, which takes any whole number: only the start finds it out.
TOO_LONG = 8192


def test_a_real_failing_start_stops_at_the_start_limit_and_the_role_shows_the_journal() -> None:
    run = playbook("site.yml", "--tags", "serve", "-e", f"vllm_serve_max_model_len={TOO_LONG}", "-e", "vllm_serve_start_limit_burst=3")
    assert run.returncode != 0
    output = run.stdout + run.stderr
    assert f"host {HEAD}: vLLM ({UNIT}.service: " in output and "ActiveState=failed" in output, output[-4000:]
    assert "did not serve tiny-moe" in output and "Last 40 lines of its journal" in output, output[-4000:]
    # The engine's own words, from the journal.
    assert f"User-specified max_model_len ({TOO_LONG}) is greater than the derived max_model_len" in output, output[-4000:]
    assert "Start request repeated too quickly" in output  # systemd stopped the loop at the start limit
    assert unit(HEAD, "ActiveState") == "failed" and int(unit(HEAD, "NRestarts")) >= 2
    # The next test's run (a change) brings the failed unit back: the role clears the failed state before starting.


def test_a_flag_change_restarts_the_service_once() -> None:
    """A configuration change run by the role's configure tag alone: the unit changes, vLLM restarts (from the failed
    state the test before left), the wait proves it."""
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
