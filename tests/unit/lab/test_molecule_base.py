# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The Molecule base config (.config/molecule/config.yml) and the scenarios merged over it, as Molecule merges them."""

from __future__ import annotations

import typing as t
from pathlib import Path

import pytest
import yaml
from ansible_collections.sparkops.inference.plugins.plugin_utils._cluster_contract import CLUSTER_VARS
from molecule.util import merge_dicts

from molecule.model import schema_v3

ROOT = Path(__file__).resolve().parents[3]
BASE = ROOT / ".config" / "molecule" / "config.yml"
SCENARIOS = sorted(path.parent.name for path in (ROOT / "molecule").glob("*/molecule.yml"))
# The scenarios that run the collection's roles (the lab ones test the lab itself).
ROLE_SCENARIOS = ("engine", "model", "reclaim", "serve")


def load(path: Path) -> dict[str, t.Any]:
    data = yaml.safe_load(path.read_text())
    assert isinstance(data, dict), path
    return data


def merged(scenario: str) -> dict[str, t.Any]:
    return merge_dicts(load(BASE), load(ROOT / "molecule" / scenario / "molecule.yml"))


def lab_inventory_vars() -> dict[str, t.Any]:
    values: dict[str, t.Any] = {}
    for path in sorted((ROOT / "inventories" / "lab" / "group_vars" / "all").glob("*.yml")):
        values.update(load(path))
    return values


def test_the_scenarios_are_found() -> None:
    assert set(ROLE_SCENARIOS) <= set(SCENARIOS) and {"lab", "lab_miswired"} <= set(SCENARIOS)


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_each_scenario_merged_over_the_base_is_a_valid_molecule_config(scenario: str) -> None:
    config = merged(scenario)
    assert schema_v3.validate(config) == []
    assert (config["driver"]["name"], config["provisioner"]["name"], config["prerun"]) == ("podman", "ansible", False)
    assert config["dependency"]["name"] == "shell" and "tests/lab/spark_lab.py prepare" in config["dependency"]["command"]
    assert config["provisioner"]["env"]["ANSIBLE_PIPELINING"] == "true"
    assert config["provisioner"]["inventory"]["group_vars"]["all"]["ansible_python_interpreter"] == "/usr/bin/python3"


def test_a_scenario_that_breaks_the_schema_is_seen() -> None:
    """The check above can fail: a driver Molecule does not know is refused."""
    config = merged("reclaim")
    config["driver"] = {"name": 7}
    assert schema_v3.validate(config) != []


@pytest.mark.parametrize("scenario", ROLE_SCENARIOS)
def test_each_role_scenario_sets_every_cluster_variable(scenario: str) -> None:
    cluster = merged(scenario)["provisioner"]["inventory"]["group_vars"]["all"]
    assert [name for name in CLUSTER_VARS if name not in cluster] == []


def test_the_real_engines_scenarios_keep_their_own_dependency_command() -> None:
    """engine and serve run the real vLLM: their dependency step prepares its wheelhouse too; the others' do not."""
    for scenario in ("engine", "serve"):
        assert merged(scenario)["dependency"]["command"].endswith("spark_lab.py prepare --engine"), scenario
    assert merged("reclaim")["dependency"]["command"].endswith("spark_lab.py prepare")


def test_the_labs_cluster_is_the_lab_inventorys() -> None:
    """The base config's cluster variables are those of inventories/lab (make demo's), not a copy that drifts."""
    base = load(BASE)["provisioner"]["inventory"]["group_vars"]["all"]
    inventory = lab_inventory_vars()
    shared = {name: value for name, value in base.items() if name.startswith("sparkops_") and name != "sparkops_report_dir"}
    assert len(shared) >= 7
    assert {name: inventory.get(name) for name in shared} == shared


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_each_scenario_names_the_roles_it_tests(scenario: str) -> None:
    """The second line of each molecule.yml: `# Roles tested: <roles>`, each a role of the collection (or none, for
    the lab's own scenarios); a scenario whose converge imports a role names it."""
    line = (ROOT / "molecule" / scenario / "molecule.yml").read_text().splitlines()[1]
    assert line.startswith("# Roles tested: "), line
    named = line.removeprefix("# Roles tested: ")
    roles = {path.name for path in (ROOT / "roles").iterdir() if (path / "tasks").is_dir()}
    if scenario in ROLE_SCENARIOS:
        converge = (ROOT / "molecule" / scenario / "converge.yml").read_text()
        used = {role for role in roles if f"sparkops.inference.{role}" in converge}
        assert used <= {role for role in roles if role in named}, (used, named)
        assert "site.yml" not in converge or named.startswith("every role of site.yml"), named
    else:
        assert named.startswith("none"), named
