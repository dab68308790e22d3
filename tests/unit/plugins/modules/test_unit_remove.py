# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests for the unit_remove module: main() with the unit folder in tmp_path and systemctl faked."""

from __future__ import annotations

import json
import typing as t
from pathlib import Path
from unittest.mock import patch

import pytest
from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.testing import patch_module_args
from ansible_collections.sparkops.inference.plugins.module_utils import _unit_remove
from ansible_collections.sparkops.inference.plugins.modules import unit_remove


def run_module(args: dict[str, t.Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[dict[str, t.Any], list[list[str]]]:
    argvs: list[list[str]] = []

    def run_command(self: AnsibleModule, argv: list[str], **kwargs: t.Any) -> tuple[int, str, str]:
        argvs.append(argv)
        return 0, "", ""

    with (
        patch_module_args(args),
        patch.object(_unit_remove, "UNIT_DIR", str(tmp_path / "system")),
        patch.object(AnsibleModule, "run_command", run_command),
        pytest.raises(SystemExit),
    ):
        unit_remove.main()
    return json.loads(capsys.readouterr().out), argvs


@pytest.fixture
def node(tmp_path: Path) -> Path:
    (tmp_path / "system").mkdir()
    (tmp_path / "system" / "sparkops-firewall.service").write_text("[Service]\n")
    (tmp_path / "ruleset.nft").write_text("table inet x {}\n")
    return tmp_path


def test_removes_what_is_there_then_a_rerun_changes_nothing(node: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = {"units": ["sparkops-firewall.service", "sparkops-other.service"], "paths": [str(node / "ruleset.nft")]}
    result, argvs = run_module(args, node, capsys)
    unit_file = str(node / "system" / "sparkops-firewall.service")
    assert (result["changed"], result["units"], result["daemon_reloaded"]) == (True, ["sparkops-firewall.service"], True)
    assert result["paths"] == [unit_file, str(node / "ruleset.nft")]
    assert argvs == [
        ["systemctl", "disable", "--now", "sparkops-firewall.service"],
        ["systemctl", "reset-failed", "sparkops-firewall.service"],
        ["systemctl", "daemon-reload"],
    ]
    assert not Path(unit_file).exists() and not (node / "ruleset.nft").exists()
    again, argvs = run_module(args, node, capsys)
    assert (again["changed"], again["units"], again["paths"], argvs) == (False, [], [], [])


def test_check_mode_says_what_it_would_do_and_does_nothing_with_the_diff(node: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = {"units": ["sparkops-firewall.service"], "paths": [str(node / "ruleset.nft")], "_ansible_check_mode": True, "_ansible_diff": True}
    result, argvs = run_module(args, node, capsys)
    unit_file = str(node / "system" / "sparkops-firewall.service")
    assert (result["changed"], result["units"], result["daemon_reloaded"], argvs) == (True, ["sparkops-firewall.service"], False, [])
    assert result["diff"] == {"before": f"{unit_file}\n{node / 'ruleset.nft'}\n", "after": ""}
    assert Path(unit_file).exists() and (node / "ruleset.nft").exists()


@pytest.mark.parametrize("unit", ["/etc/systemd/system/x.service", ""])
def test_a_unit_given_as_a_path_is_refused_naming_it(unit: str, node: Path, capsys: pytest.CaptureFixture[str]) -> None:
    result, argvs = run_module({"units": [unit]}, node, capsys)
    assert result["failed"] is True and argvs == []
    assert result["msg"] == f"units are unit file names in {node / 'system'} (no '/'), not {unit!r}"
