"""The cut-through relay's own cost: a local chain of relays beside coreutils doing the same copies (same command).

Each node of a cut-through chain runs the relay (plugins/module_utils/_blob_relay.py): it reads the stream, writes
it to disk and passes it on. On a Spark the ssh cipher (about 640 MB/s a stream) is the limit, not this copy loop;
this measures the loop with no network at all, so that any shortfall is the relay's:

- one hop: the relay reading a file and one relay writing it, beside `cat src > copy`;
- two hops: the head relay, a relay that writes and passes on, a last one that writes, beside
  `cat src | tee copy1 | cat > copy2`.

Both sides move the same bytes through the same number of pipes and files, in /dev/shm (memory: this machine's
virtual disk writes back at a few hundred MB/s with large swings, which would be measured instead of the relay; the
order alternates between runs). Throughput is the source's size over the wall time, median of
--repeat runs; the ratio relay / coreutils is what to read.

    .venv/bin/python bench/relay_throughput.py [--size-mb 1024] [--repeat 3] [--write]
"""

from __future__ import annotations

import argparse
import datetime
import inspect
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / ".collections"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from ansible_collections.sparkops.inference.plugins.module_utils import _blob_relay  # noqa: E402
from benchmarks_doc import publish  # noqa: E402

SECTION = "## Cut-through relay: the copy loop's own cost (issue 5)"
CODE = _blob_relay.encode(inspect.getsource(_blob_relay).encode())


def hop(folder: Path, size: int, nxt: dict[str, object] | None) -> dict[str, object]:
    output = {"dir": str(folder), "name": "blob", "mtime_ns": 0, "mode": 0o644}
    return {"via": [], "python": sys.executable, "spec": {"node": folder.name, "size": size, "output": output, "next": nxt}}


def timed(argv: list[str]) -> tuple[float, float]:
    """Run ``argv``: its wall seconds and the CPU seconds (user + system) of it and every process it waited for."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    subprocess.run(argv, check=True)
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def relay_chain(source: Path, folders: list[Path]) -> tuple[float, float]:
    size = source.stat().st_size
    nxt = None
    for folder in reversed(folders):
        nxt = hop(folder, size, nxt)
    spec = {"node": "head", "size": size, "input": str(source), "next": nxt}
    return timed(_blob_relay.command(sys.executable, CODE, spec))


def coreutils_chain(source: Path, folders: list[Path]) -> tuple[float, float]:
    copies = [str(folder / "blob") for folder in folders]
    script = f"cat {source} | " + "".join(f"tee {copy} | " for copy in copies[:-1]) + f"cat > {copies[-1]}"
    return timed(["sh", "-c", script])


def clean(folders: list[Path]) -> None:
    for folder in folders:
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mb", type=int, default=1024)
    parser.add_argument("--repeat", type=int, default=4)
    parser.add_argument("--write", action="store_true", help=f"replace the section '{SECTION}' of docs/benchmarks.md")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir="/dev/shm") as tmp:
        root = Path(tmp)
        source = root / "source"
        with source.open("wb") as f:
            for _block in range(args.size_mb):
                f.write(os.urandom(1 << 20))
        source.read_bytes()  # warm the page cache
        rows = []
        for hops in (1, 2):
            folders = [root / f"node{i}" for i in range(1, hops + 1)]
            times: dict[str, list[tuple[float, float]]] = {"relay": [], "coreutils": []}
            for run in range(args.repeat):
                cases = [("coreutils", coreutils_chain), ("relay", relay_chain)]
                for name, chain in cases if run % 2 == 0 else cases[::-1]:  # neither always runs first
                    clean(folders)
                    times[name].append(chain(source, folders))
                    assert all((folder / "blob").stat().st_size == source.stat().st_size for folder in folders)
            gib = args.size_mb / 1024
            wall = {name: statistics.median(w for w, _cpu in runs) for name, runs in times.items()}
            cpu = {name: statistics.median(c for _w, c in runs) / gib for name, runs in times.items()}
            rows.append((hops, gib / wall["relay"], gib / wall["coreutils"], cpu["relay"], cpu["coreutils"], cpu["relay"] / cpu["coreutils"]))
    lines = [
        SECTION,
        "",
        f"`.venv/bin/python bench/relay_throughput.py --size-mb {args.size_mb} --repeat {args.repeat} --write` on "
        f"{datetime.date.today().isoformat()}, {os.cpu_count()} CPUs, no network, files in /dev/shm: the relay's copy loop "
        "(read, write the copy, pass on) beside coreutils moving the same bytes through the same pipes and files (median of "
        "the runs).",
        "",
        "| chain | relay GiB/s | coreutils GiB/s | relay CPU s / GiB | coreutils CPU s / GiB | CPU relay / coreutils |",
        "|---|---|---|---|---|---|",
        *(
            f"| {hops} hop{'s' if hops > 1 else ''} | {relay:.2f} | {core:.2f} | {relay_cpu:.2f} | {core_cpu:.2f} | {ratio:.2f} |"
            for hops, relay, core, relay_cpu, core_cpu, ratio in rows
        ),
        "",
        "Reading: the relay's CPU per GiB is what to compare (wall times on a shared machine swing); a Spark's ssh",
        "stream carries about 0.6 GB/s, so the relay is not the limit where it copies clearly faster than that.",
    ]
    publish(SECTION, "\n".join(lines), args.write)
    return 0


if __name__ == "__main__":
    sys.exit(main())
