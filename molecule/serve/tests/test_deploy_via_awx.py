"""The job templates of awx/job_templates.yml, launched as AWX launches them (ansible-runner, a private data directory
laid out as AWX lays it out: tests/lab/sparklab/awx_job.py) against this scenario's fresh nodes, asserting on runner
events: Deploy serves the real engine in Ray mode (the scenario's deploy: it has no converge step); Preview, Redeploy
serving and a second Deploy change nothing; a survey answer that breaks the inventory contract fails in preflight; a
wrong answer is refused before anything runs; Status reports; Benchmark's figures agree with the engine's own record
of the same requests (its /metrics). No secret appears in any event, stdout or artifact at -vvvv.

Runs first in this scenario (tests/conftest.py orders it); test_upgrade_and_teardown.py upgrades and tears down what Deploy
installed, last."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import typing as t
from pathlib import Path

import openai
import pytest
import yaml

PROJECT = Path(os.environ["RAY_LAB_PROJECT"])
sys.path.insert(0, str(PROJECT / "tests" / "lab"))
from sparklab import awx_job, engine_record  # noqa: E402
from sparklab.scenario import node  # noqa: E402

HEAD = os.environ["RAY_LAB_HEAD"]
WORKER = os.environ["RAY_LAB_WORKERS"].split(",")[0]
HEAD_MGMT_IP = os.environ["RAY_LAB_HEAD_MGMT_IP"]
HEAD_FABRIC_IP = os.environ["RAY_LAB_HEAD_FABRIC_IP"]
API_KEY = os.environ["SERVE_LAB_API_KEY"]
MODEL = os.environ["SERVE_LAB_MODEL"]
HF_TOKEN = "hf_labAWXsecretTOKEN5b1e0c"
SECRETS = [API_KEY, HF_TOKEN]
RAY_TOKEN_FILE = "/etc/sparkops/private/ray-auth-token"
UNIT = "sparkops-vllm"
LAB_ANSWERS = {
    "sparkops_model_repo": "sparkops-lab/tiny-moe",
    "sparkops_model_revision": "main",
    "sparkops_served_model_name": MODEL,
    "sparkops_tensor_parallel_size": 2,
    "sparkops_gpu_memory_utilization": 0.8,
}


def main_pid() -> str:
    return str(node(HEAD).check_output(f"systemctl show --property MainPID --value {UNIT}"))


def operator_inventory(work: Path) -> Path:
    """The lab's inventory as an operator keeps it for AWX: the head at its management address over ssh, the worker
    at its fabric address through the head; no secret in it (the credential brings them); the benchmark's endpoint
    left to its default (from the controller, AWX's execution node: the head's management address), with no warm-up
    (the engine's record of the measured requests is what the benchmark is checked against)."""
    source = Path(os.environ["MOLECULE_INVENTORY_FILE"]).parent
    target = work / "inventory"
    shutil.copytree(source, target)
    hosts_file = target / "ansible_inventory.yml"
    inventory = yaml.safe_load(hosts_file.read_text())
    jump = f'-o ProxyCommand="ssh -W %h:%p -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null root@{HEAD_MGMT_IP}"'
    inventory["all"]["hosts"][HEAD] = {"ansible_host": HEAD_MGMT_IP}
    inventory["all"]["hosts"][WORKER] = {"ansible_host": os.environ["SERVE_LAB_WORKER_FABRIC_IP"], "ansible_ssh_common_args": jump}
    for group in ("spark_head", "spark_workers"):
        inventory[group]["hosts"] = {name: None for name in inventory[group]["hosts"]}
    hosts_file.write_text(yaml.safe_dump(inventory))
    for host_vars in (target / "host_vars").iterdir():  # the scenario's own connection (the lab key) is not AWX's
        data = yaml.safe_load(host_vars.read_text())
        host_vars.write_text(
            yaml.safe_dump({k: v for k, v in data.items() if not k.startswith(("ansible_connection", "ansible_host", "ansible_user", "ansible_ssh"))})
        )
    group_vars = target / "group_vars" / "all"
    data = yaml.safe_load(group_vars.read_text())
    data.pop("vllm_serve_api_key")
    data.update(ansible_user="root", benchmark_warmup=False)  # the endpoint: the default, as the README runs it
    group_vars.write_text(yaml.safe_dump(data))
    assert API_KEY not in "".join(p.read_text() for p in target.rglob("*") if p.is_file())
    return hosts_file


def machine_credential(work: Path) -> str:
    """A machine credential's key, authorised for root on every node (added beside the keys the roles manage)."""
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "awx-machine-credential", "-f", str(work / "machine")], check=True)
    public = (work / "machine.pub").read_text().strip()
    for name in (HEAD, WORKER):
        node(name).check_output(f"install -d -m 0700 /root/.ssh && echo '{public}' >> /root/.ssh/authorized_keys && chmod 0600 /root/.ssh/authorized_keys")
    return (work / "machine").read_text()


