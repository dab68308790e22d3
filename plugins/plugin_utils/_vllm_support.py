# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Which vLLM build the vllm_serve role's settings give a host, and whether it can run there.

Note that this plugin util is **PRIVATE** to the collection. It can have breaking changes at any time.

A DGX Spark is aarch64 with a GB10 GPU (sm_121) and CUDA 13. Any other architecture is "not a Spark" (the lab is
x86_64 and runs vLLM's CPU build): only the checks that hold everywhere apply there.

Everywhere:

* ``vllm_serve_runtime: docker`` with ``vllm_serve_backend: ray`` is refused. vLLM in its own container cannot
  attach to the raylet of the Ray container: Ray finds the local raylet by its process and unix sockets. The cluster
  gate also runs the host venv's Python, which the docker runtime does not have.
* The docker runtime needs an image pinned by tag or digest.
* ``vllm_serve_backend: mp`` needs vLLM 0.11.1 or later: 0.11.0 has no ``--nnodes``.
* With the venv runtime, ``vllm_serve_version`` is one exact release (the role installs ``vllm==<version>``).
* With the venv runtime, ``vllm_serve_backend: ray`` with a release newer than `NEWEST_CHECKED` (0.34.0) is refused,
  wherever the wheel comes from. This check knows vLLM's Ray executor only up to 0.34.0: 0.34.0 removed the legacy
  compiled-graph executor, and ``RayExecutorV2`` subclasses ``MultiprocExecutor`` (0.30.0 on). The mp backend with a
  newer release is not refused (on a Spark, from PyPI, it gets a note).

On a Spark, with the venv runtime, PyPI decides (`AARCH64_PYPI`):

==================  =====================================================================  =========
vllm_serve_version  PyPI's aarch64 wheel                                                   verdict
==================  =====================================================================  =========
< 0.12.0            none (0.11.x ships ``manylinux1_x86_64`` only; pip would build the     refused
                    sdist)
0.12.0 - 0.19.x     pins ``torch`` 2.9.0 - 2.10.0; PyPI's aarch64 torch before 2.11 is     refused
                    a CPU-only build, so vLLM finds no GPU
0.21.0              none                                                                   refused
>= 0.20.0           pins ``torch`` >= 2.11.0, a CUDA 13 (``+cu130``) build on PyPI         runs, with
                    (0.30.0 to 0.32.0: ``torch==2.13.0``; 0.33.0 and 0.34.0:               a note
                    ``torch==2.14.0``). Kernels are built for sm_120, none for sm_121.
                    The GB10 runs the plain and family sm_120 kernels, not arch-specific
                    sm_120a ones. Known up to 0.34.0 (`NEWEST_CHECKED`); a newer
                    release gets a second note.
==================  =====================================================================  =========

With a custom source (``vllm_serve_pip_index_url``, or ``--index-url``, ``--extra-index-url``, ``--find-links`` or
``--no-index`` in ``vllm_serve_pip_extra_args``) the PyPI rows do not apply: nothing is refused for the source,
and a note says what the source must hold.

With the docker runtime the image decides. NVIDIA's ``nvcr.io/nvidia/vllm:<YY.MM>-py3`` images are built for the
GB10, and `NGC_VLLM` maps the releases whose notes were read to their vLLM version. ``vllm/vllm-openai:v<X.Y.Z>``
names its version. Any other image is unknown: a note says what it must hold.

Sources: the wheels' METADATA (``Requires-Dist: torch==``; no ``ray`` in ``Requires-Dist`` of 0.30.0 to 0.34.0) and
PyPI's aarch64 file list (``manylinux_2_28_aarch64`` abi3 wheels up to 0.34.0, read 2026-12-05); ``torch/version.py``
and the arch list of PyPI's aarch64 torch 2.10.0 (``+cpu``) and 2.11.0/2.13.0 (``+cu130``, ``sm_80 ... sm_120``); a
fatbin scan of vLLM 0.30.0's and 0.34.0's ``_C_stable_libtorch.abi3.so`` (sm_120 ELF, no sm_121, PTX only up to
sm_90); ``vllm/v1/executor/ray_executor_v2.py`` (0.30.0) and ``vllm/v1/executor/abstract.py`` (0.34.0);
vllm-project/vllm#36835 and #52708; NVIDIA's vLLM release notes (docs.nvidia.com/deeplearning/frameworks/
vllm-release-notes/rel-YY-MM.html), NVIDIA/dgx-spark-playbooks#82 (26.02) and gyliu513/langX101#409 (26.08).
roles/vllm_serve/README.md, "Which vLLM on a DGX Spark", has the links.
"""

from __future__ import annotations

import re
import shlex
import typing as t
from dataclasses import dataclass, field

Release = tuple[int, int, int]

SPARK_ARCHITECTURES = frozenset({"aarch64", "arm64"})
RUNTIMES = ("venv", "docker")
BACKENDS = ("ray", "mp")

# The role's defaults for the settings checked here (roles/vllm_serve/defaults/main.yml; a unit test compares them).
# The preflight runs before any role, so the filter fills in what the inventory leaves unset.
ROLE_DEFAULTS: dict[str, str] = {
    "vllm_serve_runtime": "venv",
    "vllm_serve_backend": "mp",
    "vllm_serve_version": "0.32.0",
    "vllm_serve_image": "",
    "vllm_serve_pip_index_url": "",
    "vllm_serve_pip_extra_args": "",
}

# vLLM's multi-node mp mode (--nnodes/--node-rank/--master-addr, --headless on ranks > 0).
MP_FIRST: Release = (0, 11, 1)
# The newest release this table was checked against (PyPI's aarch64 wheels of 0.30.0 to 0.34.0: torch==2.13.0 up to
# 0.32.0, torch==2.14.0 from 0.33.0). It is also the newest release whose Ray executor this check knows: a newer one
# with vllm_serve_backend ray is refused.
NEWEST_CHECKED: Release = (0, 34, 0)


@dataclass(frozen=True)
class WheelRow:
    """vLLM releases ``first`` up to (not including) ``before`` as PyPI ships them for aarch64."""

    first: Release
    before: Release | None
    runs: bool
    why: str


AARCH64_PYPI: tuple[WheelRow, ...] = (
    WheelRow((0, 0, 0), (0, 12, 0), False, "PyPI has no aarch64 wheel of vLLM before 0.12.0 (pip would try to build the sdist)"),
    WheelRow(
        (0, 12, 0),
        (0, 20, 0),
        False,
        "PyPI's aarch64 wheels of vLLM 0.12.0 to 0.19.x pin torch 2.9.0 to 2.10.0, and PyPI's aarch64 torch before 2.11 is a "
        "CPU-only build, so vLLM would find no GPU",
    ),
    WheelRow(
        (0, 20, 0),
        None,
        True,
        "PyPI's aarch64 wheel pins torch 2.11.0 or later, a CUDA 13 (cu130) build; vLLM's and torch's kernels are built for "
        "sm_120, none for sm_121: the GB10 runs the plain and family sm_120 kernels, but a kernel built only as sm_120a is "
        "missing (the FP8 and NVFP4 CUTLASS paths are the exposed ones, vllm-project/vllm#36835)",
    ),
)
AARCH64_PYPI_FIRST_RUNNING: Release = next(row.first for row in AARCH64_PYPI if row.runs)
# Releases inside a "runs" row that have no aarch64 wheel on PyPI.
AARCH64_PYPI_MISSING: frozenset[Release] = frozenset({(0, 21, 0)})

# NVIDIA's vLLM images (nvcr.io/nvidia/vllm:<release>-py3): the vLLM version each release's notes list.
NGC_REPOSITORY = "nvcr.io/nvidia/vllm"
# 26.02 from NVIDIA/dgx-spark-playbooks#82 and 26.08 from gyliu513/langX101#409; the others from NVIDIA's notes.
NGC_VLLM: dict[str, str] = {
    "25.10": "0.10.2",
    "26.01": "0.11.1",
    "26.02": "0.15.1",
    "26.03": "0.17.1",
    "26.05": "0.20.1",
    "26.08": "0.27.1",
    "26.10": "0.31.0",
}
UPSTREAM_REPOSITORY = "vllm/vllm-openai"

_VERSION = re.compile(r"(?P<release>[0-9]+(?:\.[0-9]+){1,3})(?:(?:a|b|rc)[0-9]+)?(?:\.post[0-9]+)?(?:\.dev[0-9]+)?(?:\+[A-Za-z0-9.]+)?")
_NGC_TAG = re.compile(r"(?P<release>[0-9]{2}\.[0-9]{2})(?:\.post[0-9]+)?-py3")
_UPSTREAM_TAG = re.compile(r"v(?P<version>[0-9]+\.[0-9]+(?:\.[0-9]+)?)(?:[-.].*)?")
_CUSTOM_SOURCE_FLAGS = ("-i", "--index-url", "--extra-index-url", "-f", "--find-links", "--no-index")


class SupportSettingsError(ValueError):
    """A setting of the wrong type or an unknown one; the message names it."""


@dataclass(frozen=True)
class Settings:
    """The vllm_serve settings that decide the build, by the role's variable names."""

    runtime: str
    backend: str
    version: str
    image: str
    pip_index_url: str
    pip_extra_args: str

    @classmethod
    def from_mapping(cls, values: t.Mapping[str, t.Any]) -> Settings:
        """Take ``vllm_serve_*`` variables; unset ones take the role's defaults. Only strings are accepted."""
        if not isinstance(values, t.Mapping):
            raise SupportSettingsError(f"the settings must be a dict of vllm_serve_* variables, got {type(values).__name__}")
        unknown = sorted(str(name) for name in values if name not in ROLE_DEFAULTS)
        if unknown:
            raise SupportSettingsError(f"unknown setting(s): {', '.join(unknown)}; known: {', '.join(ROLE_DEFAULTS)}")
        merged = {**ROLE_DEFAULTS, **values}
        for name, value in merged.items():
            if value is None and name in ("vllm_serve_image", "vllm_serve_pip_index_url", "vllm_serve_pip_extra_args"):
                merged[name] = ""
            elif not isinstance(value, str):
                hint = " (quote it in YAML, e.g. '0.30.0')" if name == "vllm_serve_version" else ""
                raise SupportSettingsError(f"{name} must be a string{hint}, got {value!r}")
        return cls(
            runtime=merged["vllm_serve_runtime"],
            backend=merged["vllm_serve_backend"],
            version=merged["vllm_serve_version"].strip(),
            image=merged["vllm_serve_image"].strip(),
            pip_index_url=merged["vllm_serve_pip_index_url"].strip(),
            pip_extra_args=merged["vllm_serve_pip_extra_args"],
        )


