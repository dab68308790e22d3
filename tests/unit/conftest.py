# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Shared pytest configuration for the unit tests when run with plain pytest (`make unit`).

The collection is imported as ``ansible_collections.sparkops.inference``: `make setup` links the checkout
into ``.collections/ansible_collections/sparkops/inference``, so ``.collections`` goes on ``sys.path``.

pytest's default ``prepend`` import mode imports each test file as a top-level module named after its file, so no two
test files under tests/unit share a basename: a module util's tests are ``test__<util>.py`` (``test_`` and the file
name of ``_<util>.py``), apart from ``test_<module>.py`` of the module or action plugin of the same name.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

UNIT = Path(__file__).resolve().parent
if str(UNIT) not in sys.path:
    sys.path.insert(0, str(UNIT))  # shared test helpers such as sysfs_tree
COLLECTIONS = Path(__file__).resolve().parents[2] / ".collections"
if (COLLECTIONS / "ansible_collections" / "sparkops" / "inference").is_dir() and str(COLLECTIONS) not in sys.path:
    sys.path.insert(0, str(COLLECTIONS))


@pytest.fixture(autouse=True)
def _fresh_module_warnings() -> None:
    """ansible-core keeps a module's warnings and deprecations in process-wide dicts until the module exits; a test
    that ends a module another way (an exception) would leave its warnings to the next test's module result."""
    from ansible.module_utils.common import warnings

    warnings._global_warnings.clear()
    warnings._global_deprecations.clear()
