"""hf_snapshot verification speed, as ratios to baselines run in the same command on the same files.

One run builds a real hub cache of --size (tests/lab/sparklab/hf_model.py's `build_hub_cache`, --shards shards)
in a temporary folder and times, through `check_snapshot` (the function the module calls, with its default hash
threads), over R interleaved rounds:

- `sha256sum <every blob>` in one process, what an operator would type (the baseline), and `openssl dgst -sha256`
  over the same blobs in one process (a reference: the same hash as OpenSSL computes it, which hashlib uses);
- `full` with a fresh manifest location, then the re-verification of the unchanged snapshot (manifest reused);

each twice: cold-ish (the blobs' pages dropped from this machine's page cache with posix_fadvise(DONTNEED) after
a sync, no root needed; the virtual disk below may still be cached by its host) and warm (after one read of every
blob, so every timed run reads from the page cache). The order of the hashers alternates between rounds.

Then `quick` (median of several runs, after one unrecorded run) on the 1 GB model and on sparse snapshots with valid
safetensors headers and exact sizes (ftruncate, so no disk is used): --big-size in --big-shards shards with an FP8
MoE layout (48 layers x 128 experts, 128x128 block scales: tens of thousands of tensors, as such checkpoints have),
and the same layout at --size, which separates the cost of bytes from the cost of header entries. A filesystem
without sparse files gets a smaller big snapshot (a quarter of its free space at most). Absolute seconds are noise.

    .venv/bin/python bench/snapshot_verify.py [--size 1GB] [--shards 8] [--big-size 120GB] [--big-shards 39]
        [--rounds 5] [--quick-runs 7] [--dir /tmp] [--json out.json] [--write]

--write replaces the section "## Snapshot verification (hf_snapshot)" of docs/benchmarks.md (appends it if missing).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import hashlib
import json
import math
import os
import platform
import re
import shlex
import shutil
import ssl
import statistics
import struct
import subprocess
import sys
import tempfile
import textwrap
import time
import typing as t
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
for _path in (REPO / "tests" / "lab", REPO / ".collections", REPO / "bench"):  # sparklab; the collection; benchmarks_doc
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

from ansible_collections.sparkops.inference.plugins.module_utils._hf_snapshot import MODE_FULL, MODE_QUICK, SnapshotReport, check_snapshot  # noqa: E402
from benchmarks_doc import section_replaced  # noqa: E402
from sparklab.hf_model import (  # noqa: E402
    INDEX,
    MoeShape,
    build_hub_cache,
    content_commit,
    etag_of,
    json_bytes,
    parse_size,
    shard_name,
    split_shards,
    write_hub_snapshot,
)

DOC = REPO / "docs" / "benchmarks.md"
HEADING = "## Snapshot verification (hf_snapshot)"
REPO_ID = "sparkops-bench/qwen3-moe"
BIG_REPO_ID = "sparkops-bench/qwen3-moe-fp8"
TEXT_FILES = ("generation_config.json", "tokenizer.json", "tokenizer_config.json")
DTYPE_BYTES = {"F8_E4M3": 1, "BF16": 2, "F32": 4}
SPARSE_PROBE = 64 * 1024 * 1024
READ_CHUNK = 8 * 1024 * 1024
WIDTH = 115  # docs/benchmarks.md is wrapped there


# --- sparse snapshots with an FP8 MoE layout ---------------------------------------------------------------


@dataclass(frozen=True)
class Fp8Layout:
    """A Qwen3-MoE checkpoint quantized to FP8 with 128x128 block scales: the linear weights F8_E4M3 with an F32
    ``weight_scale_inv`` each; embeddings, router gates and norms BF16. The expert width is what fits the size."""

    hidden: int = 2048
    layers: int = 48
    experts: int = 128
    block: int = 128

    def shape(self, expert_width: int) -> MoeShape:
        return MoeShape(self.hidden, expert_width, num_hidden_layers=self.layers, num_experts=self.experts)

    def tensors(self, expert_width: int) -> list[tuple[str, str, tuple[int, ...]]]:
        """``(name, dtype, shape)`` of every tensor."""
        out: list[tuple[str, str, tuple[int, ...]]] = []
        for name, dims, _norm in self.shape(expert_width).tensors():
            if len(dims) == 2 and not name.startswith(("model.embed_tokens.", "lm_head.")) and not name.endswith(".mlp.gate.weight"):
                out.append((name, "F8_E4M3", dims))
                out.append((name + "_scale_inv", "F32", (math.ceil(dims[0] / self.block), math.ceil(dims[1] / self.block))))
            else:
                out.append((name, "BF16", dims))
        return out

    def data_bytes(self, expert_width: int) -> int:
        return sum(tensor_bytes(dtype, dims) for _name, dtype, dims in self.tensors(expert_width))

    def min_bytes(self) -> int:
        """The tensor bytes at the narrowest expert width (1)."""
        return self.data_bytes(1)

    def fit(self, total_bytes: int) -> int:
        """The expert width whose tensors total about ``total_bytes``; ValueError when even width 1 is too big."""
        fixed = self.data_bytes(0)
        if self.min_bytes() > total_bytes:
            raise ValueError(f"{total_bytes} bytes is too small for this layout: it needs at least {self.min_bytes()} bytes")
        per = self.layers * self.experts * 3 * self.hidden * (1 + 4 / self.block**2)  # FP8 bytes and scales per unit of width
        return max(1, round((total_bytes - fixed) / per))


def tensor_bytes(dtype: str, dims: Sequence[int]) -> int:
    return math.prod(dims) * DTYPE_BYTES[dtype]


def write_sparse_shard(path: Path, tensors: Sequence[tuple[str, str, tuple[int, ...]]]) -> int:
    """Write a safetensors file whose header lists ``tensors`` (contiguous from offset 0) and whose data is a hole of
    the right length (ftruncate); return its data bytes. The header is padded with spaces to 8 bytes, as the
    reference implementation does."""
    header: dict[str, t.Any] = {"__metadata__": {"format": "pt"}}
    offset = 0
    for name, dtype, dims in tensors:
        size = tensor_bytes(dtype, dims)
        header[name] = {"dtype": dtype, "shape": list(dims), "data_offsets": [offset, offset + size]}
        offset += size
    raw = json.dumps(header, separators=(",", ":")).encode()
    raw += b" " * (-len(raw) % 8)
    with path.open("wb") as f:
        f.write(struct.pack("<Q", len(raw)) + raw)
        f.truncate(8 + len(raw) + offset)
    return offset


@dataclass(frozen=True)
class SparseSnapshot:
    cache_dir: Path
    repo_id: str
    total_bytes: int  # apparent size of every file
    allocated_bytes: int  # what the files take on disk
    shards: int
    tensors: int
    expert_width: int


def build_sparse_snapshot(
    cache_dir: Path, repo_id: str, total_bytes: int, shards: int, text_files: dict[str, bytes], layout: Fp8Layout | None = None
) -> SparseSnapshot:
    """A hub cache snapshot of ``repo_id`` of about ``total_bytes`` in ``shards`` sparse safetensors shards, with
    ``text_files`` (tokenizer, generation config), a ``config.json`` and the index. Its headers, sizes and index are
    valid; the shards' blob names are not the sha256 of their content (only ``quick`` can pass on it)."""
    layout = layout or Fp8Layout()
    width = layout.fit(total_bytes)
    tensors = layout.tensors(width)
    owner = split_shards([tensor_bytes(dtype, dims) for _n, dtype, dims in tensors], shards)
    names = [shard_name(i + 1, shards) for i in range(shards)]
    weight_map = {name: names[where] for (name, _dtype, _dims), where in zip(tensors, owner, strict=True)}
    config = layout.shape(width).config("BF16") | {
        "quantization_config": {"activation_scheme": "dynamic", "fmt": "e4m3", "quant_method": "fp8", "weight_block_size": [layout.block] * 2}
    }
    data_total = layout.data_bytes(width)
    files = {**text_files, "config.json": json_bytes(config), INDEX: json_bytes({"metadata": {"total_size": data_total}, "weight_map": weight_map})}
    fake = {name: hashlib.sha256(f"sparse {repo_id} {name} {width}".encode()).hexdigest() for name in names}
    info = write_hub_snapshot(cache_dir, repo_id, files, commit=content_commit({**{p: etag_of(p, d) for p, d in files.items()}, **fake}))
    blobs = info.repo_dir / "blobs"
    for index, name in enumerate(names):
        write_sparse_shard(blobs / fake[name], [tensor for tensor, where in zip(tensors, owner, strict=True) if where == index])
        link = info.snapshot_path / name
        link.symlink_to(os.path.relpath(blobs / fake[name], link.parent))
    stats = [p.stat() for p in blobs.iterdir()]
    return SparseSnapshot(cache_dir, repo_id, sum(s.st_size for s in stats), sum(s.st_blocks * 512 for s in stats), shards, len(tensors), width)


