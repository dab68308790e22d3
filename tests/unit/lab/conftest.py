# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Make the lab tool's package ``sparklab`` (tests/lab/sparklab) importable, and the lab tests' helpers shared.

test_docker_run_images.py drives the docker CLI stand-in against the docker-api stand-in with the fixtures and helpers
of test_standins.py (the ``docker`` fixture) and test_docker_api_standin.py (``Dockerd``, ``call``): this folder goes
on ``sys.path`` so that it imports them rather than copying them (the unit tests import their modules by path).
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
LAB_DIR = HERE.parents[1] / "lab"

for folder in (HERE, LAB_DIR):
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))
