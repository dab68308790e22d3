# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Copy controller files to a node folder as one archive (docs: plugins/modules/copy_packed.py)."""

from __future__ import annotations

import shutil
import tempfile
import typing as t
from pathlib import Path

from ansible import constants as C  # noqa: N812 (Ansible's own name for it)
from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase
from ansible_collections.sparkops.inference.plugins.plugin_utils._pack import PackError, pack

ARGUMENT_SPEC: dict[str, t.Any] = {
    "src": {"type": "path", "required": True},
    "files": {"type": "list", "elements": "str", "required": True},
    "dest": {"type": "path", "required": True},
    "prefix": {"type": "str", "default": "sparkops-pack-"},
}
NAME = "sparkops.inference.copy_packed"


class ActionModule(ActionBase):
    TRANSFERS_FILES = True

    def run(self, tmp: t.Any = None, task_vars: dict[str, t.Any] | None = None) -> dict[str, t.Any]:
        result = super().run(tmp, task_vars)
        task_vars = task_vars or {}
        try:
            _validation, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
            for name in ("src", "dest"):
                if not args[name]:  # given as null or empty: present, so not "required"'s failure
                    raise AnsibleActionFail(f"{NAME}: {name} must be a path, not {args[name]!r}")
            return self._copy(result, args, task_vars)
        finally:
            self._remove_tmp_path(self._connection._shell.tmpdir)

    def _copy(self, result: dict[str, t.Any], args: dict[str, t.Any], task_vars: dict[str, t.Any]) -> dict[str, t.Any]:
        dest = self._remote_expand_user(args["dest"])
        folder = self._execute_module(
            module_name="ansible.legacy.file",
            module_args={"path": dest, "state": "directory", "owner": "root", "group": "root", "mode": "0755"},
            task_vars=task_vars,
        )
        if folder.get("failed"):
            return {**result, "failed": True, "changed": False, "dest": dest, "msg": f"{NAME}: cannot make {dest}: {folder.get('msg', '')}"}
        if self._task.check_mode and folder.get("changed"):
            # nothing to compare against: every file would be new
            return {**result, "changed": True, "dest": dest, "msg": f"{dest} would be made and the files unpacked into it"}
        # A folder made for this run, readable by this controller user only (mkdtemp: 0700), in Ansible's own local
        # temporary folder: at a fixed path, another user of the controller could make the archive first and change it.
        private = Path(tempfile.mkdtemp(prefix=args["prefix"], dir=C.DEFAULT_LOCAL_TMP))  # type: ignore[attr-defined] # set at import
        try:
            archive = private / "files.tar"
            try:
                names = pack(Path(args["src"]), args["files"], archive)
            except PackError as exc:
                raise AnsibleActionFail(f"{NAME}: {exc}") from None
            sent = self._connection._shell.join_path(self._connection._shell.tmpdir, "files.tar")
            self._transfer_file(str(archive), sent)
            self._fixup_perms2((self._connection._shell.tmpdir, sent))
            unpacked = self._execute_module(
                module_name="ansible.legacy.unarchive",
                module_args={"src": sent, "dest": dest, "owner": "root", "group": "root", "mode": "u=rwX,go=rX"},
                task_vars=task_vars,
            )
        finally:
            shutil.rmtree(private, ignore_errors=True)
        unpacked.pop("invocation", None)
        result.update(unpacked)
        result.update(changed=bool(unpacked.get("changed") or folder.get("changed")), dest=dest, files=names)
        return result