def supports_sparse(directory: Path) -> bool:
    """Whether a file extended with ftruncate in ``directory`` takes (almost) no disk."""
    with tempfile.NamedTemporaryFile(dir=directory) as f:
        f.truncate(SPARSE_PROBE)
        f.flush()
        return os.fstat(f.fileno()).st_blocks * 512 < SPARSE_PROBE // 16


# --- page cache and timing ---------------------------------------------------------------------------------


def evict(paths: Sequence[Path]) -> None:
    """Drop the (clean) pages of ``paths`` from this machine's page cache: posix_fadvise(DONTNEED), no root."""
    for path in paths:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def warm_up(paths: Sequence[Path]) -> None:
    """Read every file once, so that the next reads come from the page cache."""
    buffer = bytearray(READ_CHUNK)
    for path in paths:
        with path.open("rb", buffering=0) as f:
            while f.readinto(buffer):
                pass


def resident_bytes(paths: Sequence[Path]) -> int | None:
    """How many bytes of ``paths`` are in the page cache (util-linux fincore); None without fincore."""
    if shutil.which("fincore") is None:
        return None
    proc = subprocess.run(["fincore", "--bytes", "--raw", "--noheadings", "-o", "RES", *map(str, paths)], capture_output=True, text=True, check=True)
    return sum(int(line) for line in proc.stdout.split())


