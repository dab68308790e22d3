# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The engine workarounds a GB10 (compute capability 12.x) needs for the model's quantization, chosen from facts.

Note that this plugin util is **PRIVATE** to the collection. It can have breaking changes at any time.

The facts: each node's GPU compute capabilities (``node_recon``'s ``gpu.compute_caps``, from ``nvidia-smi
--query-gpu=compute_cap``), the model's ``config.json`` (its quantization, read where vLLM reads it), and the vLLM
release the nodes run. :func:`choose` returns the rows of `ROWS` that apply, each with the environment it sets, why
and its sources, and warnings for what the table cannot judge; :func:`apply` takes the role's switches
(``vllm_serve_kernel_workarounds``, ``vllm_serve_kernel_workarounds_skip``) and ``vllm_serve_extra_env`` (which wins
over any row) and returns the environment for the engine's unit and the record of what was applied.

Where vLLM finds the quantization (vLLM 0.32.0, ``vllm/model_executor/model_loader/weight_utils.py:235-242``):
``quantization_config`` of the config, else of its ``text_config`` (vision models), else ``compression_config``. Its
``quant_method`` names the method; FP8 checkpoints with ``weight_block_size`` (two numbers, e.g. ``[128, 128]``) are
block-scaled (``vllm/model_executor/layers/quantization/fp8.py:163``, checked as two dimensions at ``:122-134``):
Qwen3.5-122B-A10B-FP8, the model the collection was built for, is one.

The rows (what each was checked against is in its ``checked`` text; the README's "Known GB10 failures handled" has
the links):

