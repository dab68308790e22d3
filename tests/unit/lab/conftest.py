# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Make the lab tool's package ``sparklab`` (tests/lab/sparklab) importable."""

from __future__ import annotations

import sys
from pathlib import Path

LAB_DIR = Path(__file__).resolve().parents[2] / "lab"

if str(LAB_DIR) not in sys.path:
    sys.path.insert(0, str(LAB_DIR))