def timed(action: Callable[[], object]) -> float:
    began = time.perf_counter()
    action()
    return time.perf_counter() - began


def digest_tool(argv: Sequence[str], blobs: Sequence[Path], pattern: str) -> Callable[[], None]:
    """Run ``argv + blobs`` in one process and check that every sha256-named blob got its name as digest."""

    def run() -> None:
        proc = subprocess.run([*argv, *map(str, blobs)], capture_output=True, text=True, check=True)
        digests = re.findall(pattern, proc.stdout, re.MULTILINE)
        wrong = [p.name for p, d in zip(blobs, digests, strict=True) if len(p.name) == 64 and d != p.name]
        if wrong:
            raise RuntimeError(f"{argv[0]} disagrees with the blob names of {', '.join(wrong)}")

    return run


def full_check(cache_dir: Path, manifest: Path, files: int, total: int, reuse: bool) -> Callable[[], SnapshotReport]:
    """``check_snapshot(mode=full)`` with ``manifest``; checks that it hashed (or, with ``reuse``, reused) every blob."""

    def run() -> SnapshotReport:
        report = check_snapshot(REPO_ID, cache_dir=str(cache_dir), mode=MODE_FULL, manifest_path=str(manifest))
        hashed = (0, 0, files) if reuse else (files, total, 0)
        if not report.complete or (report.hashed_files, report.hashed_bytes, report.reused_files) != hashed:
            raise RuntimeError(f"full check: complete={report.complete} hashed/bytes/reused={report.hashed_files}/{report.hashed_bytes}/{report.reused_files}")
        return report

    return run


def quick_check(cache_dir: Path, repo_id: str, shards: int) -> Callable[[], SnapshotReport]:
    def run() -> SnapshotReport:
        report = check_snapshot(repo_id, cache_dir=str(cache_dir), mode=MODE_QUICK)
        if not report.complete or report.shards != shards:
            raise RuntimeError(f"quick check of {repo_id}: complete={report.complete} shards={report.shards}: {report.problems[:3]}")
        return report

    return run