@pytest.fixture(scope="module")
def controller(tmp_path_factory: pytest.TempPathFactory) -> awx_job.Controller:
    work = tmp_path_factory.mktemp("awx")
    return awx_job.Controller(
        work / "controller",
        operator_inventory(work),
        {"hf_token": HF_TOKEN, "vllm_api_key": API_KEY},
        project=PROJECT,
        machine_ssh_key=machine_credential(work),
    )


def ray_token() -> list[str]:
    """Ray's token as the head keeps it (the ray_cluster role generates it on a first deploy), when it has one."""
    held = node(HEAD).run(f"cat {RAY_TOKEN_FILE}")
    return [held.stdout] if held.rc == 0 and held.stdout else []


def ok(job: awx_job.Job) -> None:
    assert job.status == "successful" and job.rc == 0 and not job.failures(), job.stdout[-4000:]
    assert awx_job.secrets_found(job, SECRETS + ray_token()) == []


def task_names(job: awx_job.Job) -> list[str]:
    """'role : task' of every task the job started (runner events carry the role apart)."""
    return [f"{e['event_data'].get('role', '')} : {e['event_data'].get('task', '')}" for e in job.events if e.get("event") == "playbook_on_task_start"]


def test_deploy_serves(controller: awx_job.Controller) -> None:
    job = controller.launch(awx_job.Launch("sparkops Deploy", LAB_ANSWERS, verbosity=4))
    assert ray_token(), "the deploy left the head without Ray's token"  # so that ok() also looks for it
    ok(job)
    served = [e for e in job.events if e.get("event") == "runner_on_ok" and "served on http://" in json.dumps(e["event_data"].get("res", {}))]
    assert served, job.stdout[-3000:]  # the role's readiness wait, through the collection's openai_endpoint
    assert " : Preflight | Check the inventory contract and plan the cluster" in task_names(job)
    client = openai.OpenAI(base_url=f"http://{HEAD_MGMT_IP}:8000/v1", api_key=API_KEY, timeout=30)
    reply = client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "Say hello."}], max_tokens=64)
    assert reply.usage is not None and reply.usage.completion_tokens > 0


def test_preview_changes_nothing(controller: awx_job.Controller) -> None:
    pid = main_pid()
    job = controller.launch(awx_job.Launch("sparkops Preview", LAB_ANSWERS))
    ok(job)
    assert "--check" in (job.private_data_dir / "env" / "cmdline").read_text()
    assert job.changed() and set(job.changed().values()) == {0}, job.changed()
    assert main_pid() == pid


def test_redeploy_serving_changes_nothing(controller: awx_job.Controller) -> None:
    pid = main_pid()
    job = controller.launch(awx_job.Launch("sparkops Redeploy serving", LAB_ANSWERS))
    ok(job)
    assert set(job.changed().values()) == {0}, job.changed()
    names = task_names(job)
    assert any("ray_cluster" in n for n in names) and any("vllm_serve" in n for n in names)
    # Only the tags it runs, preflight, and Ansible's argument checks of every role (tagged always by Ansible itself).
    assert not any(("model_sync" in n or "gpu_reclaim" in n) and "Validating arguments against arg spec" not in n for n in names), names
    assert main_pid() == pid