@dataclass
class Verdict:
    """What the settings give this host: problems refuse the run, notes are shown."""

    spark: bool
    vllm_version: str | None = None
    source: str = ""
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, t.Any]:
        return {
            "spark": self.spark,
            "vllm_version": self.vllm_version,
            "source": self.source,
            "problems": list(self.problems),
            "notes": list(self.notes),
        }


def parse_release(version: str) -> Release | None:
    """The release part of a PEP 440 version (``0.30.0``, ``0.30``, ``0.13.0+cu130``, ``0.20.0rc1``), or None."""
    match = _VERSION.fullmatch(version.strip())
    if match is None:
        return None
    parts = [int(p) for p in match.group("release").split(".")][:3]
    return (parts[0], parts[1], parts[2] if len(parts) > 2 else 0)


def show(release: Release) -> str:
    return ".".join(str(p) for p in release)


def aarch64_wheel(release: Release) -> WheelRow:
    """The row of `AARCH64_PYPI` that holds ``release``."""
    for row in AARCH64_PYPI:
        if release >= row.first and (row.before is None or release < row.before):
            return row
    raise AssertionError(f"AARCH64_PYPI does not cover {release}")  # the rows run from 0.0.0 with no gap


def image_vllm_version(image: str) -> str | None:
    """The vLLM version a known image holds (NVIDIA's by release, upstream's by tag), or None."""
    name = image.split("@", 1)[0]
    tagged = ":" in name.rsplit("/", 1)[-1]
    repository = name.rsplit(":", 1)[0] if tagged else name
    tag = name.rsplit(":", 1)[1] if tagged else ""
    if repository == NGC_REPOSITORY:
        ngc = _NGC_TAG.fullmatch(tag)
        return NGC_VLLM.get(ngc.group("release")) if ngc else None
    if repository in (UPSTREAM_REPOSITORY, f"docker.io/{UPSTREAM_REPOSITORY}"):
        upstream = _UPSTREAM_TAG.fullmatch(tag)
        return upstream.group("version") if upstream else None
    return None