def interleaved(actions: Mapping[str, Callable[[], object]], runs: int) -> dict[str, list[float]]:
    """Time each of ``actions`` ``runs`` times, in rounds whose order alternates, after one unrecorded run of each
    (which brings imports, dentries and headers into their caches)."""
    for action in actions.values():
        action()
    times: dict[str, list[float]] = {key: [] for key in actions}
    for run in range(runs):
        for key in list(actions)[:: -1 if run % 2 else 1]:
            times[key].append(timed(actions[key]))
    return times


# --- the report --------------------------------------------------------------------------------------------


def machine() -> str:
    model = ""
    with contextlib.suppress(OSError):
        model = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines() if line.startswith("model name")), "")
    return f"{os.cpu_count()}-core {platform.machine()} host" + (f" ({model})" if model else "")


def tool_version(argv: Sequence[str]) -> str:
    try:
        return subprocess.run([*argv], capture_output=True, text=True, check=True).stdout.splitlines()[0].strip()
    except (OSError, subprocess.CalledProcessError, IndexError):
        return "unknown"


def gb(n: int) -> str:
    return f"{n / 1e9:.1f} GB"


def med(values: Sequence[float]) -> float:
    return statistics.median(values)


def render(r: dict[str, t.Any]) -> tuple[str, str]:
    """The markdown table and the reading of ``r`` (the summary main() builds)."""
    mb = r["bytes"] / 1e6
    runs, small, big = r["runs"], r["sparse_small"], r["sparse_big"]

    def rate(cache: str, key: str) -> float:
        return mb / med(runs[cache][key])

    rows = ["| measurement | page cache | median (s) | MB/s | ratio |", "|---|---|---:|---:|---|"]
    hashers = [("sha256sum", f"`sha256sum` of the {r['files']} blobs, one process (baseline)")]
    if "openssl" in runs["warm"]:
        hashers.append(("openssl", "`openssl dgst -sha256` of the same blobs, one process (reference)"))
    hashers.append(("full", f"`full`, fresh manifest, {r['workers']} hash threads"))
    for cache, name in (("cold", "cold-ish"), ("warm", "warm")):
        for key, label in hashers:
            ratio = "1.00" if key == "sha256sum" else f"{rate(cache, key) / rate(cache, 'sha256sum'):.2f} x `sha256sum` MB/s"
            rows.append(f"| {label} | {name} | {med(runs[cache][key]):.3f} | {rate(cache, key):.0f} | {ratio} |")
    full_s, reverify_s = med(runs["warm"]["full"]), med(runs["warm"]["reverify"])
    rows.append(f"| re-verify unchanged (`full`, manifest reused) | warm | {reverify_s:.4f} | - | {reverify_s / full_s:.4f} x warm `full` time |")
    q_model, q_small, q_big = med(runs["quick_small"]), med(runs["quick_sparse_small"]), med(runs["quick_big"])
    rows += [
        f"| `quick`, the {gb(r['bytes'])} model ({r['shards']} shards, {r['tensors']:,} tensors) | warm | {q_model:.4f} | - | 1.00 |",
        f"| `quick`, {gb(small['total_bytes'])} sparse, FP8 MoE layout ({small['shards']} shards, {small['tensors']:,} tensors) | warm | {q_small:.4f} | - |"
        f" {q_small / q_model:.1f} x the model's `quick` |",
        f"| `quick`, {gb(big['total_bytes'])} sparse, the same layout ({big['shards']} shards, {big['tensors']:,} tensors) | warm | {q_big:.4f} | - |"
        f" {q_big / q_model:.1f} x the model's `quick`; {q_big / q_small:.2f} x the layout at {gb(small['total_bytes'])} |",
    ]

    full_vs = {cache: rate(cache, "full") / rate(cache, "sha256sum") for cache in ("cold", "warm")}
    reading = (
        f"Reading: `full` checks the {gb(r['bytes'])} snapshot at {full_vs['warm']:.1f}x the throughput of `sha256sum` over the same blobs"
        f" from the page cache, and at {full_vs['cold']:.1f}x cold-ish."
    )
    if rate("cold", "full") >= 0.8 * rate("warm", "full"):
        reading += (
            f" Cold-ish reads cost `full` little here ({rate('cold', 'full'):.0f} against {rate('warm', 'full'):.0f} MB/s warm): the host's"
            " cache below the virtual disk most likely serves them, so neither figure is one of a disk."
        )
    if "openssl" in runs["warm"]:
        ssl_vs = rate("warm", "openssl") / rate("warm", "sha256sum")
        threads = rate("warm", "full") / rate("warm", "openssl")
        reading += (
            f" `openssl dgst -sha256` alone runs at {ssl_vs:.1f}x `sha256sum`: that much is the hash implementation (hashlib uses OpenSSL"
            f" {r['openssl_version']}; `sha256sum` here is {r['sha256sum_version']}, which is slower)."
        )
        if threads > 1.1:
            reading += (
                f" The rest, `full` at {threads:.2f}x openssl, is what its {r['workers']} hash threads on {r['cpus']} CPUs add, net of its per-file work."
            )
        elif threads >= 0.9:
            reading += (
                f" `full` runs at {threads:.2f}x openssl: here its {r['workers']} hash threads on {r['cpus']} CPUs add nothing measurable over one"
                " process, net of its per-file work (the CPUs are shared)."
            )
        else:
            reading += f" `full` runs at {threads:.2f}x openssl: its {r['workers']} hash threads on {r['cpus']} CPUs do not make up for its per-file work here."
    spread = max(runs["warm"]["full"]) / min(runs["warm"]["full"])
    if spread > 1.5:
        reading += (
            f" Its warm runs spread over {spread:.1f}x ({min(runs['warm']['full']):.2f} to {max(runs['warm']['full']):.2f} s: the machine is shared),"
            " so these ratios are loose."
        )
    reading += (
        f" Re-verifying the unchanged snapshot takes {reverify_s / full_s:.4f}x the time of a warm full check ({reverify_s * 1000:.1f} ms: stats,"
        f" headers and the manifest, no content read). `quick` on the {gb(big['total_bytes'])} sparse snapshot takes {q_big / q_model:.0f}x the"
        f" {gb(r['bytes'])} model's time and {q_big / q_small:.2f}x that of the same layout at {gb(small['total_bytes'])}:"
    )
    if 0.67 <= q_big / q_small <= 1.5:
        reading += (
            " its cost follows the header entries it parses and checks"
            f" ({big['tensors']:,} tensors against the model's {r['tensors']:,}), not the bytes, as its design (two small reads per file) says."
        )
    else:
        reading += " the bytes changed `quick`'s time here, which its design (two small reads per file) does not explain: look at why."
    return "\n".join(rows), reading


