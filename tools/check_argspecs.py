"""Every role documents exactly the variables its defaults define (meta/argument_specs.yml vs defaults/main.yml).

Also: every public variable is prefixed with the role's name, and every option has a description and a type. A role
documents its variables under its entry points (an internal role's main has none: it is used through ``import_role``
``tasks_from``); each entry point has its task file; a required option has no default.
"""

from __future__ import annotations

import sys
from pathlib import Path

import yaml

ROLES = Path(__file__).resolve().parent.parent / "roles"


def problems_of(role: Path) -> list[str]:
    defaults_file = role / "defaults" / "main.yml"
    specs_file = role / "meta" / "argument_specs.yml"
    if not specs_file.is_file():
        return [f"{role.name}: {specs_file.relative_to(ROLES.parent)} is missing"]
    defaults = (yaml.safe_load(defaults_file.read_text()) or {}) if defaults_file.is_file() else {}
    entry_points = yaml.safe_load(specs_file.read_text())["argument_specs"]
    options: dict = {}
    for entry in entry_points.values():
        options.update(entry.get("options") or {})
    problems = [f"{role.name}: entry point {name} has no tasks/{name}.yml" for name in entry_points if not (role / "tasks" / f"{name}.yml").is_file()]
    required = {name for name, spec in options.items() if spec.get("required")}
    problems += [f"{role.name}: required option {name} has a default in defaults/main.yml" for name in sorted(required & set(defaults))]
    problems += [f"{role.name}: default {name} is not in argument_specs" for name in sorted(set(defaults) - set(options))]
    problems += [f"{role.name}: argument_specs option {name} has no default in defaults/main.yml" for name in sorted(set(options) - set(defaults) - required)]
    for name, spec in options.items():
        if not name.startswith(f"{role.name}_"):
            problems.append(f"{role.name}: variable {name} is not prefixed with {role.name}_")
        if not spec.get("description") or not spec.get("type"):
            problems.append(f"{role.name}: argument_specs option {name} needs a description and a type")
    return problems


def main() -> int:
    roles = sorted(p for p in ROLES.iterdir() if p.is_dir()) if ROLES.is_dir() else []
    problems = [p for role in roles for p in problems_of(role)]
    for problem in problems:
        print(problem, file=sys.stderr)
    print(f"check-argspecs: {len(roles)} roles, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
