# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Run a module's main() in the test process, its commands answered by a fake (the module tests under
tests/unit/plugins/modules)."""

from __future__ import annotations

import json
import typing as t
from unittest.mock import MagicMock, patch

import pytest
from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.testing import patch_module_args


def run_main(
    main: t.Callable[[], None],
    args: dict[str, t.Any],
    capsys: pytest.CaptureFixture[str],
    bins: t.Mapping[str, str | None],
    run_command: t.Callable[..., tuple[int, str, str]],
) -> tuple[dict[str, t.Any], MagicMock]:
    """Run ``main`` with the module arguments ``args``: a binary found at ``bins[name]`` (missing when not there or
    None), every command answered by ``run_command``; its JSON result and the run_command mock."""
    runner = MagicMock(side_effect=run_command)
    with (
        patch_module_args(args),
        patch.object(AnsibleModule, "get_bin_path", MagicMock(side_effect=lambda name, *_args, **_kwargs: bins.get(name))),
        patch.object(AnsibleModule, "run_command", runner),
        pytest.raises(SystemExit),
    ):
        main()
    return json.loads(capsys.readouterr().out), runner