def test_a_second_deploy_changes_nothing(controller: awx_job.Controller) -> None:
    pid = main_pid()
    job = controller.launch(awx_job.Launch("sparkops Deploy", LAB_ANSWERS))
    ok(job)
    assert set(job.changed().values()) == {0}, job.changed()
    assert main_pid() == pid


def test_an_answer_breaking_the_inventory_contract_fails_in_preflight(controller: awx_job.Controller) -> None:
    pid = main_pid()
    job = controller.launch(awx_job.Launch("sparkops Deploy", {**LAB_ANSWERS, "sparkops_tensor_parallel_size": 3}))
    assert job.status == "failed" and job.rc != 0
    failed = job.failures()
    assert failed and all(e["event_data"]["task"].startswith("Preflight |") for e in failed), failed
    assert "sparkops_tensor_parallel_size (3)" in json.dumps([e["event_data"]["res"] for e in failed])
    assert not any("vllm_serve" in n or "model_sync" in n for n in task_names(job))
    assert main_pid() == pid


def test_a_wrong_answer_is_refused_before_anything_runs(controller: awx_job.Controller) -> None:
    pid, jobs = main_pid(), controller.jobs
    with pytest.raises(awx_job.LaunchRefused, match=r"'sparkops Deploy' refused the launch: survey: Value two for 'sparkops_tensor_parallel_size'"):
        controller.launch(awx_job.Launch("sparkops Deploy", {**LAB_ANSWERS, "sparkops_tensor_parallel_size": "two"}))
    assert controller.jobs == jobs and main_pid() == pid


def test_status_reports_what_runs_where(controller: awx_job.Controller) -> None:
    job = controller.launch(awx_job.Launch("sparkops Status"))
    ok(job)
    report = json.dumps([e["event_data"].get("res", {}) for e in job.events if e.get("event") == "runner_on_ok"])
    assert f"{HEAD}: head, fabric {HEAD_FABRIC_IP}" in report and "sparkops-vllm.service=active/running" in report, report[-2000:]


@pytest.mark.usefixtures("no_liveness_probe")
def test_benchmark_agrees_with_the_engine_s_own_record(controller: awx_job.Controller) -> None:
    """One level (2 in flight) through the Benchmark template, its figures checked against what the engine recorded
    of the same requests (sparklab.engine_record: the engine scenario's check of playbooks/benchmark.yml)."""
    answers = {
        "benchmark_concurrency": ["2"],
        "benchmark_prompt_tokens": engine_record.PROMPT_TOKENS,
        "benchmark_output_tokens": engine_record.OUTPUT_TOKENS,
        "benchmark_requests_per_level": engine_record.REQUESTS,
    }
    report_dir: list[Path] = []

    def run() -> dict[str, t.Any]:
        job = controller.launch(awx_job.Launch("sparkops Benchmark", answers, verbosity=4))
        ok(job)
        report_dir.append(job.private_data_dir / "project" / "benchmarks")
        return dict(json.loads((report_dir[0] / "benchmark.json").read_text())["levels"][0])

    figures, engine = engine_record.measured(HEAD, run, 2)
    report = json.loads((report_dir[0] / "benchmark.json").read_text())
    assert (report_dir[0] / "benchmark.png").read_bytes().startswith(b"\x89PNG")
    assert report["header"]["model"] == MODEL and report["header"]["tensor_parallel_size"] == 2
    assert report["header"]["url"].rstrip("/") == f"http://{HEAD_MGMT_IP}:8000", report["header"]  # the default
    assert figures["failed"] == 0 and figures["completed"] == engine_record.REQUESTS, figures
    assert engine_record.against_engine("the Benchmark job", figures, engine) == [], (figures, engine)
