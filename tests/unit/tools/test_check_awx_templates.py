"""tools/check_awx_templates.py and tools/awx_survey_rules.py: a template or survey AWX would refuse fails, naming the
template and the field; the project's own templates pass."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import check_awx_templates
import pytest
import yaml
from awx_survey_rules import answer_errors, spec_errors

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A copy of what the check reads: awx/, the playbooks, the roles' argument specs, the contract, awx.awx's docs."""
    for name in ("awx", "playbooks", "roles"):
        shutil.copytree(REPO / name, tmp_path / name)
    shutil.copy(REPO / "site.yml", tmp_path / "site.yml")
    (tmp_path / check_awx_templates.CONTRACT).parent.mkdir(parents=True)
    shutil.copy(REPO / check_awx_templates.CONTRACT, tmp_path / check_awx_templates.CONTRACT)
    (tmp_path / ".collections").symlink_to(REPO / ".collections")
    return tmp_path


def edit(repo: Path, change: Callable[[dict[str, Any]], None]) -> None:
    path = repo / check_awx_templates.TEMPLATES
    data = check_awx_templates.load_yaml(path)
    change(data)
    path.write_text(yaml.safe_dump(data))


def template(data: dict[str, Any], name: str) -> dict[str, Any]:
    return next(t for t in data["sparkops_awx_job_templates"] if t["name"] == name)


def question(data: dict[str, Any], survey: str, variable: str) -> dict[str, Any]:
    return next(q for q in data["sparkops_awx_surveys"][survey]["spec"] if q["variable"] == variable)


def test_the_projects_templates_pass() -> None:
    assert check_awx_templates.problems_of(REPO) == []


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (
            lambda d: template(d, "sparkops Status").update(playbook="playbooks/nope.yml"),
            "template 'sparkops Status': field 'playbook': playbooks/nope.yml does not exist",
        ),
        (lambda d: template(d, "sparkops Preview").update(job_type="dry-run"), "template 'sparkops Preview': field 'job_type' must be one of ['run', 'check']"),
        (lambda d: template(d, "sparkops Deploy").update(verbosity="4"), "template 'sparkops Deploy': field 'verbosity' must be of type int"),
        (lambda d: template(d, "sparkops Deploy").update(ask_tag_on_launch=True), "field 'ask_tag_on_launch' is not an option of awx.awx.job_template"),
        (lambda d: template(d, "sparkops Redeploy serving").update(job_tags="ray,serving"), "field 'job_tags': serving not declared in site.yml"),
        (lambda d: template(d, "sparkops Deploy").update(survey="deploy"), "template 'sparkops Deploy': field 'survey': no survey 'deploy'"),
        (lambda d: template(d, "sparkops Deploy").pop("job_type"), "template 'sparkops Deploy': field 'job_type' is required"),
        (
            lambda d: question(d, "deployment", "sparkops_tensor_parallel_size").update(default=0),
            "default: 'sparkops_tensor_parallel_size' value 0 is too small",
        ),
        (lambda d: question(d, "deployment", "sparkops_gpu_memory_utilization").update(max=0.95), "The max limit in survey question 4 expected to be integer."),
        (lambda d: question(d, "deployment", "sparkops_tensor_parallel_size").update(type="number"), "'number' in survey question 3 is not one of"),
        (
            lambda d: question(d, "deployment", "sparkops_tensor_parallel_size").update(default="2"),
            "Default value 2 in survey question 3 expected to be integer.",
        ),
        (lambda d: question(d, "deployment", "sparkops_model_revision").update(variable="sparkops_model_repo"), "'variable' 'sparkops_model_repo' duplicated"),
        (
            lambda d: question(d, "deployment", "sparkops_model_revision").update(variable="sparkops_model_rev"),
            "'sparkops_model_rev': not a cluster variable, a role option",
        ),
        (
            lambda d: question(d, "deployment", "sparkops_model_revision").update(variable="awx_model"),
            "question 'awx_model': awx_, tower_ variables are AWX's own",
        ),
        (lambda d: question(d, "benchmark", "benchmark_concurrency").update(default="1\n3"), "Default choice must be answered from the choices listed."),
        (lambda d: question(d, "benchmark", "benchmark_concurrency").pop("choices"), "Survey question 0 of type multiselect must specify choices."),
        (lambda d: d["sparkops_awx_surveys"]["benchmark"].update(spec=[]), "'spec' doesn't contain any items."),
        (
            lambda d: d["sparkops_awx_job_templates"].append({"name": "sparkops Status", "playbook": "site.yml", "job_type": "run"}),
            "'sparkops Status' is defined twice",
        ),
    ],
)
def test_a_template_awx_would_refuse_fails_naming_template_and_field(repo: Path, change: Callable[[dict[str, Any]], None], expected: str) -> None:
    edit(repo, change)
    problems = check_awx_templates.problems_of(repo)
    assert any(expected in p for p in problems), problems


def test_a_question_whose_type_does_not_fit_the_role_option_fails(repo: Path) -> None:
    def add(data: dict[str, Any]) -> None:
        data["sparkops_awx_surveys"]["deployment"]["spec"].append(
            {"question_name": "Port", "variable": "vllm_serve_max_model_len", "type": "text", "required": False}
        )

    edit(repo, add)
    assert any("'vllm_serve_max_model_len': type 'text' does not fit the role option's type 'int'" in p for p in check_awx_templates.problems_of(repo))


def test_a_credential_type_injecting_a_variable_that_is_not_no_log_fails(repo: Path) -> None:
    path = repo / check_awx_templates.CREDENTIAL_TYPE
    text = path.read_text().replace("vllm_serve_api_key: !unsafe", "vllm_serve_served_model_name: !unsafe").replace("{{ hf_token }}", "{{ hf_tokn }}")
    path.write_text(text)
    problems = check_awx_templates.problems_of(repo)
    assert any("injector 'vllm_serve_served_model_name' must be a role option marked no_log" in p for p in problems), problems
    assert any("injector 'model_sync_hf_token' uses 'hf_tokn', which is not an input" in p for p in problems), problems
    assert any("secret input 'hf_token' is never injected" in p for p in problems), problems


def test_the_cli_exits_1_and_names_the_problem(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    edit(repo, lambda d: template(d, "sparkops Status").update(playbook="status.yml"))
    assert check_awx_templates.main([str(repo)]) == 1
    assert "template 'sparkops Status': field 'playbook': status.yml does not exist in the project" in capsys.readouterr().err


def test_awx_answer_rules() -> None:
    integer = {"variable": "n", "type": "integer", "required": True, "min": 1, "max": 4}
    assert answer_errors(integer, {"n": 2}) == []
    assert answer_errors(integer, {"n": True}) == ["Value True for 'n' expected to be an integer."]
    assert answer_errors(integer, {}) == ["'n' value missing"]
    assert answer_errors({**integer, "required": False}, {}) == []
    choice = {"variable": "c", "type": "multiplechoice", "required": True, "choices": "a\nb\n"}
    assert answer_errors(choice, {"c": "b"}) == [] and answer_errors(choice, {"c": "z"}) == ["Value z for 'c' expected to be one of ['a', 'b']."]
    assert spec_errors({"name": "s", "description": "", "spec": [{"type": "text", "question_name": "q", "variable": "v", "required": "yes"}]}) == [
        "'required' in survey question 0 expected to be boolean."
    ]
    assert spec_errors({"name": "s", "spec": []}) == ["Field 'description' is missing from survey spec.", "'spec' doesn't contain any items."]
