# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The lab's vLLM platform plugin (tests/lab/cpu_ray_platform, sparklab.cpu_ray_wheel): a wheel pip installs offline,
whose entry point in vLLM's group `vllm.platform_plugins` names a subclass of vLLM's CpuPlatform with Ray's "GPU" key.

vLLM itself is not installed here: a module `vllm.platforms.cpu` with a `CpuPlatform` (ray_device_key "", as the
0.32.0 wheel's) stands in for it in the venv, only to import the plugin's class. The lab's engine scenario runs it
with the real engine (molecule/serve/tests/test_engine_ray.py)."""

from __future__ import annotations

import subprocess
import sys
import venv
import zipfile
from pathlib import Path

from sparklab import cpu_ray_wheel

PROBE = """
import importlib, importlib.metadata as m
(point,) = m.entry_points(group="vllm.platform_plugins")
name = point.load()()
module, _, cls = name.rpartition(".")
platform = getattr(importlib.import_module(module), cls)
from vllm.platforms.cpu import CpuPlatform
print(point.name, name, issubclass(platform, CpuPlatform), repr(CpuPlatform.ray_device_key), platform.ray_device_key,
      platform.get_device_communicator_cls())
"""


def test_the_wheel_is_deterministic_and_names_its_entry_point(tmp_path: Path) -> None:
    first, second = cpu_ray_wheel.build(tmp_path / "a"), cpu_ray_wheel.build(tmp_path / "b")
    assert first.name == "sparklab_cpu_ray-1.0.0-py3-none-any.whl"
    assert first.read_bytes() == second.read_bytes()
    assert cpu_ray_wheel.requirement() == "sparklab-cpu-ray==1.0.0"
    with zipfile.ZipFile(first) as archive:
        assert archive.testzip() is None
        assert sorted(n for n in archive.namelist() if n.startswith("sparklab_cpu_ray/")) == [
            "sparklab_cpu_ray/__init__.py",
            "sparklab_cpu_ray/communicator.py",
            "sparklab_cpu_ray/platform.py",
        ]
        points = archive.read("sparklab_cpu_ray-1.0.0.dist-info/entry_points.txt")
        assert points == b"[vllm.platform_plugins]\ncpu_ray = sparklab_cpu_ray:register\n"
        assert "\nName: sparklab-cpu-ray\nVersion: 1.0.0\n" in archive.read("sparklab_cpu_ray-1.0.0.dist-info/METADATA").decode()


def test_installed_the_entry_point_gives_the_cpu_platform_with_ray_s_gpu_key(tmp_path: Path) -> None:
    wheel = cpu_ray_wheel.build(tmp_path / "wheels")
    venv.EnvBuilder(with_pip=False).create(tmp_path / "venv")
    python = tmp_path / "venv" / "bin" / "python"
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", "--no-index", str(wheel)], check=True)
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"], capture_output=True, text=True, check=True)
    site = Path(purelib.stdout.strip())
    (site / "vllm" / "platforms").mkdir(parents=True)
    (site / "vllm" / "__init__.py").write_text("")
    (site / "vllm" / "platforms" / "__init__.py").write_text("")
    (site / "vllm" / "platforms" / "cpu.py").write_text('class CpuPlatform:\n    ray_device_key: str = ""\n')
    probe = subprocess.run([str(python), "-c", PROBE], capture_output=True, text=True, check=True)
    assert probe.stdout.split() == [
        "cpu_ray",
        "sparklab_cpu_ray.platform.CpuRayPlatform",
        "True",
        "''",
        "GPU",
        "sparklab_cpu_ray.communicator.CpuRayCommunicator",
    ]
