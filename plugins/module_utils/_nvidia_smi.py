# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Parse ``nvidia-smi --query-gpu`` and ``--query-compute-apps`` CSV output.

Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.

The queries are run with ``--format=csv,nounits``: a header line naming the fields (units stay in the header, e.g.
``memory.total [MiB]``; ``used_memory`` is printed as ``used_gpu_memory [MiB]``), then one line per GPU or
process, fields separated by ``", "``. The parsers read the header, so any field order works, and accept values
with or without the `` MiB`` unit. A field the driver cannot report reads ``[N/A]`` (a GB10 reports
``memory.total``, ``memory.used`` and ``memory.free`` so: its memory is unified with the CPU's) or
``[Not Supported]``; both parse as None. A process name holding ``", "`` stays whole.
"""

from __future__ import annotations

import typing as t
from dataclasses import dataclass

GPU_FIELDS = ("index", "name", "uuid", "pci.bus_id", "driver_version", "compute_cap", "memory.total", "memory.used", "memory.free")
APP_FIELDS = ("pid", "gpu_uuid", "used_memory", "process_name")
CSV_FORMAT = "csv,nounits"
_ALIASES = {"used_gpu_memory": "used_memory"}
_UNAVAILABLE = frozenset({"[N/A]", "N/A", "[Not Supported]", "Not Supported", "[Unknown Error]", "[Insufficient Permissions]"})


class NvidiaSmiError(ValueError):
    """nvidia-smi output that cannot be parsed; the message quotes the line."""


@dataclass(frozen=True)
class Gpu:
    index: int
    name: str
    uuid: str
    bus_id: str
    driver_version: str
    memory_total_mib: int | None
    memory_used_mib: int | None
    memory_free_mib: int | None
    # The CUDA compute capability (``12.1`` on a GB10, ``9.0`` on an H200); None where the output has no such field.
    compute_cap: str | None = None

    @property
    def unified(self) -> bool:
        """True when the driver reports no memory size: the GPU shares the host's memory (GB10)."""
        return self.memory_total_mib is None

    def as_dict(self) -> dict[str, t.Any]:
        return {
            "index": self.index,
            "name": self.name,
            "uuid": self.uuid,
            "bus_id": self.bus_id,
            "driver_version": self.driver_version,
            "memory_total_mib": self.memory_total_mib,
            "memory_used_mib": self.memory_used_mib,
            "memory_free_mib": self.memory_free_mib,
            "compute_cap": self.compute_cap,
            "unified_memory": self.unified,
        }


@dataclass(frozen=True)
class ComputeApp:
    pid: int
    gpu_uuid: str
    used_mib: int | None
    name: str


def query_args(kind: str) -> list[str]:
    """The nvidia-smi arguments for ``kind`` ('gpu' or 'compute-apps') in the field order the parsers expect."""
    if kind not in ("gpu", "compute-apps"):
        raise ValueError(f"unknown nvidia-smi query {kind!r}: 'gpu' or 'compute-apps'")
    fields = GPU_FIELDS if kind == "gpu" else APP_FIELDS
    return [f"--query-{kind}={','.join(fields)}", f"--format={CSV_FORMAT}"]


def _value(raw: str) -> str | None:
    value = raw.strip()
    return None if value in _UNAVAILABLE else value


def _mib(raw: str, line: str) -> int | None:
    value = _value(raw)
    if value is None:
        return None
    value = value.removesuffix("MiB").strip()
    try:
        return int(value)
    except ValueError:
        raise NvidiaSmiError(f"nvidia-smi printed a memory size that is not a number of MiB: {line!r}") from None


def parse_csv(text: str, query: str, required: t.Iterable[str] = ()) -> list[dict[str, str]]:
    """Rows of a ``--format=csv[,nounits]`` output (with its header) as field -> raw value.

    ``query`` names the query for messages. Lines starting with ``#`` are skipped. A row with more values than the
    header has fields (a ``", "`` inside a process name) folds the extra ones into ``process_name``. A header without
    one of the ``required`` fields is an error (output run with ``noheader`` would otherwise read as no rows).
    """
    lines = [line for line in text.splitlines() if line.strip() and not line.startswith("#")]
    if not lines:
        return []
    header = [_ALIASES.get(name, name) for name in (field.split(" [")[0].strip() for field in lines[0].split(", "))]
    missing = [name for name in required if name not in header]
    if missing:
        raise NvidiaSmiError(f"nvidia-smi --query-{query} printed no {', '.join(missing)} field in its header line: {lines[0]!r}")
    rows = []
    for line in lines[1:]:
        values = line.split(", ")
        extra = len(values) - len(header)
        if extra > 0 and "process_name" in header:
            at = header.index("process_name")
            values[at : at + extra + 1] = [", ".join(values[at : at + extra + 1])]
        if len(values) != len(header):
            raise NvidiaSmiError(f"nvidia-smi --query-{query} printed {len(values)} fields, expected {len(header)}: {line!r}")
        rows.append(dict(zip(header, values, strict=True)))
    return rows


def _field(row: dict[str, str], name: str, query: str) -> str:
    try:
        return row[name]
    except KeyError:
        raise NvidiaSmiError(f"nvidia-smi --query-{query} output has no {name} field: {row!r}") from None


def _int(raw: str, what: str, query: str, line: str) -> int:
    try:
        return int(raw.strip())
    except ValueError:
        raise NvidiaSmiError(f"nvidia-smi --query-{query} printed a {what} that is not a number ({raw.strip()!r}): {line!r}") from None


def parse_gpus(text: str) -> list[Gpu]:
    """Parse ``nvidia-smi --query-gpu=<GPU_FIELDS> --format=csv,nounits`` (header included)."""
    gpus = []
    for row in parse_csv(text, "gpu", ("index", "name", "memory.total")):
        line = ", ".join(row.values())
        gpus.append(
            Gpu(
                index=_int(_field(row, "index", "gpu"), "GPU index", "gpu", line),
                name=_field(row, "name", "gpu").strip(),
                uuid=row.get("uuid", "").strip(),
                bus_id=row.get("pci.bus_id", "").strip(),
                driver_version=row.get("driver_version", "").strip(),
                memory_total_mib=_mib(_field(row, "memory.total", "gpu"), line),
                memory_used_mib=_mib(row.get("memory.used", "[N/A]"), line),
                memory_free_mib=_mib(row.get("memory.free", "[N/A]"), line),
                compute_cap=_value(row.get("compute_cap", "[N/A]")),
            )
        )
    return gpus


def parse_compute_apps(text: str) -> list[ComputeApp]:
    """Parse ``nvidia-smi --query-compute-apps=<APP_FIELDS> --format=csv,nounits`` (header included)."""
    apps = []
    for row in parse_csv(text, "compute-apps", ("pid", "process_name")):
        line = ", ".join(row.values())
        apps.append(
            ComputeApp(
                pid=_int(_field(row, "pid", "compute-apps"), "pid", "compute-apps", line),
                gpu_uuid=row.get("gpu_uuid", "").strip(),
                used_mib=_mib(row.get("used_memory", "[N/A]"), line),
                name=_field(row, "process_name", "compute-apps").strip(),
            )
        )
    return apps