def is_pinned(image: str) -> bool:
    """The role's rule: a digest, or a tag on the last path component."""
    return "@sha256:" in image or ":" in image.rsplit("/", 1)[-1]


def custom_source(settings: Settings) -> bool | None:
    """Whether pip takes vLLM from somewhere other than PyPI; None when the extra args do not split."""
    if settings.pip_index_url:
        return True
    try:
        words = shlex.split(settings.pip_extra_args)
    except ValueError:
        return None
    return any(word.split("=", 1)[0] in _CUSTOM_SOURCE_FLAGS for word in words)


def _docker(settings: Settings, verdict: Verdict) -> None:
    verdict.source = "image"
    if settings.backend == "ray":
        verdict.problems.append(
            "vllm_serve_runtime docker with vllm_serve_backend ray is not supported: vLLM in its own container cannot attach to "
            "the raylet in the Ray container (Ray finds the local raylet by its process and unix sockets), and the cluster gate "
            "runs the host venv's Python, which the docker runtime does not install; use vllm_serve_backend mp with the docker "
            "runtime, or vllm_serve_runtime venv with Ray"
        )
    if not is_pinned(settings.image):
        verdict.problems.append(
            f"vllm_serve_runtime docker needs vllm_serve_image pinned by tag or digest (e.g. {NGC_REPOSITORY}:26.10-py3@sha256:...), got {settings.image!r}"
        )
        return
    verdict.vllm_version = image_vllm_version(settings.image)
    if verdict.vllm_version is None:
        needs = [f"vLLM {show(MP_FIRST)} or later (mp backend)"] if settings.backend == "mp" else []
        if verdict.spark:
            needs.insert(0, "an arm64 build for CUDA 13 with kernels the GB10 (sm_121) runs")
        if needs:
            verdict.notes.append(f"vllm_serve_image {settings.image}: not an image this check knows; it must hold {' and '.join(needs)}")


