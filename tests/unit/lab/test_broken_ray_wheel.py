# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The broken Ray release the serve scenario upgrades to (sparklab.broken_ray_wheel): pip installs it offline as the
version asked for, `import ray` reports that version, and `ray start` fails with the lab's message."""

from __future__ import annotations

import subprocess
import sys
import venv
import zipfile
from pathlib import Path

from sparklab import broken_ray_wheel


def test_the_wheel_installs_as_that_ray_version_and_ray_start_fails(tmp_path: Path) -> None:
    wheel = broken_ray_wheel.build(tmp_path / "wheels", "2.60.1")
    assert wheel.name == "ray-2.60.1-py3-none-any.whl"
    with zipfile.ZipFile(wheel) as archive:
        assert archive.read("ray-2.60.1.dist-info/entry_points.txt") == b"[console_scripts]\nray = ray.scripts.scripts:main\n"
        assert archive.testzip() is None
    venv.EnvBuilder(with_pip=False).create(tmp_path / "venv")
    python = tmp_path / "venv" / "bin" / "python"
    # pip from this interpreter installs into the new venv (--python): no index, no network.
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", "--no-index", str(wheel)], check=True)
    version = subprocess.run([str(python), "-c", "import ray; print(ray.__version__)"], capture_output=True, text=True, check=True)
    assert version.stdout.strip() == "2.60.1"
    start = subprocess.run([str(tmp_path / "venv" / "bin" / "ray"), "start", "--head"], capture_output=True, text=True, check=False)
    assert start.returncode == 1
    assert "lab stand-in: a Ray release that does not start" in start.stderr
    nodes = subprocess.run([str(python), "-c", "import ray; ray.nodes()"], capture_output=True, text=True, check=False)
    assert nodes.returncode != 0 and "AttributeError" in nodes.stderr  # the cluster can never be asked for its nodes
