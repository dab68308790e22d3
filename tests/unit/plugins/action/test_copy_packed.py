# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The copy_packed action plugin: the module runs it makes (the folder, the unpack), the archive it sends (packed in
a folder made for the run, 0700, removed after), check mode, and its failures (the modules' runs and the transfer
faked; tests/unit/roles/test_common_role.py runs it through ansible-playbook)."""

from __future__ import annotations

import stat
import tarfile
import typing as t
from pathlib import Path
from unittest.mock import MagicMock

import pytest
from ansible.errors import AnsibleActionFail
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar
from ansible_collections.sparkops.inference.plugins.action import copy_packed
from ansible_collections.sparkops.inference.plugins.action.copy_packed import ActionModule

REMOTE_TMP = "/root/.ansible/tmp/ansible-tmp-1"


class Node:
    """What the action did on the "node": module runs, the archive sent (its members and the folder it was in)."""

    def __init__(self, folder: dict[str, t.Any] | None = None, unpacked: dict[str, t.Any] | None = None) -> None:
        self.folder = folder or {"changed": False, "path": "/opt/x"}
        self.unpacked = unpacked or {"changed": True, "extract_results": {"rc": 0}, "invocation": {"module_args": {}}}
        self.calls: list[tuple[str, dict[str, t.Any]]] = []
        self.sent: list[tuple[str, list[str], int]] = []  # remote path, members, the private folder's mode
        self.private: list[Path] = []
        self.removed: list[t.Any] = []

    def execute_module(self, module_name: str, module_args: dict[str, t.Any], task_vars: dict[str, t.Any]) -> dict[str, t.Any]:
        self.calls.append((module_name, dict(module_args)))
        return dict(self.folder if module_name == "ansible.legacy.file" else self.unpacked)

    def transfer_file(self, local: str, remote: str) -> str:
        with tarfile.open(local) as tar:
            self.sent.append((remote, tar.getnames(), stat.S_IMODE(Path(local).parent.stat().st_mode)))
        self.private.append(Path(local).parent)
        return remote


def make_action(args: dict[str, t.Any], node: Node, *, check_mode: bool = False) -> ActionModule:
    loader = DataLoader()
    task = MagicMock(args=args, async_val=0, check_mode=check_mode, action="sparkops.inference.copy_packed")
    connection = MagicMock()
    connection._shell.tmpdir = REMOTE_TMP
    connection._shell.join_path = lambda *parts: "/".join(parts)
    action = ActionModule(task=task, connection=connection, play_context=MagicMock(), loader=loader, templar=Templar(loader=loader), shared_loader_obj=None)
    action._execute_module = node.execute_module  # type: ignore[method-assign]
    action._transfer_file = node.transfer_file  # type: ignore[method-assign]
    action._fixup_perms2 = lambda paths, **kwargs: None  # type: ignore[method-assign]
    action._remote_expand_user = lambda path, **kwargs: path  # type: ignore[method-assign]
    action._remove_tmp_path = node.removed.append  # type: ignore[method-assign]
    return action


@pytest.fixture
def src(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(copy_packed.C, "DEFAULT_LOCAL_TMP", str(tmp_path / "local"))
    (tmp_path / "local").mkdir()
    folder = tmp_path / "src"
    folder.mkdir()
    for name in ("_a.py", "_b.py", "_unsent.py"):
        (folder / name).write_text(f"{name}\n")
    return folder


def test_the_folder_then_one_archive_sent_and_unpacked_root_owned_0644(src: Path, tmp_path: Path) -> None:
    node = Node()
    action = make_action({"src": str(src), "files": ["_b.py", "_a.py"], "dest": "/opt/x", "prefix": "sparkops-test-"}, node)
    result = action.run(task_vars={})
    assert node.calls == [
        ("ansible.legacy.file", {"path": "/opt/x", "state": "directory", "owner": "root", "group": "root", "mode": "0755"}),
        ("ansible.legacy.unarchive", {"src": f"{REMOTE_TMP}/files.tar", "dest": "/opt/x", "owner": "root", "group": "root", "mode": "u=rwX,go=rX"}),
    ]
    assert node.sent == [(f"{REMOTE_TMP}/files.tar", ["_a.py", "_b.py"], 0o700)]  # packed in a folder only its user can use
    (private,) = node.private
    assert private.parent == tmp_path / "local" and private.name.startswith("sparkops-test-")  # Ansible's local temporary folder
    assert not private.exists()  # removed after the unpack
    assert (result["changed"], result["files"], result["dest"], result["extract_results"]) == (True, ["_a.py", "_b.py"], "/opt/x", {"rc": 0})
    assert "invocation" not in result
    assert node.removed == [REMOTE_TMP]  # the node's temporary folder too


def test_nothing_to_unpack_changes_nothing(src: Path) -> None:
    node = Node(unpacked={"changed": False})
    result = make_action({"src": str(src), "files": ["_a.py"], "dest": "/opt/x"}, node).run(task_vars={})
    assert result["changed"] is False and [name for name, _args in node.calls] == ["ansible.legacy.file", "ansible.legacy.unarchive"]


def test_a_folder_made_is_a_change_even_when_unarchive_says_none(src: Path) -> None:
    node = Node(folder={"changed": True}, unpacked={"changed": False})
    assert make_action({"src": str(src), "files": ["_a.py"], "dest": "/opt/x"}, node).run(task_vars={})["changed"] is True


def test_check_mode_with_no_folder_yet_sends_nothing_and_says_it_would(src: Path) -> None:
    node = Node(folder={"changed": True})
    result = make_action({"src": str(src), "files": ["_a.py"], "dest": "/opt/x"}, node, check_mode=True).run(task_vars={})
    assert (result["changed"], result["msg"]) == (True, "/opt/x would be made and the files unpacked into it")
    assert [name for name, _args in node.calls] == ["ansible.legacy.file"] and node.sent == []


def test_check_mode_with_the_folder_asks_unarchive_which_runs_in_check_mode(src: Path) -> None:
    node = Node(unpacked={"changed": True})
    result = make_action({"src": str(src), "files": ["_a.py"], "dest": "/opt/x"}, node, check_mode=True).run(task_vars={})
    assert result["changed"] is True and [name for name, _args in node.calls] == ["ansible.legacy.file", "ansible.legacy.unarchive"]


def test_a_folder_that_cannot_be_made_fails_naming_it(src: Path) -> None:
    node = Node(folder={"failed": True, "msg": "Permission denied"})
    result = make_action({"src": str(src), "files": ["_a.py"], "dest": "/opt/x"}, node).run(task_vars={})
    assert (result["failed"], result["dest"], result["msg"]) == (True, "/opt/x", "sparkops.inference.copy_packed: cannot make /opt/x: Permission denied")
    assert node.sent == []


def test_a_file_that_is_not_there_fails_naming_it_and_leaves_no_private_folder(src: Path, tmp_path: Path) -> None:
    node = Node()
    action = make_action({"src": str(src), "files": ["_a.py", "_gone.py"], "dest": "/opt/x"}, node)
    with pytest.raises(AnsibleActionFail, match=f"sparkops.inference.copy_packed: files: _gone.py is not a file in {src}"):
        action.run(task_vars={})
    assert node.sent == [] and list((tmp_path / "local").iterdir()) == []
    assert node.removed == [REMOTE_TMP]


def test_a_failed_unpack_is_the_result(src: Path) -> None:
    node = Node(unpacked={"failed": True, "msg": "Failed to find handler for files.tar"})
    result = make_action({"src": str(src), "files": ["_a.py"], "dest": "/opt/x"}, node).run(task_vars={})
    assert (result["failed"], result["msg"]) == (True, "Failed to find handler for files.tar")


@pytest.mark.parametrize(
    ("args", "said"),
    [
        ({"files": ["a"], "dest": "/x"}, "missing required arguments: src"),
        ({"src": "/s", "files": ["a"], "dest": None}, "copy_packed: dest must be a path, not ''"),
        ({"src": "", "files": ["a"], "dest": "/x"}, "copy_packed: src must be a path, not ''"),
        ({"src": "/s", "files": {"a": 1}, "dest": "/x"}, "files"),
    ],
)
def test_bad_arguments_are_refused_naming_them(args: dict[str, t.Any], said: str) -> None:
    node = Node()
    with pytest.raises(AnsibleActionFail, match=said):
        make_action(args, node).run(task_vars={})
    assert node.calls == []