def _venv(settings: Settings, verdict: Verdict) -> Release | None:
    release = parse_release(settings.version)
    if release is None:
        verdict.problems.append(
            f"vllm_serve_version must be one exact vLLM release like {ROLE_DEFAULTS['vllm_serve_version']} "
            f"(the role installs vllm==<version>), got {settings.version!r}"
        )
        return None
    verdict.vllm_version = settings.version
    custom = custom_source(settings)
    if custom is None:
        verdict.problems.append("vllm_serve_pip_extra_args does not split into words (an unclosed quote?)")
        return release
    verdict.source = "custom index" if custom else "PyPI"
    if not verdict.spark:
        return release
    if custom:
        row = aarch64_wheel(release)
        what = "a CUDA torch" if row.runs else "a CUDA 13 torch (PyPI's aarch64 torch for it is CPU-only)"
        verdict.notes.append(
            f"vllm_serve_version {settings.version} from a custom index (vllm_serve_pip_index_url or vllm_serve_pip_extra_args): "
            f"the index must hold an aarch64 CUDA 13 build of vllm {settings.version} with sm_121 (or sm_120 family) kernels, "
            f"and {what}; this check cannot see it"
        )
        return release
    row = aarch64_wheel(release)
    where = f"vllm_serve_version {settings.version} cannot run on this aarch64 host (a DGX Spark) from PyPI"
    fixes = (
        f"use a release from {show(AARCH64_PYPI_FIRST_RUNNING)} on that PyPI has for aarch64 (the role's default is "
        f"{ROLE_DEFAULTS['vllm_serve_version']}), set vllm_serve_pip_index_url to an index with an aarch64 CUDA 13 build, or "
        f"use vllm_serve_runtime docker with NVIDIA's image ({NGC_REPOSITORY}) and vllm_serve_backend mp"
    )
    if not row.runs:
        verdict.problems.append(f"{where}: {row.why}; {fixes}")
    elif release in AARCH64_PYPI_MISSING:
        verdict.problems.append(f"{where}: PyPI has no aarch64 wheel of vLLM {show(release)}; {fixes}")
    else:
        verdict.notes.append(
            f"vllm_serve_version {settings.version} from PyPI on a DGX Spark: {row.why}. If the engine stops with "
            "'no kernel image is available', set vllm_serve_pip_index_url to an index with sm_121 builds, or use NVIDIA's "
            f"image ({NGC_REPOSITORY}) with vllm_serve_runtime docker and vllm_serve_backend mp"
        )
        if release > NEWEST_CHECKED:
            verdict.notes.append(
                f"vllm_serve_version {settings.version} is newer than the newest release this check knows ({show(NEWEST_CHECKED)}); "
                "it is taken to install like 0.20.0 and later"
            )
    return release


