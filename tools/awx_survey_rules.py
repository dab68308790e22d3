"""The rules AWX applies to a survey, as AWX's own code applies them.

Read in ansible/awx at commit e21dd0a0933fd544d1fe2513c54fe41203775eb5 (24.6.1, the release of the awx.awx collection
in PyPI's ansible 12.3.0):
- ``spec_errors``: what ``POST /api/v2/job_templates/N/survey_spec/`` refuses (awx/api/views/__init__.py:2523-2650,
  ``JobTemplateSurveySpec._validate_spec_data``), with ``SURVEY_TYPE_MAPPING`` (awx/main/constants.py:98);
- ``answer_errors``: what a launch refuses (awx/main/models/mixins.py:205-300, ``_survey_element_validation``);
- ``job_extra_vars``: what the job gets (awx/main/models/mixins.py:154-203, ``_update_unified_job_kwargs``: the
  template's extra vars, then every survey default that passes the answer rules, then the launch's answers).
The messages are AWX's, prefixed with the template's name by the callers.
"""

from __future__ import annotations

from typing import Any

SURVEY_TYPE_MAPPING: dict[str, type | tuple[type, ...]] = {
    "text": str,
    "textarea": str,
    "password": str,
    "multiplechoice": str,
    "multiselect": str,
    "integer": int,
    "float": (float, int),
}
REQUIRED_FIELDS = (("type", str, "string"), ("question_name", str, "string"), ("variable", str, "string"), ("required", bool, "boolean"))


def _choices(question: dict[str, Any]) -> list[Any]:
    choices = question.get("choices", [])
    if isinstance(choices, str):
        return [choice for choice in choices.splitlines() if choice.strip() != ""]
    return list(choices)


def spec_errors(survey: Any) -> list[str]:
    """Why AWX's API would refuse this survey spec (empty: it accepts it). AWX stops at the first error of a question."""
    if not isinstance(survey, dict):
        return ["the survey spec is not a JSON object"]
    errors = []
    for field, kind, label in (("name", str, "string"), ("description", str, "string"), ("spec", list, "list of items")):
        if field not in survey:
            errors.append(f"Field '{field}' is missing from survey spec.")
        elif not isinstance(survey[field], kind):
            errors.append(f"Expected {label} for field '{field}', received {type(survey[field]).__name__} type.")
    if isinstance(survey.get("spec"), list) and len(survey["spec"]) < 1:
        errors.append("'spec' doesn't contain any items.")
    if errors:
        return errors
    seen: set[str] = set()
    for idx, question in enumerate(survey["spec"]):
        error = _question_error(idx, question, seen)
        if error:
            errors.append(error)
    return errors


def _question_error(idx: int, question: Any, seen: set[str]) -> str | None:
    if not isinstance(question, dict):
        return f"Survey question {idx} is not a json object."
    for field, kind, label in REQUIRED_FIELDS:
        if field not in question:
            return f"'{field}' missing from survey question {idx}"
        if not isinstance(question[field], kind):
            return f"'{field}' in survey question {idx} expected to be {label}."
    if question["variable"] in seen:
        return f"'variable' '{question['variable']}' duplicated in survey question {idx}."
    seen.add(question["variable"])
    qtype = question["type"]
    if qtype not in SURVEY_TYPE_MAPPING:
        return f"'{qtype}' in survey question {idx} is not one of '{', '.join(SURVEY_TYPE_MAPPING)}' allowed question types."
    default = question.get("default", "")
    # isinstance(True, int) holds in Python, and AWX's check is the same isinstance: a bool default passes it too.
    if default != "" and not isinstance(default, SURVEY_TYPE_MAPPING[qtype]):
        label = qtype if qtype in ("integer", "float") else "string"
        return f"Default value {default} in survey question {idx} expected to be {label}."
    for key in ("min", "max"):
        if key in question and question[key] is not None and not isinstance(question[key], int):
            return f"The {key} limit in survey question {idx} expected to be integer."
    if qtype in ("multiselect", "multiplechoice"):
        if "choices" not in question:
            return f"Survey question {idx} of type {qtype} must specify choices."
        if "default" in question:
            defaults = [d for d in default.splitlines() if d.strip() != ""] if isinstance(default, str) else list(default)
            if qtype == "multiplechoice" and len(defaults) > 1:
                return "Multiple Choice (Single Select) can only have one default value."
            if any(item not in _choices(question) for item in defaults):
                return "Default choice must be answered from the choices listed."
    if isinstance(default, str) and default.startswith("$encrypted$"):
        return f"$encrypted$ is a reserved keyword for password question defaults, survey question {idx} is type {qtype}."
    return None


