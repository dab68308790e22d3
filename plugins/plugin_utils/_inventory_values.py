# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The shapes of inventory values the contract and the deployments' checks share, written once.

Note that this plugin util is **PRIVATE** to the collection. It can have breaking changes at any time.
"""

from __future__ import annotations

import re
import typing as t

# A Hugging Face repository id (org/name).
REPO_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*")
# A non-empty value without whitespace (a revision, a served model name).
TOKEN = re.compile(r"\S+")
DIGITS = re.compile(r"[0-9]+")


def whole_number(value: t.Any) -> int | None:
    """``value`` as a whole number when it is one (an int, or digits as a string; never a bool), else None."""
    if isinstance(value, bool) or not (isinstance(value, int) or (isinstance(value, str) and DIGITS.fullmatch(value))):
        return None
    return int(value)
