# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""_unit_remove: what is there to remove (plan) and removing it (apply), with a unit folder in tmp_path and
systemctl faked."""

from __future__ import annotations

from pathlib import Path

import pytest
from ansible_collections.sparkops.inference.plugins.module_utils._unit_remove import Removal, UnitRemoveError, apply, plan


class Systemctl:
    """Records the argvs; answers rc ``fail_on`` gives (0 by default)."""

    def __init__(self, fail_on: str = "") -> None:
        self.argvs: list[list[str]] = []
        self.fail_on = fail_on

    def __call__(self, argv: list[str]) -> tuple[int, str, str]:
        self.argvs.append(argv)
        return (1, "", "Failed to stop unit: Access denied") if self.fail_on and self.fail_on in argv else (0, "", "")


@pytest.fixture
def node(tmp_path: Path) -> Path:
    """A unit folder with one of two units and a settings file and a state folder beside it."""
    units = tmp_path / "system"
    units.mkdir()
    (units / "sparkops-vllm-liveness.timer").write_text("[Timer]\n")
    (tmp_path / "liveness.json").write_text("{}")
    (tmp_path / "state").mkdir()
    (tmp_path / "state" / "last").write_text("1")
    return tmp_path


def test_plan_names_the_units_whose_file_is_there_and_the_paths_that_exist_unit_files_first(node: Path) -> None:
    units = str(node / "system")
    removal = plan(
        ["sparkops-vllm-liveness.timer", "sparkops-ray-worker.service"],
        [str(node / "liveness.json"), str(node / "gone.json"), str(node / "state"), f"{units}/sparkops-vllm-liveness.timer"],
        units,
    )
    assert removal == Removal(
        units=["sparkops-vllm-liveness.timer"],
        paths=[f"{units}/sparkops-vllm-liveness.timer", str(node / "liveness.json"), str(node / "state")],  # each once
    )
    assert removal.changes is True
    assert plan(["sparkops-ray-worker.service"], [str(node / "gone.json")], units) == Removal([], [])


def test_apply_stops_and_disables_first_removes_everything_then_reloads(node: Path) -> None:
    units = str(node / "system")
    removal = plan(["sparkops-vllm-liveness.timer"], [str(node / "liveness.json"), str(node / "state")], units)
    systemctl = Systemctl()
    assert apply(removal, systemctl, units) is True
    assert systemctl.argvs == [
        ["systemctl", "disable", "--now", "sparkops-vllm-liveness.timer"],
        ["systemctl", "reset-failed", "sparkops-vllm-liveness.timer"],  # its answer does not matter (a unit not failed)
        ["systemctl", "daemon-reload"],
    ]
    assert sorted(p.name for p in node.iterdir()) == ["system"] and list((node / "system").iterdir()) == []


def test_apply_without_a_unit_file_removed_does_not_reload(node: Path) -> None:
    systemctl = Systemctl()
    assert apply(plan([], [str(node / "liveness.json")], str(node / "system")), systemctl, str(node / "system")) is False
    assert systemctl.argvs == [] and not (node / "liveness.json").exists()


def test_a_unit_that_will_not_stop_fails_naming_it_with_nothing_removed(node: Path) -> None:
    units = str(node / "system")
    removal = plan(["sparkops-vllm-liveness.timer"], [str(node / "liveness.json")], units)
    said = r"^systemctl could not stop and disable sparkops-vllm-liveness.timer: Failed to stop unit: Access denied$"
    with pytest.raises(UnitRemoveError, match=said) as failed:
        apply(removal, Systemctl(fail_on="--now"), units)
    assert failed.value.changed is False
    assert (node / "system" / "sparkops-vllm-liveness.timer").exists() and (node / "liveness.json").exists()


def test_a_path_that_cannot_be_removed_fails_naming_it_as_a_change(node: Path) -> None:
    def refuse(path: str) -> None:
        raise PermissionError(13, "Permission denied", path)

    removal = plan([], [str(node / "liveness.json")], str(node / "system"))
    with pytest.raises(UnitRemoveError, match=r"cannot remove .*liveness.json: Permission denied") as failed:
        apply(removal, Systemctl(), str(node / "system"), remove=refuse)
    assert failed.value.changed is True


def test_a_failed_reload_is_an_error_after_the_change(node: Path) -> None:
    units = str(node / "system")
    with pytest.raises(UnitRemoveError, match="daemon-reload failed after removing") as failed:
        apply(plan(["sparkops-vllm-liveness.timer"], [], units), Systemctl(fail_on="daemon-reload"), units)
    assert failed.value.changed is True


def test_a_link_is_removed_not_what_it_points_to(node: Path) -> None:
    (node / "link").symlink_to(node / "state")
    apply(plan([], [str(node / "link")], str(node / "system")), Systemctl(), str(node / "system"))
    assert not (node / "link").is_symlink() and (node / "state" / "last").exists()