def wrap(blocks: Sequence[str], width: int = WIDTH) -> str:
    """Markdown from ``blocks``: a paragraph or a ``- `` list item is wrapped at ``width``; a table stays as it is."""
    out = []
    for block in blocks:
        if block.startswith("|"):
            out.append(block)
            continue
        glued = re.sub(r"(\d) ([KMGT]B)\b", "\\1\u00a0\\2", block)  # keep "1.0 GB" on one line (textwrap breaks on ASCII spaces only)
        indent = "  " if block.startswith("- ") else ""
        out.append(textwrap.fill(glued, width, subsequent_indent=indent, break_long_words=False, break_on_hyphens=False).replace("\u00a0", " "))
    return "\n".join(out)


def section(r: dict[str, t.Any], table: str, reading: str, command: str) -> str:
    """The body of the docs/benchmarks.md section: how it was measured, the table, the raw runs and the reading."""
    small, big = r["sparse_small"], r["sparse_big"]
    resident = r["resident_after_evict"]
    if resident is None:
        evicted = ""
    elif resident == 0:
        evicted = "; fincore found none of their pages cached after it"
    else:
        evicted = f"; fincore found at most {resident / r['bytes']:.1%} of them cached after it"
    shrunk = f" (shrunk from {gb(r['big_requested'])}: the filesystem has no sparse files)" if r["big_requested"] != r["big_planned"] else ""
    minutes = max(1, round(r["elapsed_s"] / 60))
    blocks = [
        f"`{command}` (about {minutes} minute{'s' if minutes != 1 else ''}). In one temporary folder it builds a real hub cache of"
        f" {gb(r['bytes'])} (`build_hub_cache`: {r['files']} blobs, {r['shards']} safetensors shards) and times, through `check_snapshot` (the"
        f" function the module runs, with its default of min(8, CPUs) hash threads), {r['rounds']} interleaved rounds, the hashers' order"
        " alternating, of:",
        "",
        "- **`sha256sum <every blob>`** in one process, what an operator would type: the baseline; `openssl dgst -sha256` over the same"
        " blobs in one process is a reference for the hash implementation; both are checked against the blob names;",
        "- **`full`** with a fresh manifest location, then **re-verify**: `full` again on the unchanged snapshot with that manifest, which reuses every entry;",
        "- each hasher **cold-ish**: after a sync, the blobs' pages dropped from this machine's page cache with `posix_fadvise(DONTNEED)`"
        f" before each run (no root{evicted}; the host of the virtual disk may still cache them), and **warm**: after one read of every"
        " blob, so that every timed run reads from the page cache;",
        f"- **`quick`** ({r['quick_runs']} interleaved runs after an unrecorded one, all warm) on that model, and on sparse snapshots whose"
        " shards have valid safetensors headers, exact sizes and a valid index but no data (holes: the"
        f" {gb(big['total_bytes'])} one{shrunk} took {big['allocated_bytes'] / 1e6:.1f} MB of disk), sized and sharded like"
        " Qwen3.5-122B-A10B-FP8 (~119 GB in 39 shards) with the tensors of a Qwen3-MoE FP8 checkpoint (48 layers x 128 experts, 128x128"
        f" block scales: {big['tensors']:,} tensors), at {gb(big['total_bytes'])} and at {gb(small['total_bytes'])}, which tells the cost"
        " of bytes from that of header entries.",
        "",
        f"Measured on {r['date']}, {r['machine']}, Python {r['python']}, `sha256sum` from {r['sha256sum_version']}, OpenSSL"
        f" {r['openssl_version']} (medians; MB are 10^6 bytes):",
        "",
        table,
        "",
        f"Raw runs (s): {r['raw']}.",
        "",
        reading,
        "",
        "What could not be measured here: a Spark (aarch64, 20 cores, NVMe; `full` would use 8 hash threads), and a cold read that no"
        " cache below this machine serves.",
    ]
    return wrap(blocks) + "\n"