def check(settings: Settings, architecture: str) -> Verdict:
    """Check the settings for a host of ``architecture`` (``ansible_facts.architecture``)."""
    verdict = Verdict(spark=architecture.strip().lower() in SPARK_ARCHITECTURES)
    if settings.runtime not in RUNTIMES:
        verdict.problems.append(f"vllm_serve_runtime must be one of {', '.join(RUNTIMES)}, got {settings.runtime!r}")
    if settings.backend not in BACKENDS:
        verdict.problems.append(f"vllm_serve_backend must be one of {', '.join(BACKENDS)}, got {settings.backend!r}")
    if verdict.problems:
        return verdict
    if settings.runtime == "docker":
        _docker(settings, verdict)
        release = parse_release(verdict.vllm_version) if verdict.vllm_version else None
        named, fix = f"vllm_serve_image {settings.image} (vLLM {verdict.vllm_version})", f"an image with vLLM {show(MP_FIRST)} or later"
    else:
        release = _venv(settings, verdict)
        named, fix = f"vllm_serve_version {settings.version}", f"{show(MP_FIRST)} or later, or vllm_serve_backend ray"
    if settings.backend == "mp" and release is not None and release < MP_FIRST:
        verdict.problems.append(
            f"{named} with vllm_serve_backend mp: vLLM's multi-node mp mode (--nnodes, --node-rank, --master-addr) exists only "
            f"since {show(MP_FIRST)}; use {fix}"
        )
    # Wherever the wheel comes from (PyPI or a custom index): the question is the Ray executor, not the source.
    # The docker runtime is refused with Ray above.
    if settings.runtime == "venv" and settings.backend == "ray" and release is not None and release > NEWEST_CHECKED:
        newest = show(NEWEST_CHECKED)
        verdict.problems.append(
            f"vllm_serve_version {settings.version} with vllm_serve_backend ray: this check knows vLLM's Ray executor only up "
            f"to {newest} ({newest} removed the legacy compiled-graph executor; RayExecutorV2 subclasses MultiprocExecutor), "
            f"so a newer release may not run it; use vllm_serve_backend mp (vLLM's own multi-node mode), or a release up "
            f"to {newest}"
        )
    return verdict
