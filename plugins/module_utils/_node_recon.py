# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What a node is before anything is deployed on it: OS, GPU, fabric link, memory, disk, inference stacks, versions.

Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.

Read-only and quick: files (``/etc/os-release``, procfs, sysfs, the venvs' ``*.dist-info/METADATA``), ``os.statvfs``
and a few commands (``nvidia-smi``, ``ip``, ``systemctl``, ``docker``) run through the caller's ``run``. Nothing is
imported from, or run in, the venvs (no pip, no Python of theirs). A source that is missing or fails gives None or
an empty list and a line in ``notes``; only bad options raise (:class:`ReconError`).

It reuses the collection's readers: :mod:`._nvidia_smi` and :mod:`._gpu_info` for the GPUs, their processes and the
top memory holders, :mod:`._meminfo`, :mod:`._roce` for the netdev that holds the fabric address and its RDMA
devices, :mod:`._docker_cli` for the containers. ``versions`` has exactly the components of
:data:`._version_drift.COMPONENTS`.
"""

from __future__ import annotations

import fnmatch
import ipaddress
import os
import platform
import re
import typing as t
from dataclasses import dataclass, field
from pathlib import Path

from ansible_collections.sparkops.inference.plugins.module_utils._docker_cli import Container, DockerCli, DockerError
from ansible_collections.sparkops.inference.plugins.module_utils._gpu_info import describe_process, read_text, top_memory
from ansible_collections.sparkops.inference.plugins.module_utils._meminfo import MeminfoError, parse_meminfo
from ansible_collections.sparkops.inference.plugins.module_utils._nvidia_smi import (
    NvidiaSmiError,
    parse_compute_apps,
    parse_gpus,
    query_args,
)
from ansible_collections.sparkops.inference.plugins.module_utils._roce import RoceError, addresses_from_gids, addresses_from_ip, roce_info
from ansible_collections.sparkops.inference.plugins.module_utils._version_drift import COMPONENTS

# Runs an argv and returns (rc, stdout, stderr).
Runner = t.Callable[[list[str]], tuple[int, str, str]]

MIB = 1024 * 1024
DEFAULT_VENVS = ("/opt/sparkops/ray", "/opt/sparkops/hf")
DEFAULT_UNIT_PATTERNS = ("vllm", "ray", "sglang", "trtllm", "tensorrt", "triton", "llama", "ollama", "tgi", "text-generation", "sparkops")
# The NCCL wheels, CUDA 13 first: the first venv that has one of them gives the version.
NCCL_DISTS = ("nvidia-nccl-cu13", "nvidia-nccl-cu12")
SYSTEMCTL_ENABLED = ("list-unit-files", "--state=enabled", "--no-legend", "--plain")
SYSTEMCTL_ACTIVE = ("list-units", "--state=active", "--no-legend", "--plain")
OS_RELEASE_KEYS = ("id", "version_id", "pretty_name")

_CUDA_VERSION = re.compile(r"CUDA Version\s*:\s*([0-9]+(?:\.[0-9]+)*)")
_NORMALISE = re.compile(r"[-_.]+")
_GLOB = re.compile(r"[*?\[]")
_NCCL_FILE = re.compile(r"libnccl\.so\.([0-9]+\.[0-9]+\.[0-9]+)")


class ReconError(ValueError):
    """An option that cannot be used; the message names the option."""


@dataclass(frozen=True)
class Sources:
    """Where to read from: the roots and paths (tests point them at fake trees) and the commands found (None: absent)."""

    proc_root: Path = Path("/proc")
    sys_root: Path = Path("/sys")
    os_release: Path = Path("/etc/os-release")
    nvidia_smi: str | None = None
    docker: str | None = None
    systemctl: str | None = None
    ip: str | None = None
    # The fabric environment the nccl_env role writes: LD_PRELOAD / VLLM_NCCL_SO_PATH there mean the system's NCCL.
    fabric_env: Path = Path("/etc/sparkops/fabric.env")


@dataclass(frozen=True)
class Options:
    """The module's options that say what to look for."""

    fabric_ip: str
    model_dir: str
    venvs: tuple[str, ...] = DEFAULT_VENVS
    unit_patterns: tuple[str, ...] = DEFAULT_UNIT_PATTERNS
    top_processes: int = 5
    repo_id: str | None = None


@dataclass(frozen=True)
class Host:
    """What :mod:`platform` says of the interpreter running the module (tests give their own)."""

    machine: str = field(default_factory=platform.machine)
    kernel: str = field(default_factory=platform.release)
    python: str = field(default_factory=platform.python_version)


def check_options(options: Options) -> None:
    """Raise :class:`ReconError` naming the option when one cannot be used."""
    try:
        ipaddress.IPv4Address(options.fabric_ip.strip())
    except ValueError:
        raise ReconError(f"fabric_ip {options.fabric_ip!r} is not an IPv4 address (give the node's sparkops_fabric_ip, without prefix length)") from None
    if not os.path.isabs(options.model_dir):
        raise ReconError(f"model_dir {options.model_dir!r} is not an absolute path")
    if options.repo_id is not None and (options.repo_id.count("/") != 1 or ".." in options.repo_id or options.repo_id.strip() != options.repo_id):
        raise ReconError(f"repo_id {options.repo_id!r} is not a Hugging Face repo id (org/name)")
    if options.top_processes < 0:
        raise ReconError(f"top_processes must be 0 or more, not {options.top_processes}")
    for venv in options.venvs:
        if not os.path.isabs(venv):
            raise ReconError(f"venvs: {venv!r} is not an absolute path")
    for pattern in options.unit_patterns:
        if not pattern.strip():
            raise ReconError("unit_patterns holds an empty pattern")


def _oneline(*texts: str) -> str:
    """The first of ``texts`` that is not blank (stderr, then stdout), on one line."""
    text = next((text for text in texts if text.strip()), "")
    return " | ".join(line.strip() for line in text.strip().splitlines() if line.strip()) or "no output"


# ---------------------------------------------------------------------------------------------------------------
# OS


def parse_os_release(text: str) -> dict[str, str]:
    """``KEY=value`` lines of os-release(5) as lower-case key -> value, quotes and escapes removed."""
    values: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, _sep, value = line.partition("=")
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = re.sub(r"\\(.)", r"\1", value[1:-1])
        values[key.strip().lower()] = value
    return values


def os_info(path: Path, notes: list[str]) -> dict[str, str | None]:
    """``id``, ``version_id`` and ``pretty_name`` from os-release; None (and a note) when it cannot be read."""
    text = read_text(path)
    if text is None:
        notes.append(f"os: cannot read {path}")
        return dict.fromkeys(OS_RELEASE_KEYS)
    values = parse_os_release(text)
    return {key: values.get(key) or None for key in OS_RELEASE_KEYS}


# ---------------------------------------------------------------------------------------------------------------
# GPU


def parse_cuda_version(table: str) -> str | None:
    """The ``CUDA Version`` of nvidia-smi's table (or of ``nvidia-smi -q``): the highest CUDA the driver supports."""
    found = _CUDA_VERSION.search(table)
    return found.group(1) if found else None


def gpu_info(
    run: Runner, nvidia_smi: str | None, proc_root: Path, containers: list[Container] | None, notes: list[str]
) -> tuple[dict[str, t.Any], list[dict[str, t.Any]]]:
    """The ``gpu`` section (driver, CUDA, names, count, compute capabilities) and the compact GPU processes, from nvidia-smi.

    Without nvidia-smi, or when it fails: driver, CUDA and count None, no names, no processes, and a note.
    """
    unknown: dict[str, t.Any] = {"driver": None, "cuda": None, "names": [], "count": None, "compute_caps": []}
    if nvidia_smi is None:
        notes.append("gpu: nvidia-smi not found (no NVIDIA driver?): driver, CUDA and GPUs not reported")
        return unknown, []
    rc, out, err = run([nvidia_smi, *query_args("gpu")])
    if rc != 0:
        notes.append(f"gpu: {nvidia_smi} --query-gpu failed (rc {rc}): {_oneline(err, out)}")
        return unknown, []
    try:
        gpus = parse_gpus(out)
    except NvidiaSmiError as exc:
        notes.append(f"gpu: {exc}")
        return unknown, []
    drivers = list(dict.fromkeys(gpu.driver_version for gpu in gpus if gpu.driver_version))
    section: dict[str, t.Any] = {
        "driver": drivers[0] if drivers else None,
        "cuda": None,
        "names": [gpu.name for gpu in gpus],
        "count": len(gpus),
        "compute_caps": list(dict.fromkeys(gpu.compute_cap for gpu in gpus if gpu.compute_cap)),
    }
    rc, out, err = run([nvidia_smi])
    if rc == 0:
        section["cuda"] = parse_cuda_version(out)
        if section["cuda"] is None:
            notes.append(f"gpu: {nvidia_smi} printed no CUDA Version")
    else:
        notes.append(f"gpu: {nvidia_smi} failed (rc {rc}), CUDA version not reported: {_oneline(err, out)}")
    rc, out, err = run([nvidia_smi, *query_args("compute-apps")])
    processes: list[dict[str, t.Any]] = []
    if rc != 0:
        notes.append(f"gpu: {nvidia_smi} --query-compute-apps failed (rc {rc}), GPU processes not reported: {_oneline(err, out)}")
        return section, processes
    try:
        apps = parse_compute_apps(out)
    except NvidiaSmiError as exc:
        notes.append(f"gpu: {exc}")
        return section, processes
    for app in apps:
        described = describe_process(app, proc_root, containers)
        processes.append({key: described[key] for key in ("pid", "name", "used_mib", "unit", "container_name")})
    return section, processes


# ---------------------------------------------------------------------------------------------------------------
# Fabric


def ip_addresses(run: Runner, ip: str | None, sys_root: Path, notes: list[str]) -> dict[str, list[str]]:
    """Each netdev's IPv4 addresses: from ``ip -j -4 addr show``, else (with a note) from the RoCE v2 GIDs in sysfs."""
    if ip is None:
        notes.append("fabric: ip not found; IPv4 addresses taken from the RoCE v2 GIDs in sysfs")
        return addresses_from_gids(sys_root)
    addresses, failed = addresses_from_ip(run, ip, sys_root)
    if failed is not None:
        notes.append(f"fabric: ip -j -4 addr show failed (rc {failed[0]}: {_oneline(failed[1])}); IPv4 addresses taken from the RoCE v2 GIDs in sysfs")
    return addresses


def _speed_mbps(sys_root: Path, interface: str) -> int | None:
    """``/sys/class/net/<interface>/speed``; None when unreadable (link down) or unknown (-1)."""
    raw = read_text(sys_root / "class" / "net" / interface / "speed")
    try:
        speed = int((raw or "").strip())
    except ValueError:
        return None
    return speed if speed > 0 else None


def fabric_info(sys_root: Path, fabric_ip: str, addresses: t.Mapping[str, t.Sequence[str]], notes: list[str]) -> dict[str, t.Any]:
    """The netdev that holds ``fabric_ip`` (by address, as :func:`._roce.roce_info` finds it), its link and RDMA ports.

    ``rdma_devices`` lists the ports of the netdev's RDMA devices, then those of its twin (the other PCIe half of the
    same ConnectX-7 port). None and a note when no netdev holds the address; roce_info's warnings become notes.
    """
    section: dict[str, t.Any] = {"ip": fabric_ip, "interface": None, "state": None, "speed_mbps": None, "mtu": None, "gid_index": None, "rdma_devices": []}
    try:
        info = roce_info(sys_root, addresses, address=fabric_ip)
    except RoceError as exc:
        notes.append(f"fabric: {exc}")
        return section
    netdev = info.netdev
    ports = [(netdev.interface, port) for port in netdev.rdma_devices]
    if info.twin is not None:
        ports += [(info.twin.interface, port) for port in info.twin.rdma_devices]
    section.update(
        interface=netdev.interface,
        state=netdev.link.operstate,
        speed_mbps=_speed_mbps(sys_root, netdev.interface),
        mtu=netdev.link.mtu,
        gid_index=netdev.gid_index,
        rdma_devices=[{"name": port.name, "port": port.port, "state": port.state, "interface": interface} for interface, port in ports],
    )
    notes.extend(f"fabric: {warning}" for warning in info.warnings)
    return section


# ---------------------------------------------------------------------------------------------------------------
# Memory and disk


def memory_info(proc_root: Path, top_count: int, gpu_processes: list[dict[str, t.Any]], notes: list[str]) -> dict[str, t.Any]:
    """Host memory (``/proc/meminfo``, MiB precision, in bytes), the top resident memory holders and the GPU processes."""
    section: dict[str, t.Any] = {"total_bytes": None, "available_bytes": None, "top_processes": [], "gpu_processes": gpu_processes}
    try:
        meminfo = parse_meminfo(read_text(proc_root / "meminfo") or "")
    except MeminfoError as exc:
        notes.append(f"memory: {proc_root / 'meminfo'}: {exc}")
    else:
        section["total_bytes"] = meminfo.total_mib * MIB
        section["available_bytes"] = meminfo.available_mib * MIB
    try:
        top = top_memory(proc_root, top_count)
    except OSError as exc:
        notes.append(f"memory: cannot list the processes in {proc_root}: {exc.strerror or exc}")
        top = []
    section["top_processes"] = [{"pid": p["pid"], "name": p["name"], "rss_bytes": p["rss_mib"] * MIB, "unit": p["unit"]} for p in top]
    return section


def nearest_existing(path: str) -> str:
    """``path`` when it exists, else its nearest existing ancestor (``/`` at worst)."""
    current = os.path.normpath(path)
    while not os.path.exists(current):
        parent = os.path.dirname(current)
        if parent == current:
            break
        current = parent
    return current


def model_present_bytes(model_dir: str, repo_id: str) -> int:
    """Bytes of ``repo_id``'s whole blobs already in the hub cache ``model_dir`` (downloads in progress not counted)."""
    blobs = Path(model_dir) / ("models--" + repo_id.replace("/", "--")) / "blobs"
    try:
        entries = list(os.scandir(blobs))
    except OSError:
        return 0
    return sum(e.stat().st_size for e in entries if e.is_file(follow_symlinks=False) and not e.name.endswith(".incomplete"))


def disk_info(path: str, notes: list[str], statvfs: t.Callable[[str], os.statvfs_result] = os.statvfs) -> dict[str, t.Any]:
    """Free and total space of the file system that holds ``path`` (or, when missing, its nearest existing ancestor).

    ``free_bytes`` is what an unprivileged user may still write (``f_bavail``), the safe figure for a download.
    """
    measured = nearest_existing(path)
    section: dict[str, t.Any] = {"path": path, "measured_path": measured, "free_bytes": None, "total_bytes": None}
    if measured != os.path.normpath(path):
        notes.append(f"disk: {path} does not exist yet; measured {measured}")
    try:
        stats = statvfs(measured)
    except OSError as exc:
        notes.append(f"disk: cannot measure {measured}: {exc.strerror or exc}")
        return section
    section["free_bytes"] = stats.f_bavail * stats.f_frsize
    section["total_bytes"] = stats.f_blocks * stats.f_frsize
    return section


# ---------------------------------------------------------------------------------------------------------------
# Inference stacks


def parse_systemctl_units(text: str) -> list[str]:
    """The unit names (first column) of ``systemctl list-unit-files|list-units --no-legend --plain`` output.

    A leading status mark (``●``, ``*``: systemctl prints one for failed units without ``--plain``) is skipped.
    """
    units = []
    for line in text.splitlines():
        fields = line.split()
        if fields and fields[0] in ("●", "*", "○"):
            fields = fields[1:]
        if fields and "." in fields[0] and fields[0] not in units:
            units.append(fields[0])
    return units


def matches(name: str, patterns: t.Sequence[str]) -> bool:
    """Whether ``name`` matches one of ``patterns``, case-insensitively.

    A pattern with ``*``, ``?`` or ``[`` is a glob over the whole name; any other pattern must start the name or
    follow a character that is not a letter or digit (``ray`` matches ``ray-head.service`` and
    ``sparkops-raylet.service``, not ``xray.service``; ``llama`` matches ``llama-server.service``, not ``ollama``).
    """
    lowered = name.lower()
    for pattern in patterns:
        wanted = pattern.strip().lower()
        if not wanted:
            continue
        if _GLOB.search(wanted):
            if fnmatch.fnmatchcase(lowered, wanted):
                return True
        elif re.search(r"(?:^|[^a-z0-9])" + re.escape(wanted), lowered):
            return True
    return False


def unit_entries(enabled: t.Iterable[str], active: t.Iterable[str], patterns: t.Sequence[str]) -> list[dict[str, t.Any]]:
    """The enabled or active units that match ``patterns``, sorted by name, each with both flags."""
    enabled_set, active_set = set(enabled), set(active)
    names = sorted(name for name in enabled_set | active_set if matches(name, patterns))
    return [{"unit": name, "enabled": name in enabled_set, "active": name in active_set} for name in names]


def systemd_units(run: Runner, systemctl: str | None, patterns: t.Sequence[str], notes: list[str]) -> list[dict[str, t.Any]]:
    """Enabled and active systemd units matching ``patterns``; empty with a note when systemctl is missing or fails."""
    if systemctl is None:
        notes.append("inference: systemctl not found: systemd units not reported")
        return []
    lists: list[list[str]] = []
    for args in (SYSTEMCTL_ENABLED, SYSTEMCTL_ACTIVE):
        rc, out, err = run([systemctl, *args])
        # Some systemd versions exit 1 when the filter leaves nothing to list; that is an empty list, not a failure.
        if rc != 0 and (out.strip() or err.strip()):
            notes.append(f"inference: systemctl {' '.join(args)} failed (rc {rc}): {_oneline(err, out)}")
            return []
        lists.append(parse_systemctl_units(out))
    return unit_entries(lists[0], lists[1], patterns)


def docker_containers(run: Runner, docker: str | None, notes: list[str]) -> list[Container] | None:
    """All containers from ``docker ps -a``; None (with a note) when docker is missing or fails."""
    if docker is None:
        notes.append("inference: docker not found: containers not reported")
        return None
    try:
        return DockerCli(docker, run).ps()
    except DockerError as exc:
        notes.append(f"inference: containers not reported: {exc}")
        return None


def container_entries(containers: list[Container] | None, patterns: t.Sequence[str]) -> list[dict[str, t.Any]]:
    """Every container (``docker ps -a``) with ``inference`` true when its name or image matches ``patterns``."""
    return [
        {"name": c.name, "image": c.image, "state": c.state, "inference": matches(c.name, patterns) or matches(c.image.rsplit("/", 1)[-1], patterns)}
        for c in containers or []
    ]


# ---------------------------------------------------------------------------------------------------------------
# Versions


def normalise(name: str) -> str:
    """A distribution name as PEP 503 compares them: lower case, runs of ``-``, ``_`` and ``.`` as one ``-``."""
    return _NORMALISE.sub("-", name.strip()).lower()


def _metadata_headers(text: str) -> dict[str, str]:
    """``Name`` and ``Version`` of a METADATA file (RFC 822 headers, up to the first blank line)."""
    found: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip():
            break
        key, sep, value = line.partition(":")
        if sep and key in ("Name", "Version") and key not in found:
            found[key] = value.strip()
    return found


def dist_info(directory: Path) -> tuple[str, str] | None:
    """(normalised name, version) of a ``*.dist-info`` directory: from its METADATA, else from the directory name."""
    stem = directory.name.removesuffix(".dist-info")
    dir_name, _sep, dir_version = stem.partition("-")
    headers = _metadata_headers(read_text(directory / "METADATA") or "")
    name = headers.get("Name") or dir_name
    version = headers.get("Version") or dir_version
    if not name or not version:
        return None
    return normalise(name), version


def site_packages(venv: Path) -> list[Path]:
    """The ``lib/python*/site-packages`` directories of a venv."""
    try:
        return sorted(p for p in venv.glob("lib/python*/site-packages") if p.is_dir())
    except OSError:
        return []


def installed(venv: Path) -> dict[str, str]:
    """Normalised distribution name -> version of what is installed in ``venv`` (read from its dist-info)."""
    packages: dict[str, str] = {}
    for directory in site_packages(venv):
        try:
            entries = sorted(directory.glob("*.dist-info"))
        except OSError:
            continue
        for entry in entries:
            found = dist_info(entry)
            if found is not None and found[0] not in packages:
                packages[found[0]] = found[1]
    return packages


def venv_packages(venvs: t.Sequence[str], notes: list[str]) -> list[tuple[str, dict[str, str]]]:
    """(venv, its packages) for each venv in order; a missing venv or one without site-packages is a note."""
    found = []
    for venv in venvs:
        path = Path(venv)
        if not path.is_dir():
            notes.append(f"versions: venv {venv} does not exist")
            continue
        if not site_packages(path):
            notes.append(f"versions: venv {venv} has no lib/python*/site-packages")
            continue
        found.append((venv, installed(path)))
    return found


def package_version(packages: t.Sequence[tuple[str, dict[str, str]]], *names: str) -> str | None:
    """The version of the first of ``names`` installed in the first venv that has one of them."""
    wanted = [normalise(name) for name in names]
    for _venv, installed_here in packages:
        for name in wanted:
            if name in installed_here:
                return installed_here[name]
    return None


def _env_values(text: str) -> dict[str, str]:
    """NAME=value lines of an environment file as the env_file filter writes them (values single-quoted when needed)."""
    values = {}
    for line in text.splitlines():
        name, sep, value = line.strip().partition("=")
        if not sep or name.startswith("#"):
            continue
        value = value.strip()
        values[name.strip()] = value[1:-1] if len(value) > 1 and value[0] == value[-1] == "'" else value
    return values


def nccl_library(env_file: Path, notes: list[str]) -> dict[str, str | None]:
    """Which NCCL the engine's units load: ``system`` when the fabric environment (nccl_env, nccl_env_nccl_library:
    system) sets VLLM_NCCL_SO_PATH or preloads a libnccl, with its path and the version of the file it resolves to
    (``libnccl.so.2`` -> ``libnccl.so.2.28.3``: 2.28.3; None when the name does not say); else ``bundled`` (the wheel)."""
    bundled: dict[str, str | None] = {"library": "bundled", "path": None, "version": None}
    try:
        values = _env_values(env_file.read_text(encoding="utf-8", errors="replace"))
    except OSError:
        return bundled
    preloaded = [p for p in values.get("LD_PRELOAD", "").replace(":", " ").split() if "libnccl" in Path(p).name]
    path = values.get("VLLM_NCCL_SO_PATH") or next(iter(preloaded), None)
    if not path:
        return bundled
    resolved = Path(path)
    if not resolved.exists():
        notes.append(f"versions: {env_file} names {path} as the NCCL library, which does not exist")
    else:
        resolved = resolved.resolve()
    match = _NCCL_FILE.fullmatch(resolved.name)
    return {"library": "system", "path": path, "version": match.group(1) if match else None}


def versions(
    host: Host,
    gpu: t.Mapping[str, t.Any],
    packages: t.Sequence[tuple[str, dict[str, str]]],
    library: t.Mapping[str, str | None] | None = None,
) -> dict[str, str | None]:
    """The components :data:`._version_drift.COMPONENTS` compares, in its order.

    ``nccl`` is the wheel's version, or ``<version> (system)`` when ``library`` (:func:`nccl_library`) says the units
    load the system's NCCL: the drift gate then tells a node on another library apart."""
    nccl = package_version(packages, *NCCL_DISTS)
    if library is not None and library.get("library") == "system":
        nccl = f"{library.get('version') or 'unknown'} (system)"
    values: dict[str, str | None] = {
        "kernel": host.kernel or None,
        "driver": gpu.get("driver"),
        "cuda": gpu.get("cuda"),
        "nccl": nccl,
        "python": host.python or None,
        "ray": package_version(packages, "ray"),
        "vllm": package_version(packages, "vllm"),
    }
    return {component: values[component] for component in COMPONENTS}


# ---------------------------------------------------------------------------------------------------------------
# All of it


def recon(options: Options, sources: Sources, run: Runner, host: Host | None = None) -> dict[str, t.Any]:
    """The module's ``recon`` result (see the module's RETURN and docs/recon.md). Raises :class:`ReconError` for bad options."""
    check_options(options)
    host = host or Host()
    notes: list[str] = []
    os_release = os_info(sources.os_release, notes)
    containers = docker_containers(run, sources.docker, notes)
    gpu, gpu_processes = gpu_info(run, sources.nvidia_smi, sources.proc_root, containers, notes)
    fabric_ip = str(ipaddress.IPv4Address(options.fabric_ip.strip()))
    fabric = fabric_info(sources.sys_root, fabric_ip, ip_addresses(run, sources.ip, sources.sys_root, notes), notes)
    memory = memory_info(sources.proc_root, options.top_processes, gpu_processes, notes)
    disk = disk_info(options.model_dir, notes)
    disk["model_present_bytes"] = model_present_bytes(options.model_dir, options.repo_id) if options.repo_id else None
    inference = {
        "enabled_units": systemd_units(run, sources.systemctl, options.unit_patterns, notes),
        "containers": container_entries(containers, options.unit_patterns),
    }
    packages = venv_packages(options.venvs, notes)
    library = nccl_library(sources.fabric_env, notes)
    fabric["nccl_library"] = library
    return {
        "os": os_release,
        "architecture": host.machine or None,
        "kernel": host.kernel or None,
        "gpu": gpu,
        "fabric": fabric,
        "memory": memory,
        "disk": disk,
        "inference": inference,
        "versions": versions(host, gpu, packages, library),
        "notes": notes,
    }
