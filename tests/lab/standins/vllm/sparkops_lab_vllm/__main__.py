# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""``python -m sparkops_lab_vllm`` is the ``vllm`` command."""

import sys

from sparkops_lab_vllm.cli import main

if __name__ == "__main__":
    sys.exit(main())
