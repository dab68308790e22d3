"""AWX's launch, emulated through ansible-runner (tests/lab/sparklab/awx_job.py): what is refused before anything
runs, the private data directory as AWX lays it out, and a real job (the Status template) run against this machine."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from sparklab import awx_job

HF_TOKEN = "hf_unitSECRETtoken0123456789"
API_KEY = "sk-unit-SECRET-api-key-9876"
DEPLOY = "sparkops Deploy"
LAB_ANSWERS = {
    "sparkops_model_repo": "sparkops-lab/tiny-moe",
    "sparkops_model_revision": "main",
    "sparkops_served_model_name": "tiny-moe",
    "sparkops_tensor_parallel_size": 2,
    "sparkops_gpu_memory_utilization": 0.8,
}


@pytest.fixture(scope="module")
def controller(tmp_path_factory: pytest.TempPathFactory) -> awx_job.Controller:
    """Two 'Sparks' that are this machine (local connection): enough for the read-only Status template."""
    work = tmp_path_factory.mktemp("awx")
    source = work / "inventory.yml"
    hosts = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}
    source.write_text(
        yaml.safe_dump(
            {
                "all": {
                    "children": {
                        "spark_head": {"hosts": {"spark-head": {**hosts, "sparkops_fabric_ip": "192.168.100.10"}}},
                        "spark_workers": {"hosts": {"spark-worker1": {**hosts, "sparkops_fabric_ip": "192.168.100.11"}}},
                    },
                    "vars": {
                        "sparkops_serve_port": 8000,
                        "sparkops_model_repo": "sparkops-lab/tiny-moe",
                        "sparkops_model_revision": "main",
                        "sparkops_served_model_name": "tiny-moe",
                        "sparkops_tensor_parallel_size": 2,
                        "sparkops_pipeline_parallel_size": 1,
                        "sparkops_gpus_per_node": 1,
                        "sparkops_fabric_subnet": "192.168.100.0/24",
                        "sparkops_gpu_memory_utilization": 0.8,
                    },
                }
            }
        )
    )
    return awx_job.Controller(work / "controller", source, {"hf_token": HF_TOKEN, "vllm_api_key": API_KEY})


@pytest.mark.parametrize(
    ("answers", "expected"),
    [
        ({"sparkops_tensor_parallel_size": "2"}, "Value 2 for 'sparkops_tensor_parallel_size' expected to be an integer."),
        ({"sparkops_tensor_parallel_size": 0}, "'sparkops_tensor_parallel_size' value 0 is too small (must be at least 1)."),
        ({"sparkops_gpu_memory_utilization": 1.5}, "'sparkops_gpu_memory_utilization' value 1.5 is too large (must be no more than 1)."),
        ({"sparkops_gpu_memory_utilization": "high"}, "Value high for 'sparkops_gpu_memory_utilization' expected to be a numeric type."),
        ({"sparkops_model_repo": "x"}, "'sparkops_model_repo' value x is too small (length is 1 must be at least 3)."),
        ({"vllm_serve_backend": "mp"}, "Variables vllm_serve_backend are not allowed on launch."),
    ],
)
def test_a_bad_answer_is_refused_naming_the_template_and_the_field(controller: awx_job.Controller, answers: dict[str, Any], expected: str) -> None:
    with pytest.raises(awx_job.LaunchRefused) as refused:
        controller.launch(awx_job.Launch(DEPLOY, {**LAB_ANSWERS, **answers}))
    assert f"job template {DEPLOY!r} refused the launch" in str(refused.value) and expected in str(refused.value)
    assert controller.jobs == 0  # nothing ran


def test_benchmark_choices_and_prompts_not_asked_are_refused(controller: awx_job.Controller) -> None:
    with pytest.raises(awx_job.LaunchRefused, match=r"Value 3 for 'benchmark_concurrency' expected to be one of"):
        controller.check_launch(awx_job.Launch("sparkops Benchmark", {"benchmark_concurrency": ["1", "3"]}))
    with pytest.raises(awx_job.LaunchRefused, match="job_tags: not prompted on launch"):
        controller.check_launch(awx_job.Launch("sparkops Status", job_tags="serve"))
    with pytest.raises(awx_job.LaunchRefused, match="no job template 'Deploy'"):
        controller.check_launch(awx_job.Launch("Deploy"))


def test_a_template_naming_a_missing_playbook_is_refused(controller: awx_job.Controller) -> None:
    controller.templates.append({"name": "broken", "playbook": "playbooks/nope.yml", "job_type": "run"})
    try:
        with pytest.raises(awx_job.LaunchRefused, match=r"job template 'broken' refused the launch: playbook: playbooks/nope.yml does not exist"):
            controller.check_launch(awx_job.Launch("broken"))
    finally:
        controller.templates.pop()


def test_survey_defaults_then_answers_make_the_extra_vars(controller: awx_job.Controller) -> None:
    extra_vars = controller.check_launch(awx_job.Launch(DEPLOY, {"sparkops_model_repo": "sparkops-lab/tiny-moe"}))[1]
    assert extra_vars["sparkops_model_repo"] == "sparkops-lab/tiny-moe"  # the answer
    assert extra_vars["sparkops_tensor_parallel_size"] == 2 and extra_vars["sparkops_model_revision"] == "main"  # defaults
    bench = controller.check_launch(awx_job.Launch("sparkops Benchmark"))[1]
    assert "benchmark_concurrency" not in bench  # AWX passes no multiselect default (a string, not a list) on its own
    assert "benchmark_requests_per_level" not in bench and bench["benchmark_output_tokens"] == 128


def test_the_project_sync_installs_this_collection_from_the_checkout(controller: awx_job.Controller) -> None:
    installed = controller.requirements_collections / "ansible_collections" / "sparkops" / "inference"
    manifest = json.loads((installed / "MANIFEST.json").read_text())
    assert manifest["collection_info"]["name"] == "inference" and (installed / "playbooks" / "site.yml").is_file()
    assert not (installed / "tests").exists() and not (installed / "awx").exists()  # galaxy.yml's build_ignore applies


def test_status_runs_through_ansible_runner_as_awx_runs_it_and_no_secret_leaks(controller: awx_job.Controller) -> None:
    job = controller.launch(awx_job.Launch("sparkops Status", verbosity=4, limit="spark_head:spark_workers"))
    assert job.status == "successful" and job.rc == 0, job.stdout[-3000:]
    assert job.changed() == {} or set(job.changed().values()) == {0}
    messages = [e["event_data"].get("res", {}).get("msg") for e in job.events if e.get("event") == "runner_on_ok"]
    assert any(isinstance(m, list) and any("spark-head: head, fabric 192.168.100.10" in line for line in m) for m in messages), messages
    env = job.private_data_dir / "env"
    cmdline = (env / "cmdline").read_text()
    assert cmdline.startswith("-u root -l spark_head:spark_workers -vvvv -e @" + str(env)), cmdline
    credential_file = Path(cmdline.split("-e @", 1)[1].split()[0])
    assert stat.S_IMODE(credential_file.stat().st_mode) == 0o400 and API_KEY in credential_file.read_text()
    assert "!unsafe" in credential_file.read_text() and "model_sync_hf_token" in credential_file.read_text()
    extravars = (env / "extravars").read_text()
    assert "awx_job_template_name: !unsafe 'sparkops Status'" in extravars and API_KEY not in extravars
    script = job.private_data_dir / "inventory" / "hosts"
    assert os.access(script, os.X_OK)
    listed = json.loads(subprocess.run([sys.executable, str(script)], capture_output=True, text=True, check=True).stdout)
    assert listed["spark_head"]["hosts"] == ["spark-head"]
    assert "ansible-playbook" in (job.artifacts / "command").read_text()
    assert awx_job.secrets_found(job, [HF_TOKEN, API_KEY]) == []


def test_a_secret_in_the_output_is_found(controller: awx_job.Controller, tmp_path: Path) -> None:
    """The leak check can fail: a secret written to the stdout or an artifact is reported with where it is."""
    job = awx_job.Job("9", tmp_path, "successful", 0, [{"event": "x", "event_data": {"res": {"msg": f"token {HF_TOKEN}"}}}], f"key={API_KEY}")
    (job.artifacts / "job_events").mkdir(parents=True)
    (job.artifacts / "job_events" / "1.json").write_text(HF_TOKEN)
    assert awx_job.secrets_found(job, [HF_TOKEN, API_KEY]) == ["events", "artifacts/9/job_events/1.json", "stdout"]