def answer_errors(question: dict[str, Any], data: dict[str, Any], validate_required: bool = True) -> list[str]:
    """Why AWX would refuse this launch's answer to one question (``_survey_element_validation``)."""
    variable, qtype = question["variable"], question["type"]
    errors: list[str] = []
    if variable not in data:
        if question["required"] and validate_required:
            errors.append(f"'{variable}' value missing")
        return errors
    value = data[variable]
    if qtype in ("textarea", "text", "password"):
        if not isinstance(value, str):
            return [f"Value {value} for '{variable}' expected to be a string."]
        if question.get("min") not in ("", None) and len(value) < int(question["min"]):
            errors.append(f"'{variable}' value {value} is too small (length is {len(value)} must be at least {question['min']}).")
        if question.get("max") not in ("", None) and len(value) > int(question["max"]):
            errors.append(f"'{variable}' value {value} is too large (must be no more than {question['max']}).")
    elif qtype in ("integer", "float"):
        # AWX compares exact types (type(x) != int): a boolean is not a number here.
        numeric = isinstance(value, int if qtype == "integer" else (int, float)) and not isinstance(value, bool)
        if not numeric:
            kind = "an integer" if qtype == "integer" else "a numeric type"
            return [f"Value {value} for '{variable}' expected to be {kind}."]
        convert = int if qtype == "integer" else float
        if question.get("min") not in ("", None) and value < convert(question["min"]):
            errors.append(f"'{variable}' value {value} is too small (must be at least {question['min']}).")
        if question.get("max") not in ("", None) and value > convert(question["max"]):
            errors.append(f"'{variable}' value {value} is too large (must be no more than {question['max']}).")
    elif qtype == "multiselect":
        if not isinstance(value, list):
            return [f"'{variable}' value is expected to be a list."]
        choices = _choices(question)
        errors += [f"Value {item} for '{variable}' expected to be one of {choices}." for item in value if item not in choices]
    elif qtype == "multiplechoice":
        choices = _choices(question)
        if value not in choices:
            errors.append(f"Value {value} for '{variable}' expected to be one of {choices}.")
    return errors


def job_extra_vars(template_extra_vars: dict[str, Any], survey: dict[str, Any] | None, answers: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """(the job's extra variables, why AWX would refuse the launch): template vars, valid survey defaults, answers.

    A required question left unanswered is satisfied by a valid default (the launch form is filled with it); an
    answer to a variable no question asks is refused, as with "Prompt on launch" off for extra variables
    (``_accept_or_ignore_variables``, mixins.py:300-345).
    """
    extra_vars = dict(template_extra_vars)
    errors: list[str] = []
    questions = survey["spec"] if survey else []
    for question in questions:
        default = question.get("default")
        if default is not None and not answer_errors(question, {question["variable"]: default}):
            extra_vars[question["variable"]] = default
    for question in questions:
        errors += answer_errors(question, answers, validate_required=question["variable"] not in extra_vars)
    unasked = [key for key in answers if key not in {q["variable"] for q in questions}]
    if unasked:
        errors.append(
            f"Variables {', '.join(unasked)} are not allowed on launch. Check the Prompt on Launch setting on the Job Template to include Extra Variables."
        )
    extra_vars.update(answers)
    return extra_vars, errors