* ``cutlass_fp8_block_scaled``: on 12.x with block-scaled FP8, ``VLLM_DISABLED_KERNELS=CutlassFp8BlockScaledMMKernel``.
  The CUTLASS kernel fails on SM12.1 with ``cutlass_gemm_caller ... Error Internal`` (vllm-project/vllm#43367 with an
  FP8 MoE, #40758 with Qwen3.6-35B-A3B-FP8 on GB10; tile configurations that need more shared memory than SM12x's
  ~99 KiB a block: NVIDIA/cutlass#3144). vLLM skips a kernel whose class name is in ``VLLM_DISABLED_KERNELS``
  (0.32.0 ``vllm/model_executor/kernels/linear/__init__.py:633``) and takes the next of its FP8 block kernels, Triton
  among them (``:478-492``). The class is ``scaled_mm/cutlass.py:277`` in 0.32.0; the same name and check are in the
  aarch64 wheels of 0.30.0, 0.31.0, 0.33.0 and 0.34.0. In a release without the class the name matches nothing.
* ``deep_gemm_fp8``: on 12.x with block-scaled FP8, ``VLLM_USE_DEEP_GEMM=0``, from vLLM 0.32.0 on. DeepGEMM's FP8
  warm-up fails on SM12x with ``Unknown recipe`` (vllm-project/vllm#47130, reported with 0.24). From 0.32.0 the
  wheel carries DeepGEMM itself (``vllm/third_party/deep_gemm/_C_extension.abi3.so``, whose strings hold
  ``Unknown recipe``), and vLLM uses it on the 12.x family (``CudaPlatform.support_deep_gemm``,
  ``vllm/platforms/cuda.py:689-695`` in 0.32.0); 0.30.0 and 0.31.0 carry none, so PyPI's wheels of them never run
  DeepGEMM. Not run on a GB10 here: that the assertion still fires in 0.32+ is taken from the reports, not seen.

A release this table was not checked against (newer than `NEWEST_CHECKED`, or an image whose vLLM is unknown) takes
the rows as the newest checked release would, with a warning. On any other GPU no row applies. A quantized model
on 12.x that no row knows (NVFP4, AWQ, GPTQ, per-tensor FP8, ...) gets a warning naming the model, its
``quant_method`` and the compute capability: PyPI's wheels carry sm_120 kernels and none for sm_121, and the
failures above were found one model at a time.
"""

from __future__ import annotations

import re
import typing as t
from dataclasses import dataclass, field

Release = tuple[int, int, int]

# The GPU family the rows are for: the GB10 is 12.1 (sm_121); 12.0 is the RTX 50 / RTX PRO Blackwell family that
# shares its kernels.
FAMILY_MAJOR = 12
# The newest vLLM release the rows were checked against (its aarch64 wheel on PyPI).
NEWEST_CHECKED: Release = (0, 34, 0)
CHECKED = "the aarch64 wheels of vLLM 0.30.0, 0.31.0, 0.32.0, 0.33.0 and 0.34.0"
BLOCK_FP8 = "block-scaled FP8"


class WorkaroundInputError(ValueError):
    """Input of the wrong shape; the message names it."""


@dataclass(frozen=True)
class Row:
    """One known failure on the 12.x family and the environment that avoids it."""

    name: str
    env: tuple[tuple[str, str], ...]
    quantization: str
    first: Release | None
    failure: str
    why: str
    sources: tuple[str, ...]
    checked: str

    def applies_to(self, release: Release | None) -> bool:
        """Whether the row is for this vLLM release (None: unknown, taken as the newest checked)."""
        if self.first is None:
            return True
        return (release or NEWEST_CHECKED) >= self.first


ROWS: tuple[Row, ...] = (
    Row(
        name="cutlass_fp8_block_scaled",
        env=(("VLLM_DISABLED_KERNELS", "CutlassFp8BlockScaledMMKernel"),),
        quantization=BLOCK_FP8,
        first=None,
        failure="cutlass_gemm_caller ... Error Internal in CutlassFp8BlockScaledMMKernel",
        why=(
            "vLLM's CUTLASS block-scaled FP8 GEMM fails on SM12.1 (its tile configurations need more shared memory than a "
            "GB10 has per block); disabled, vLLM takes its next FP8 block kernel (Triton)"
        ),
        sources=(
            "https://github.com/vllm-project/vllm/issues/43367",
            "https://github.com/vllm-project/vllm/issues/40758",
            "https://github.com/NVIDIA/cutlass/issues/3144",
        ),
        checked=f"VLLM_DISABLED_KERNELS and CutlassFp8BlockScaledMMKernel in {CHECKED}",
    ),
    Row(
        name="deep_gemm_fp8",
        env=(("VLLM_USE_DEEP_GEMM", "0"),),
        quantization=BLOCK_FP8,
        first=(0, 32, 0),
        failure="DeepGEMM's FP8 warm-up: Unknown recipe",
        why=("from vLLM 0.32.0 the wheel carries DeepGEMM and vLLM uses it on the 12.x family; its FP8 warm-up asserts 'Unknown recipe' on SM12x"),
        sources=("https://github.com/vllm-project/vllm/issues/47130",),
        checked=(
            "vllm/third_party/deep_gemm in the wheels of 0.32.0, 0.33.0 and 0.34.0 (none in 0.30.0 and 0.31.0), "
            "support_deep_gemm including the 12.x family in all five; the failure itself not run on a GB10"
        ),
    ),
)
ROW_NAMES: tuple[str, ...] = tuple(row.name for row in ROWS)

_VERSION = re.compile(r"v?(?P<release>[0-9]+(?:\.[0-9]+){1,3})(?:(?:a|b|rc)[0-9]+)?(?:\.post[0-9]+)?(?:\.dev[0-9]+)?(?:\+[A-Za-z0-9.]+)?")
_CAPABILITY = re.compile(r"(?P<major>[0-9]+)\.(?P<minor>[0-9]+)")


@dataclass(frozen=True)
class Quantization:
    """The model's quantization as vLLM reads it: its method (None: not quantized) and its kind."""

    method: str | None
    kind: str | None
    where: str | None

    def as_dict(self) -> dict[str, t.Any]:
        return {"quant_method": self.method, "kind": self.kind, "config_key": self.where}


def parse_release(version: str | None) -> Release | None:
    """The release of a vLLM version (``0.32.0``, ``0.32.0+cpu``, ``v0.31.0``), or None."""
    if not version:
        return None
    match = _VERSION.fullmatch(version.strip())
    if match is None:
        return None
    parts = [int(p) for p in match.group("release").split(".")][:3]
    return (parts[0], parts[1], parts[2] if len(parts) > 2 else 0)


def _show(release: Release) -> str:
    return ".".join(str(p) for p in release)


def quantization(config: t.Mapping[str, t.Any]) -> Quantization:
    """The quantization of a model's ``config.json``, from the first key vLLM 0.32.0 reads it from."""
    if not isinstance(config, t.Mapping):
        raise WorkaroundInputError(f"the model's config.json must be a JSON object, got {type(config).__name__}")
    text_config = config.get("text_config")
    candidates: list[tuple[str, t.Any]] = [("quantization_config", config.get("quantization_config"))]
    if isinstance(text_config, t.Mapping):
        candidates.append(("text_config.quantization_config", text_config.get("quantization_config")))
    candidates.append(("compression_config", config.get("compression_config")))
    for where, section in candidates:
        if section is None:
            continue
        if not isinstance(section, t.Mapping):
            raise WorkaroundInputError(f"the model's config.json has a {where} that is not a JSON object: {section!r:.80}")
        method = section.get("quant_method")
        method = str(method).strip().lower() if method not in (None, "") else "unknown"
        block = section.get("weight_block_size")
        is_block = isinstance(block, list) and len(block) == 2 and all(isinstance(n, int) and not isinstance(n, bool) for n in block)
        kind = BLOCK_FP8 if "fp8" in method and is_block else None
        return Quantization(method=method, kind=kind, where=where)
    return Quantization(method=None, kind=None, where=None)


def capabilities(compute_caps: t.Mapping[str, t.Any]) -> dict[str, list[str]]:
    """Host -> its GPUs' compute capabilities (strings like ``12.1``), checked; an empty list where none was read."""
    if not isinstance(compute_caps, t.Mapping):
        raise WorkaroundInputError(f"the compute capabilities must map each host to a list, got {type(compute_caps).__name__}")
    result: dict[str, list[str]] = {}
    for host, caps in compute_caps.items():
        if caps is None:
            caps = []
        if not isinstance(caps, (list, tuple)) or not all(isinstance(cap, str) for cap in caps):
            raise WorkaroundInputError(f"host {host}: the compute capabilities must be a list of strings like '12.1', got {caps!r:.80}")
        bad = [cap for cap in caps if not _CAPABILITY.fullmatch(cap.strip())]
        if bad:
            raise WorkaroundInputError(f"host {host}: {bad[0]!r} is not a compute capability like '12.1'")
        result[str(host)] = [cap.strip() for cap in caps]
    return result


def _in_family(cap: str) -> bool:
    match = _CAPABILITY.fullmatch(cap)
    return match is not None and int(match.group("major")) == FAMILY_MAJOR


@dataclass
class Choice:
    """The rows the facts call for, and what to say."""

    model: str
    quantization: Quantization
    family_hosts: list[str] = field(default_factory=list)
    unread_hosts: list[str] = field(default_factory=list)
    rows: list[Row] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, t.Any]:
        return {
            "model": self.model,
            "quantization": self.quantization.as_dict(),
            "family_hosts": list(self.family_hosts),
            "unread_hosts": list(self.unread_hosts),
            "rows": [row_dict(row) for row in self.rows],
            "warnings": list(self.warnings),
        }


def row_dict(row: Row) -> dict[str, t.Any]:
    return {
        "name": row.name,
        "env": dict(row.env),
        "quantization": row.quantization,
        "failure": row.failure,
        "why": row.why,
        "sources": list(row.sources),
        "checked": row.checked,
    }


def choose(model: str, config: t.Mapping[str, t.Any], compute_caps: t.Mapping[str, t.Any], vllm_version: str | None) -> Choice:
    """The rows for ``model`` (its ``config.json``) on these hosts (host -> compute capabilities) with this vLLM."""
    quant = quantization(config)
    caps = capabilities(compute_caps)
    choice = Choice(model=str(model), quantization=quant)
    choice.family_hosts = [host for host, host_caps in caps.items() if any(_in_family(cap) for cap in host_caps)]
    choice.unread_hosts = [host for host, host_caps in caps.items() if not host_caps]
    if quant.method is None:
        return choice
    if choice.unread_hosts:
        choice.warnings.append(
            f"the GPU compute capability of {', '.join(choice.unread_hosts)} could not be read (nvidia-smi --query-gpu=compute_cap): "
            f"the GB10 workarounds for {model} ({quant.method}) are judged on the other nodes only"
        )
    if not choice.family_hosts:
        return choice
    family = sorted({cap for host in choice.family_hosts for cap in caps[host] if _in_family(cap)})
    release = parse_release(vllm_version)
    rows = [row for row in ROWS if row.quantization == quant.kind]
    if not rows:
        choice.warnings.append(
            f"{model}: quant_method {quant.method} on compute capability {', '.join(family)} ({', '.join(choice.family_hosts)}) "
            "has no known workaround in the collection's table (it knows block-scaled FP8); vLLM's PyPI wheels carry sm_120 "
            "kernels and none for sm_121: if the engine fails at load, see roles/vllm_serve/README.md, Known GB10 failures handled"
        )
        return choice
    choice.rows = [row for row in rows if row.applies_to(release)]
    if release is None or release > NEWEST_CHECKED:
        what = f"vLLM {vllm_version}" if vllm_version else "a vLLM whose version is not known"
        choice.warnings.append(
            f"{model} ({quant.kind}) on compute capability {', '.join(family)} with {what}: the GB10 workarounds were checked up to "
            f"{_show(NEWEST_CHECKED)} and are applied as for that release ({', '.join(row.name for row in choice.rows)})"
        )
    return choice


@dataclass
class Applied:
    """What the role puts in the engine's environment, and the record of why."""

    env: dict[str, str] = field(default_factory=dict)
    applied: list[dict[str, t.Any]] = field(default_factory=list)
    skipped: list[dict[str, t.Any]] = field(default_factory=list)
    note: str = ""

    def as_dict(self) -> dict[str, t.Any]:
        return {"env": dict(self.env), "applied": list(self.applied), "skipped": list(self.skipped), "note": self.note}


def apply(choice: t.Mapping[str, t.Any] | None, enabled: bool, skip: t.Sequence[str], extra_env: t.Mapping[str, t.Any]) -> Applied:
    """The environment of the rows ``choice`` holds (:meth:`Choice.as_dict`), less the skipped ones and the variables
    ``extra_env`` sets (they win: each row is overridable by name or by variable)."""
    if not isinstance(skip, (list, tuple)) or not all(isinstance(name, str) for name in skip):
        raise WorkaroundInputError(f"vllm_serve_kernel_workarounds_skip must be a list of row names, got {skip!r:.80}")
    unknown = [name for name in skip if name not in ROW_NAMES]
    if unknown:
        raise WorkaroundInputError(f"vllm_serve_kernel_workarounds_skip names {', '.join(unknown)}, not a row of the table ({', '.join(ROW_NAMES)})")
    if not isinstance(extra_env, t.Mapping):
        raise WorkaroundInputError(f"vllm_serve_extra_env must be a dict, got {type(extra_env).__name__}")
    result = Applied()
    if choice is None:
        result.note = "not chosen: the preflight did not read the model's config.json (sparkops_model_fit_check false, or no preflight)"
        return result
    rows = choice.get("rows") if isinstance(choice, t.Mapping) else None
    if not isinstance(rows, list) or not all(isinstance(row, t.Mapping) and isinstance(row.get("env"), t.Mapping) for row in rows):
        raise WorkaroundInputError("the preflight's choice of workarounds has no list of rows with an env each")
    for row in rows:
        entry = {key: row.get(key) for key in ("name", "env", "failure", "why", "sources")}
        if not enabled:
            result.skipped.append({**entry, "because": "vllm_serve_kernel_workarounds is false"})
        elif row.get("name") in skip:
            result.skipped.append({**entry, "because": "named in vllm_serve_kernel_workarounds_skip"})
        elif any(name in extra_env for name in row["env"]):
            names = ", ".join(name for name in row["env"] if name in extra_env)
            result.skipped.append({**entry, "because": f"vllm_serve_extra_env sets {names}"})
        else:
            for name, value in row["env"].items():
                result.env[str(name)] = ",".join(filter(None, [result.env.get(str(name), ""), str(value)])) if name == "VLLM_DISABLED_KERNELS" else str(value)
            result.applied.append(entry)
    result.note = _note(choice, len(result.applied), len(result.skipped))
    return result


def _note(choice: t.Mapping[str, t.Any], applied: int, skipped: int) -> str:
    if applied or skipped:
        return f"{applied} applied, {skipped} skipped"
    quant = (choice.get("quantization") or {}).get("quant_method")
    if quant is None:
        return "none needed: the model is not quantized"
    if not choice.get("family_hosts"):
        return f"none needed: no node has a GPU of compute capability {FAMILY_MAJOR}.x (a GB10)"
    return f"none known for quant_method {quant} on compute capability {FAMILY_MAJOR}.x (the preflight warned)"