def raw_runs(runs: dict[str, t.Any]) -> str:
    parts = []
    for cache in ("cold", "warm"):
        for key, values in runs[cache].items():
            parts.append(f"{key} {cache} {', '.join(f'{v:.3f}' for v in values)}")
    for key in ("quick_small", "quick_sparse_small", "quick_big"):
        parts.append(f"{key} {', '.join(f'{v:.4f}' for v in runs[key])}")
    return "; ".join(parts)


# --- main --------------------------------------------------------------------------------------------------


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=parse_size, default=parse_size("1GB"), help="the real model's size (default 1GB)")
    parser.add_argument("--shards", type=int, default=8)
    parser.add_argument("--big-size", type=parse_size, default=parse_size("120GB"), help="the sparse snapshot's size (default 120GB)")
    parser.add_argument("--big-shards", type=int, default=39)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--quick-runs", type=int, default=7)
    parser.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()), help="where the temporary caches go")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--write", action="store_true", help=f"replace the section {HEADING!r} of docs/benchmarks.md")
    args = parser.parse_args(argv)
    if args.big_size < Fp8Layout().min_bytes():  # refused before the 1 GB model is built, not after
        parser.error(f"--big-size {args.big_size} is below the FP8 layout's smallest snapshot ({Fp8Layout().min_bytes()} bytes)")
    began = time.monotonic()
    workers = min(8, os.cpu_count() or 1)  # the module's default hash_workers
    runs: dict[str, t.Any] = {"cold": {}, "warm": {}}
    with tempfile.TemporaryDirectory(prefix="snapshot-verify-", dir=args.dir) as scratch:
        root = Path(scratch)
        print(f"building a {gb(args.size)} hub cache in {root} ...", flush=True)
        info = build_hub_cache(root / "hub", REPO_ID, total_bytes=args.size, shards=args.shards)
        blobs = sorted((info.repo_dir / "blobs").iterdir())
        total = sum(p.stat().st_size for p in blobs)
        tensors = len(json.loads(info.blob(INDEX).read_bytes())["weight_map"])
        os.sync()  # dirty pages cannot be dropped
        hashers: dict[str, Callable[[], object]] = {"sha256sum": digest_tool(["sha256sum"], blobs, r"^([0-9a-f]{64})\s")}
        if shutil.which("openssl"):
            hashers["openssl"] = digest_tool(["openssl", "dgst", "-sha256"], blobs, r"= ([0-9a-f]{64})$")
        resident: list[int] = []
        for round_ in range(args.rounds):
            order = list(hashers) + ["full"]
            if round_ % 2:
                order.reverse()
            for cache in ("cold", "warm"):
                if cache == "warm":
                    warm_up(blobs)
                for key in order:
                    if cache == "cold":
                        evict(blobs)
                        found = resident_bytes(blobs)
                        if found is not None:
                            resident.append(found)
                    if key == "full":
                        manifest = root / f"manifest-{cache}-{round_}.json"
                        runs[cache].setdefault("full", []).append(timed(full_check(info.cache_dir, manifest, len(blobs), total, reuse=False)))
                        if cache == "warm":
                            runs[cache].setdefault("reverify", []).append(timed(full_check(info.cache_dir, manifest, len(blobs), total, reuse=True)))
                    else:
                        runs[cache].setdefault(key, []).append(timed(hashers[key]))
            print(f"round {round_ + 1}: " + "; ".join(f"{c} " + ", ".join(f"{k} {v[-1]:.3f}s" for k, v in runs[c].items()) for c in runs), flush=True)

        text_files = {name: info.blob(name).read_bytes() for name in TEXT_FILES}
        big_size = args.big_size
        if not supports_sparse(root):
            big_size = min(big_size, shutil.disk_usage(root).free // 4)
            print(f"{root} has no sparse files: the big snapshot shrinks to {gb(big_size)}", flush=True)
        small_size = max(args.size, Fp8Layout().min_bytes())  # the layout's smallest, when --size is below it
        small = build_sparse_snapshot(root / "sparse-small", BIG_REPO_ID, small_size, args.big_shards, text_files)
        big = build_sparse_snapshot(root / "sparse-big", BIG_REPO_ID, big_size, args.big_shards, text_files)
        print(f"sparse snapshots: {gb(small.total_bytes)} and {gb(big.total_bytes)} ({big.allocated_bytes / 1e6:.1f} MB on disk)", flush=True)
        quick = {
            "quick_small": quick_check(info.cache_dir, REPO_ID, args.shards),
            "quick_sparse_small": quick_check(small.cache_dir, BIG_REPO_ID, args.big_shards),
            "quick_big": quick_check(big.cache_dir, BIG_REPO_ID, args.big_shards),
        }
        runs.update(interleaved(quick, args.quick_runs))

    summary: dict[str, t.Any] = {
        "date": datetime.date.today().isoformat(),
        "machine": machine(),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "sha256sum_version": re.sub(r"^sha256sum \((.+)\) ", r"\1 ", tool_version(["sha256sum", "--version"])),
        "openssl_version": ssl.OPENSSL_VERSION.split()[1],
        "bytes": total,
        "files": len(blobs),
        "shards": args.shards,
        "tensors": tensors,
        "workers": workers,
        "rounds": args.rounds,
        "quick_runs": args.quick_runs,
        "resident_after_evict": max(resident) if resident else None,
        "big_requested": args.big_size,
        "big_planned": big_size,
        "sparse_small": asdict(small) | {"cache_dir": str(small.cache_dir)},
        "sparse_big": asdict(big) | {"cache_dir": str(big.cache_dir)},
        "runs": runs,
        "elapsed_s": time.monotonic() - began,
    }
    summary["raw"] = raw_runs(runs)
    table, reading = render(summary)
    print(f"\n{table}\n\n{reading}")
    if args.json:
        args.json.write_text(json.dumps(summary, indent=2) + "\n")
    if args.write:
        command = shlex.join([".venv/bin/python", "bench/snapshot_verify.py", *argv])
        DOC.write_text(section_replaced(DOC.read_text(), HEADING, section(summary, table, reading, command)))
        print(f"\nwrote the section {HEADING!r} of {DOC.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
