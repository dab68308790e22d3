# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Wait for a served endpoint in steps, saying where it stands after each (docs: plugins/modules/serve_wait.py)."""

from __future__ import annotations

import time
import typing as t

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase
from ansible.utils.display import Display
from ansible_collections.sparkops.inference.plugins.plugin_utils._serve_wait import READY, WaitSettings, wait

display = Display()

ARGUMENT_SPEC: dict[str, t.Any] = {
    "url": {"type": "str", "required": True},
    "model": {"type": "str", "required": True},
    "api_key": {"type": "str", "no_log": True},
    "timeout": {"type": "int", "default": 900},
    "report_every": {"type": "int", "default": 30},
    "interval": {"type": "float", "default": 1.0},
    "smoke_test": {"type": "bool", "default": True},
    "unit": {"type": "str"},
}
PROBE = "sparkops.inference.openai_endpoint"


class ActionModule(ActionBase):
    TRANSFERS_FILES = False

    def run(self, tmp: t.Any = None, task_vars: dict[str, t.Any] | None = None) -> dict[str, t.Any]:
        result = super().run(tmp, task_vars)
        task_vars = task_vars or {}
        _validation, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        try:
            settings = WaitSettings(timeout=args["timeout"], report_every=args["report_every"])
        except ValueError as exc:
            raise AnsibleActionFail(f"sparkops.inference.serve_wait: {exc}") from None
        probe_args = {
            "url": args["url"],
            "model": args["model"],
            "interval": args["interval"],
            "smoke_test": args["smoke_test"],
            "fail_on_timeout": False,
        }
        if args["api_key"]:
            probe_args["api_key"] = args["api_key"]
        if args["unit"]:
            # the probe reads the unit after each attempt not ready: a step ends as soon as the unit gave up, and
            # returns the unit's state the progress line gives (unit_state)
            probe_args["unit"] = args["unit"]

        def probe(seconds: int) -> dict[str, t.Any]:
            answer = self._execute_module(module_name=PROBE, module_args={**probe_args, "timeout": seconds}, task_vars=task_vars)
            answer.pop("invocation", None)
            return answer

        host = str(task_vars.get("inventory_hostname", "?"))
        try:
            outcome = wait(settings, probe, host=host, clock=time.monotonic, say=display.display)
        finally:
            self._remove_tmp_path(self._connection._shell.tmpdir)
        result.update(outcome.endpoint)
        result.update(
            changed=False,
            ready=outcome.ended_by == READY,
            ended_by=outcome.ended_by,
            waited=round(outcome.waited, 1),
            unit_state=outcome.unit_state,
            reports=outcome.reports,
        )
        return result
