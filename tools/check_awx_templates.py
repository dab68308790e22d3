"""Every AWX job template, survey and the secrets credential type of awx/ as AWX and awx.awx would take them.

A template AWX would refuse fails here, naming the template and the field:
- each template key is an option of awx.awx.job_template (its DOCUMENTATION, from .collections), of its type and
  within its choices; name, playbook and job_type are given; the playbook exists in the project; job_tags are tags
  the playbook (or a playbook it imports) declares;
- each survey passes AWX's survey-spec rules, and each default passes AWX's answer rules (tools/awx_survey_rules.py);
- each survey variable is one the template's playbook reads: a cluster variable of the inventory contract, an option
  of a role's meta/argument_specs.yml (then the question's type must fit the option's type), or a variable the
  playbook itself names; never one of AWX's own prefixes (awx_, tower_);
- the credential type's injectors use only its inputs, every secret input is injected, and every injected variable
  is a role option marked no_log.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from awx_survey_rules import answer_errors, spec_errors  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
TEMPLATES = Path("awx/job_templates.yml")
CREDENTIAL_TYPE = Path("awx/credential_type.yml")
AWX_MODULES = Path(".collections/ansible_collections/awx/awx/plugins/modules")
CONTRACT = Path("plugins/plugin_utils/_cluster_contract.py")
RESERVED_PREFIXES = ("awx_", "tower_")
COLLECTION_PREFIX = "sparkops.inference."
EXTRA_KEYS = {"survey": str}
PYTHON_TYPES: dict[str, type | tuple[type, ...]] = {"str": str, "bool": bool, "int": int, "list": list, "dict": dict}
QUESTION_TYPES_FOR_OPTION = {
    "str": {"text", "textarea", "password", "multiplechoice"},
    "int": {"integer"},
    "float": {"float"},
    "list": {"multiselect"},
    "bool": {"multiplechoice"},
}


class _AwxLoader(yaml.SafeLoader):
    """safe_load plus Ansible's !unsafe tag (AWX's injector templates are marked so Ansible leaves them alone)."""


_AwxLoader.add_constructor("!unsafe", lambda loader, node: loader.construct_scalar(node))  # type: ignore[arg-type]


def load_yaml(path: Path) -> Any:
    return yaml.load(path.read_text(), Loader=_AwxLoader)  # noqa: S506 (a SafeLoader subclass)


def module_options(repo: Path, module: str) -> dict[str, dict[str, Any]]:
    source = (repo / AWX_MODULES / f"{module}.py").read_text()
    match = re.search(r"DOCUMENTATION = r?'''(.*?)'''", source, re.S)
    if match is None:
        raise SystemExit(f"check-awx-templates: no DOCUMENTATION in awx.awx.{module}")
    options: dict[str, dict[str, Any]] = yaml.safe_load(match.group(1))["options"]
    return options


def cluster_vars(repo: Path) -> set[str]:
    block = re.search(r"CLUSTER_VARS: tuple\[str, \.\.\.\] = \((.*?)\)", (repo / CONTRACT).read_text(), re.S)
    return set(re.findall(r'"(\w+)"', block.group(1))) if block else set()


def role_options(repo: Path) -> dict[str, dict[str, Any]]:
    options: dict[str, dict[str, Any]] = {}
    for spec in sorted((repo / "roles").glob("*/meta/argument_specs.yml")):
        options.update(yaml.safe_load(spec.read_text())["argument_specs"]["main"].get("options") or {})
    return options


def playbook_files(repo: Path, playbook: str) -> list[Path]:
    """The playbook and every playbook it imports (import_playbook), in order."""
    seen: list[Path] = []
    pending = [repo / playbook]
    while pending:
        path = pending.pop(0).resolve()
        if path in seen or not path.is_file():
            continue
        seen.append(path)
        for play in yaml.safe_load(path.read_text()) or []:
            target = play.get("ansible.builtin.import_playbook") or play.get("import_playbook")
            if isinstance(target, str) and target.startswith(COLLECTION_PREFIX):  # this collection's playbook, by FQCN
                pending.append(repo / "playbooks" / f"{target[len(COLLECTION_PREFIX):]}.yml")
            elif isinstance(target, str):
                pending.append(path.parent / target)
    return seen


def _tags(node: Any) -> set[str]:
    found: set[str] = set()
    if isinstance(node, dict):
        tags = node.get("tags")
        if isinstance(tags, str):
            found.add(tags)
        elif isinstance(tags, list):
            found.update(str(t) for t in tags)
        for value in node.values():
            found |= _tags(value)
    elif isinstance(node, list):
        for item in node:
            found |= _tags(item)
    return found


def declared_tags(files: list[Path]) -> set[str]:
    return set().union(*(_tags(yaml.safe_load(f.read_text())) for f in files)) if files else set()


def template_problems(repo: Path, template: dict[str, Any], surveys: dict[str, Any]) -> list[str]:
    name = template.get("name", "<no name>")
    where = f"{TEMPLATES}: template {name!r}"
    options = module_options(repo, "job_template")
    problems = []
    for field in ("name", "playbook", "job_type"):
        if not template.get(field):
            problems.append(f"{where}: field {field!r} is required")
    for field, value in template.items():
        if field in EXTRA_KEYS:
            if not isinstance(value, EXTRA_KEYS[field]):
                problems.append(f"{where}: field {field!r} must be a {EXTRA_KEYS[field].__name__}")
            continue
        option = options.get(field) or next((o for o in options.values() if field in (o.get("aliases") or [])), None)
        if option is None:
            problems.append(f"{where}: field {field!r} is not an option of awx.awx.job_template")
            continue
        kind = PYTHON_TYPES.get(str(option.get("type", "str")), str)
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            problems.append(f"{where}: field {field!r} must be of type {option.get('type', 'str')}, got {value!r}")
        elif option.get("choices") and value not in option["choices"]:
            problems.append(f"{where}: field {field!r} must be one of {option['choices']}, got {value!r}")
    playbook = template.get("playbook")
    files = playbook_files(repo, playbook) if isinstance(playbook, str) else []
    if isinstance(playbook, str) and not files:
        problems.append(f"{where}: field 'playbook': {playbook} does not exist in the project")
    if isinstance(template.get("job_tags"), str) and files:
        unknown = sorted(set(template["job_tags"].split(",")) - declared_tags(files))
        if unknown:
            problems.append(f"{where}: field 'job_tags': {', '.join(unknown)} not declared in {playbook} or what it imports")
    survey_name = template.get("survey")
    if survey_name is not None:
        if survey_name not in surveys:
            problems.append(f"{where}: field 'survey': no survey {survey_name!r} in sparkops_awx_surveys")
        else:
            problems += survey_problems(repo, where, surveys[survey_name], files)
    return problems


def survey_problems(repo: Path, where: str, survey: Any, files: list[Path]) -> list[str]:
    problems = [f"{where}: survey: {error}" for error in spec_errors(survey)]
    if problems:
        return problems
    known_roles = role_options(repo)
    contract = cluster_vars(repo)
    playbook_text = "\n".join(f.read_text() for f in files)
    for question in survey["spec"]:
        variable, qtype = question["variable"], question["type"]
        at = f"{where}: survey question {variable!r}"
        if "default" in question and qtype != "multiselect":  # a multiselect default is a string; spec_errors checks its choices
            problems += [f"{at}: default: {error}" for error in answer_errors(question, {variable: question["default"]})]
        if variable.startswith(RESERVED_PREFIXES):
            problems.append(f"{at}: {', '.join(RESERVED_PREFIXES)} variables are AWX's own")
        option = known_roles.get(variable)
        if option is not None:
            fits = QUESTION_TYPES_FOR_OPTION.get(str(option.get("type", "str")), set())
            if qtype not in fits:
                problems.append(f"{at}: type {qtype!r} does not fit the role option's type {option.get('type')!r}")
        elif variable not in contract and not re.search(rf"\b{re.escape(variable)}\b", playbook_text):
            problems.append(f"{at}: not a cluster variable, a role option or a variable the playbook reads")
    return problems


def credential_type_problems(repo: Path, credential_type: dict[str, Any]) -> list[str]:
    where = f"{CREDENTIAL_TYPE}: credential type {credential_type.get('name')!r}"
    options = module_options(repo, "credential_type")
    problems = [f"{where}: field {field!r} is not an option of awx.awx.credential_type" for field in credential_type if field not in options]
    kinds = options.get("kind", {}).get("choices") or []
    if credential_type.get("kind") not in kinds:
        problems.append(f"{where}: field 'kind' must be one of {kinds}")
    fields = (credential_type.get("inputs") or {}).get("fields") or []
    ids = [f.get("id") for f in fields]
    if len(set(ids)) != len(ids):
        problems.append(f"{where}: inputs: duplicated field ids {ids}")
    injected = (credential_type.get("injectors") or {}).get("extra_vars") or {}
    used = set()
    roles = role_options(repo)
    for variable, template in injected.items():
        names = set(re.findall(r"\{\{\s*(\w+)\s*\}\}", str(template)))
        used |= names
        for unknown in sorted(names - set(ids)):
            problems.append(f"{where}: injector {variable!r} uses {unknown!r}, which is not an input")
        option = roles.get(variable)
        if option is None or not option.get("no_log"):
            problems.append(f"{where}: injector {variable!r} must be a role option marked no_log")
    for field in fields:
        if field.get("secret") and field.get("id") not in used:
            problems.append(f"{where}: secret input {field.get('id')!r} is never injected")
    return problems


def problems_of(repo: Path) -> list[str]:
    data = load_yaml(repo / TEMPLATES)
    surveys = data.get("sparkops_awx_surveys") or {}
    templates = data.get("sparkops_awx_job_templates") or []
    problems = [p for template in templates for p in template_problems(repo, template, surveys)]
    names = [t.get("name") for t in templates]
    problems += [f"{TEMPLATES}: template {n!r} is defined twice" for n in sorted({n for n in names if names.count(n) > 1})]
    problems += credential_type_problems(repo, load_yaml(repo / CREDENTIAL_TYPE)["sparkops_awx_credential_type"])
    return problems


def main(argv: list[str]) -> int:
    repo = Path(argv[0]).resolve() if argv else REPO
    problems = problems_of(repo)
    for problem in problems:
        print(problem, file=sys.stderr)
    count = len(load_yaml(repo / TEMPLATES).get("sparkops_awx_job_templates") or [])
    print(f"check-awx-templates: {count} job templates, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
