# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Check that a Hugging Face model snapshot on disk is complete, with the standard library only.

Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.

Two layouts are understood, as huggingface_hub writes them:

* the hub cache: ``<cache>/models--<org>--<name>/`` with ``refs/<revision>`` (a file holding the commit; a PR
  is ``refs/refs/pr/<n>``), ``snapshots/<commit>/<path>`` (relative symlinks to ``../../blobs/<etag>``) and
  ``blobs/<etag>``, where the etag is the sha256 of an LFS file or the git blob sha1 of a regular file. A download
  in progress or interrupted leaves ``blobs/<etag>.incomplete`` (``blobs/<etag>.<id>.incomplete`` since
  huggingface_hub 1.x).
* an ``hf download --local-dir`` folder: the files themselves, and for each ``<path>`` a
  ``.cache/huggingface/download/<path>.metadata`` whose first line is the commit and second line the etag. A
  partial download is ``.cache/huggingface/download/<dir>/<short hash>.<etag>[.<id>].incomplete``.

:func:`check_snapshot` resolves the revision to a commit, lists the snapshot's files, checks that the required
files and the safetensors shards are there and resolve, checks every safetensors header against the file's size
(cheap: two small reads per file) and the shards against ``model.safetensors.index.json``, and in ``full`` mode
hashes every file against its etag (:mod:`._content_hash`). The result is a :class:`SnapshotReport`.

The verdict follows what the engine loads: the index's ``weight_map`` counts (every shard it names must be there, and
hold the tensors it puts in it), its ``metadata.total_size`` does not. No loader reads that number (see
:func:`_total_size_warning`), so a value that disagrees with the shards' headers, or is not a byte count, only warns.
"""

from __future__ import annotations

import base64
import gc
import hashlib
import json
import math
import os
import re
import time
import typing as t
from collections import Counter
from dataclasses import dataclass, field

from ansible_collections.sparkops.inference.plugins.module_utils._content_hash import HashJob, Manifest, algorithm_for, verify
from ansible_collections.sparkops.inference.plugins.module_utils._safetensors_header import (
    MAX_U64,
    SafetensorsHeader,
    SafetensorsHeaderError,
    bounded_repr,
    read_header,
)

MODE_QUICK = "quick"
MODE_FULL = "full"
CONFIG_FILE = "config.json"
INDEX_FILE = "model.safetensors.index.json"
SINGLE_FILE = "model.safetensors"
DEFAULT_REQUIRED_FILES = ("config.json", "tokenizer_config.json", "tokenizer.json|tokenizer.model|vocab.json+merges.txt")
MANIFEST_NAME = ".sparkops-verified.json"
LOCAL_HF_DIR = (".cache", "huggingface")
MAX_LISTED = 20
# The deepest a JSON file of a snapshot (or an answer of the Hub) may nest. A real config.json nests 4 or 5 levels
# (quantization_config.config_groups.<group>.weights); Python's JSON parser fails with RecursionError some 1000
# levels down, and whatever walks a deep document after it (repr, json.dumps, Ansible's handling of a module's result)
# may fail sooner. A document nested deeper than this is corrupt (issue 15).
MAX_JSON_DEPTH = 64
# The largest JSON file of a snapshot read (config.json, the index): as model_metadata's MAX_JSON_BYTES for the Hub's
# answers. The largest real index we know (~300k tensors) is ~25 MB; a config.json is a few kB.
MAX_JSON_FILE_BYTES = 64 << 20

_COMMIT = re.compile(r"[0-9a-f]{40}")
# huggingface_hub's validate_repo_id: an optional namespace, a name of at most 96 characters, no '--' or '..'.
_REPO_ID = re.compile(r"(\b[\w\-.]+\b/)?\b[\w\-.]{1,96}\b")


class SnapshotError(ValueError):
    """The arguments cannot describe a snapshot (a bad repo id or required file list); the message says why."""


class JsonDepthError(ValueError):
    """A JSON document nested more than :data:`MAX_JSON_DEPTH` levels deep."""


def json_depth_exceeds(document: t.Any, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether ``document`` nests objects and arrays more than ``limit`` levels deep (walked level by level, not recursively)."""
    level = [document] if isinstance(document, (dict, list)) else []
    depth = 0
    while level:
        depth += 1
        if depth > limit:
            return True
        nested: list[t.Any] = []
        for value in level:
            children = value.values() if isinstance(value, dict) else value
            nested.extend(child for child in children if isinstance(child, (dict, list)))
        level = nested
    return False


def load_json(text: str | bytes) -> t.Any:
    """``json.loads``, for untrusted JSON: a document nested more than :data:`MAX_JSON_DEPTH` levels deep raises
    :class:`JsonDepthError` (a ValueError, as malformed JSON), never ``RecursionError``."""
    too_deep = False
    collecting = gc.isenabled()
    gc.disable()  # the parse makes no cycles; the collector would walk every list it makes again and again
    try:
        document = json.loads(text)
    except RecursionError:
        too_deep = True
    finally:
        if collecting:
            gc.enable()
    if too_deep or json_depth_exceeds(document):
        raise JsonDepthError(f"nested more than {MAX_JSON_DEPTH} levels deep")
    return document


def read_json_file(path: str) -> t.Any:
    """:func:`load_json` of the file at ``path``, refusing (ValueError) one of more than :data:`MAX_JSON_FILE_BYTES`."""
    with open(path, "rb") as f:
        data = f.read(MAX_JSON_FILE_BYTES + 1)
    if len(data) > MAX_JSON_FILE_BYTES:
        raise ValueError(f"larger than {MAX_JSON_FILE_BYTES} bytes, which no real config or index comes near")
    return load_json(data.decode("utf-8"))


def default_cache_dir() -> str:
    """The hub cache huggingface_hub uses, from the environment as it reads it.

    ``HF_HUB_CACHE``, else the legacy ``HUGGINGFACE_HUB_CACHE``, else ``$HF_HOME/hub``, else
    ``$XDG_CACHE_HOME/huggingface/hub``, else ``~/.cache/huggingface/hub``; ``~`` and ``$VAR`` are expanded.
    """

    def expand(path: str) -> str:
        return os.path.expandvars(os.path.expanduser(path))

    default_home = os.path.join(os.path.expanduser("~"), ".cache")
    hf_home = expand(os.environ.get("HF_HOME", os.path.join(os.environ.get("XDG_CACHE_HOME", default_home), "huggingface")))
    legacy = os.environ.get("HUGGINGFACE_HUB_CACHE", os.path.join(hf_home, "hub"))
    return expand(os.environ.get("HF_HUB_CACHE", legacy))


def validate_repo_id(repo_id: str) -> None:
    if not _REPO_ID.fullmatch(repo_id) or "--" in repo_id or ".." in repo_id:
        raise SnapshotError(f"repo_id {repo_id!r} is not a Hugging Face repo id such as 'Qwen/Qwen3.5-122B-A10B-FP8'")


def repo_folder(repo_id: str) -> str:
    """The cache folder of a model repo: ``models--<org>--<name>``."""
    return "--".join(["models", *repo_id.split("/")])


def parse_required(spec: t.Sequence[str]) -> list[list[list[str]]]:
    """Parse O(required_files): each entry is alternatives separated by ``|``, each a ``+``-joined group of paths."""
    parsed: list[list[list[str]]] = []
    for entry in spec:
        alternatives = [[part.strip() for part in alt.split("+")] for alt in entry.split("|")]
        for alt in alternatives:
            for part in alt:
                if not part or part.startswith("/") or ".." in part.split("/"):
                    raise SnapshotError(f"required_files entry {entry!r}: {part!r} is not a path relative to the snapshot")
        parsed.append(alternatives)
    return parsed


def local_short_hash(filename: str) -> str:
    """huggingface_hub's short name of a local-dir download's ``.incomplete`` file for the file ``filename``."""
    return base64.urlsafe_b64encode(hashlib.sha1(f"{filename}.metadata".encode()).digest()).decode()


@dataclass
class FileEntry:
    """A file of the snapshot: ``real_path`` is None when it is a dangling symlink, ``etag`` its content address."""

    path: str
    location: str
    real_path: str | None
    size: int | None
    etag: str | None
    link: str | None = None

    def as_dict(self) -> dict[str, t.Any]:
        return {"path": self.path, "size": self.size, "etag": self.etag}


@dataclass(frozen=True)
class Corrupt:
    path: str
    reason: str

    def as_dict(self) -> dict[str, str]:
        return {"path": self.path, "reason": self.reason}


@dataclass
class _Resolution:
    """Where the snapshot is and what it holds, before any check of its content."""

    root: str
    commit: str | None = None
    snapshot_path: str | None = None
    refs: dict[str, str] = field(default_factory=dict)
    files: dict[str, FileEntry] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    # .incomplete files, relative to root, with the snapshot path they belong to when known
    incomplete: list[tuple[str, str | None]] = field(default_factory=list)
    # True for a local dir, whose .incomplete files are all its own
    incomplete_is_own: bool = False
    # a local dir's .incomplete files: (folder, short hash of the file's name) that names the file they are of
    incomplete_keys: dict[str, tuple[str, str]] = field(default_factory=dict)
    manifest_path: str | None = None


@dataclass
class SnapshotReport:
    """The outcome of :func:`check_snapshot`; :meth:`as_dict` is the module's result."""

    repo_id: str
    revision: str
    mode: str
    source: str
    root: str
    commit: str | None = None
    snapshot_path: str | None = None
    refs: dict[str, str] = field(default_factory=dict)
    files: list[FileEntry] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    corrupt: list[Corrupt] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    incomplete_files: list[str] = field(default_factory=list)
    stale_partials: list[str] = field(default_factory=list)
    unverified: list[str] = field(default_factory=list)
    architectures: list[str] | None = None
    shards: int = 0
    index_total_size: int | None = None
    # False when the index's metadata.total_size disagrees with the shards' tensor data (a warning, not a problem)
    index_total_size_matches: bool | None = None
    tensor_bytes: int | None = None
    hashed_files: int = 0
    hashed_bytes: int = 0
    reused_files: int = 0
    manifest_path: str | None = None
    manifest_written: bool = False
    elapsed: float = 0.0

    @property
    def complete(self) -> bool:
        return self.commit is not None and self.snapshot_path is not None and not self.problems

    @property
    def total_bytes(self) -> int:
        return sum(entry.size or 0 for entry in self.files)

    def message(self) -> str:
        """The failure message: where, then the first problems and how many more."""
        where = self.snapshot_path or self.root
        listed = "; ".join(self.problems[:MAX_LISTED])
        more = f"; and {len(self.problems) - MAX_LISTED} more" if len(self.problems) > MAX_LISTED else ""
        count = f"{len(self.problems)} problem{'s' if len(self.problems) != 1 else ''}"
        return f"{self.repo_id} at revision {self.revision} is incomplete in {where} ({self.mode} check, {count}): {listed}{more}"

    def as_dict(self) -> dict[str, t.Any]:
        return {
            "complete": self.complete,
            "repo_id": self.repo_id,
            "revision": self.revision,
            "commit": self.commit,
            "mode": self.mode,
            "source": self.source,
            "root": self.root,
            "snapshot_path": self.snapshot_path,
            "refs": dict(self.refs),
            "files": [entry.as_dict() for entry in self.files],
            "total_bytes": self.total_bytes,
            "missing": list(self.missing),
            "corrupt": [c.as_dict() for c in self.corrupt],
            "problems": list(self.problems),
            "incomplete_files": list(self.incomplete_files),
            "stale_partials": list(self.stale_partials),
            "unverified": list(self.unverified),
            "architectures": self.architectures,
            "shards": self.shards,
            "index_total_size": self.index_total_size,
            "index_total_size_matches": self.index_total_size_matches,
            "tensor_bytes": self.tensor_bytes,
            "hashed_files": self.hashed_files,
            "hashed_bytes": self.hashed_bytes,
            "reused_files": self.reused_files,
            "manifest_path": self.manifest_path,
            "manifest_written": self.manifest_written,
            "elapsed": round(self.elapsed, 6),
        }


def _walk(top: str, skip: t.Callable[[str], bool] = lambda rel: False, errors: list[str] | None = None) -> t.Iterator[tuple[str, str]]:
    """Yield (path relative to ``top`` in POSIX form, path) of every file and symlink below ``top``, sorted.

    Folders that cannot be listed are added to ``errors`` (when given) as problems.
    """
    found: list[tuple[str, str]] = []

    def failed(exc: OSError) -> None:
        if errors is not None:
            errors.append(f"cannot list {exc.filename}: {exc.strerror or exc}")

    for dirpath, dirnames, filenames in os.walk(top, onerror=failed):
        rel_dir = os.path.relpath(dirpath, top)
        rel_dir = "" if rel_dir == "." else rel_dir.replace(os.sep, "/") + "/"
        dirnames[:] = [d for d in dirnames if not skip(rel_dir + d) and not os.path.islink(os.path.join(dirpath, d))]
        for name in filenames:
            found.append((rel_dir + name, os.path.join(dirpath, name)))
    return iter(sorted(found))


def _entry(rel: str, location: str, etag: str | None) -> FileEntry:
    """Describe one file of a snapshot; a symlink that does not resolve has ``real_path`` None."""
    link = os.readlink(location) if os.path.islink(location) else None
    try:
        size = os.stat(location).st_size
    except OSError:
        return FileEntry(path=rel, location=location, real_path=None, size=None, etag=etag, link=link)
    return FileEntry(path=rel, location=location, real_path=os.path.realpath(location), size=size, etag=etag, link=link)


def _read_refs(repo_dir: str) -> dict[str, str]:
    refs: dict[str, str] = {}
    refs_dir = os.path.join(repo_dir, "refs")
    if os.path.isdir(refs_dir):
        for rel, path in _walk(refs_dir):
            try:
                with open(path, encoding="utf-8") as f:
                    refs[rel] = f.read().strip()
            except (OSError, UnicodeDecodeError):
                refs[rel] = ""
    return refs


def _resolve_cache(cache_dir: str, repo_id: str, revision: str) -> _Resolution:
    repo_dir = os.path.join(cache_dir, repo_folder(repo_id))
    res = _Resolution(root=repo_dir, manifest_path=os.path.join(repo_dir, MANIFEST_NAME))
    if not os.path.isdir(repo_dir):
        what = f"{repo_dir} does not exist" if os.path.isdir(cache_dir) else f"the cache folder {cache_dir} does not exist"
        res.problems.append(f"{repo_id} is not in the Hugging Face cache: {what}")
        return res
    res.refs = _read_refs(repo_dir)
    snapshots_dir = os.path.join(repo_dir, "snapshots")
    if revision in res.refs:
        commit = res.refs[revision]
        if not _COMMIT.fullmatch(commit):
            res.problems.append(f"refs/{revision} of {repo_id} holds {commit[:60]!r}, not a commit hash")
            return res
        via = f"refs/{revision} points to commit {commit}, but"
    elif _COMMIT.fullmatch(revision):
        commit = revision
        via = f"commit {commit} is not in the cache:"
    else:
        known = ", ".join(f"{name} ({commit[:12]})" for name, commit in sorted(res.refs.items())) or "none"
        snapshots = sorted(os.listdir(snapshots_dir)) if os.path.isdir(snapshots_dir) else []
        res.problems.append(
            f"revision {revision!r} of {repo_id} is not in the cache {repo_dir}: no refs/{revision} and not a 40-hex commit;"
            f" known refs: {known}; snapshots: {', '.join(snapshots) or 'none'}"
        )
        return res
    res.commit = commit
    snapshot = os.path.join(snapshots_dir, commit)
    if not os.path.isdir(snapshot):
        res.problems.append(f"{via} {snapshot} does not exist")
        return res
    res.snapshot_path = snapshot
    for rel, location in _walk(snapshot, errors=res.problems):
        etag = None
        if os.path.islink(location):
            # The first hop names the blob (the blob may itself link into a shared store).
            etag = os.path.basename(os.readlink(location))
        res.files[rel] = _entry(rel, location, etag if algorithm_for(etag) else None)
    blobs_dir = os.path.join(repo_dir, "blobs")
    if os.path.isdir(blobs_dir):
        owners: dict[str, str] = {}
        for rel, entry in res.files.items():
            if entry.link is not None:
                owners.setdefault(os.path.basename(entry.link), rel)
        for name in sorted(os.listdir(blobs_dir)):
            if name.endswith(".incomplete"):
                res.incomplete.append((f"blobs/{name}", owners.get(name.split(".", 1)[0])))
    return res


def _read_local_metadata(path: str) -> tuple[str, str] | None:
    try:
        with open(path, encoding="utf-8") as f:
            commit = f.readline().strip()
            etag = f.readline().strip()
    except (OSError, UnicodeDecodeError):
        return None
    return commit, etag


def _resolve_local(local_dir: str, revision: str) -> _Resolution:
    hf_dir = os.path.join(local_dir, *LOCAL_HF_DIR)
    res = _Resolution(root=local_dir, incomplete_is_own=True, manifest_path=os.path.join(hf_dir, MANIFEST_NAME))
    if not os.path.isdir(local_dir):
        res.problems.append(f"the local_dir {local_dir} does not exist")
        return res
    res.snapshot_path = local_dir
    download_dir = os.path.join(hf_dir, "download")
    hf_rel = "/".join(LOCAL_HF_DIR)
    commits: Counter[str] = Counter()
    for rel, location in _walk(local_dir, skip=lambda path: path == hf_rel, errors=res.problems):
        metadata = _read_local_metadata(os.path.join(download_dir, *rel.split("/")) + ".metadata")
        etag = None
        if metadata is not None:
            commits[metadata[0]] += 1
            etag = metadata[1]
        res.files[rel] = _entry(rel, location, etag if algorithm_for(etag) else None)
    if not commits:
        res.problems.append(f"no download metadata in {download_dir}: cannot tell the commit (not an 'hf download --local-dir' folder?)")
    else:
        res.commit = commits.most_common(1)[0][0]
        if len(commits) > 1:
            listed = ", ".join(f"{commit[:12]} ({count} files)" for commit, count in commits.most_common())
            res.problems.append(f"the files of {local_dir} come from several commits: {listed}")
        if not _COMMIT.fullmatch(res.commit):
            res.problems.append(f"the download metadata in {download_dir} names {res.commit[:60]!r}, not a commit hash")
        elif _COMMIT.fullmatch(revision) and revision != res.commit:
            res.problems.append(f"{local_dir} holds commit {res.commit}, not the requested revision {revision}")
    if os.path.isdir(download_dir):
        for rel, _location in _walk(download_dir):
            if rel.endswith(".incomplete"):
                directory, base = rel.rpartition("/")[::2]
                res.incomplete.append((f"{hf_rel}/download/{rel}", None))
                res.incomplete_keys[f"{hf_rel}/download/{rel}"] = (directory, base.split(".", 1)[0])
    return res


def _parse_index(path: str) -> tuple[dict[str, str], t.Any]:
    """Read ``model.safetensors.index.json``: its weight_map, and its metadata.total_size as written (None when absent).

    Only the weight_map can make the index invalid; the total size is judged by :func:`_total_size_warning`.
    """
    document = read_json_file(path)
    if not isinstance(document, dict):
        raise ValueError("not a JSON object")
    weight_map = document.get("weight_map")
    if not isinstance(weight_map, dict) or not weight_map:
        raise ValueError("no weight_map")
    for tensor, shard in weight_map.items():
        if not isinstance(shard, str) or not shard or shard.startswith("/") or ".." in shard.split("/"):
            raise ValueError(f"weight_map maps {bounded_repr(tensor)} to {bounded_repr(shard)}, not a file of the snapshot")
    metadata = document.get("metadata") or {}
    return weight_map, metadata.get("total_size") if isinstance(metadata, dict) else None


def byte_count(value: t.Any) -> int | None:
    """``value`` as a byte count, or None when it is not one (a bool, a string, a negative, fractional or infinite
    number, or one past 64 bits, which no file reaches)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0 or value > MAX_U64:
        return None
    if isinstance(value, float) and (not math.isfinite(value) or not value.is_integer()):
        return None
    return int(value)


def _total_size_warning(report: SnapshotReport, total: t.Any, shards: int) -> str | None:
    """The warning, if any, about the index's ``metadata.total_size``; sets the report's total-size fields.

    ``metadata.total_size`` is whatever the tool that saved the checkpoint counted (huggingface_hub 2.4.0
    ``serialization/_base.py:93-160`` adds each tensor's whole storage, once per storage, not the bytes the shards end
    up holding; quantisers and converters write their own), and **no loader reads it**, so a value that disagrees
    with the shards, or is not a byte count, cannot stop the model from loading:

    * vLLM 0.30.0 reads only ``["weight_map"]`` from the index: ``model_executor/model_loader/weight_utils.py:512``
      (``download_weights_from_hf``) and ``:621-634`` (``filter_duplicate_safetensors_files``, called from
      ``default_loader.py:231-233``, the only check it makes on the index: the shards the weight_map names exist);
      ``"total_size"`` appears nowhere in its loaders (nor anywhere in the wheel but an unrelated NCCL allocator).
    * transformers 5.10.4 (vLLM 0.30's minimum) ``utils/hub.py:879-885`` copies ``metadata`` and reads
      ``weight_map``; of the metadata, only ``dtype`` is ever read (``modeling_utils.py:841-842``).
    * safetensors 0.8.0 opens single files and has no notion of the index (no ``total_size`` in its Python code or
      in ``_safetensors_rust.abi3.so``); huggingface_hub 2.4.0 ``serialization/_torch.py:559-569`` loads a sharded
      checkpoint from the weight_map alone.

    So it only warns: the snapshot stays complete, and no repair (re-download, resend) is triggered by it.
    """
    if total is None:
        return None
    report.index_total_size = byte_count(total)
    if report.index_total_size is None:
        return f"{INDEX_FILE}: metadata.total_size is {bounded_repr(total)}, not a byte count; no loader reads it, so the snapshot still loads"
    if report.tensor_bytes is None:
        return None
    report.index_total_size_matches = report.tensor_bytes == report.index_total_size
    if report.index_total_size_matches:
        return None
    return (
        f"{INDEX_FILE}: metadata.total_size is {report.index_total_size} bytes, but the {shards} shard(s) hold"
        f" {report.tensor_bytes} bytes of tensor data; no loader reads it, so the snapshot still loads"
    )


def _listing(names: t.Sequence[str], limit: int = 5) -> str:
    shown = ", ".join(names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


class _Checker:
    """Collects missing and corrupt files, and the problems in the order they are found."""

    def __init__(self, report: SnapshotReport, files: dict[str, FileEntry]) -> None:
        self.report = report
        self.files = files
        self.bad: set[str] = set()

    def present(self, path: str) -> bool:
        entry = self.files.get(path)
        return entry is not None and entry.real_path is not None

    def missing(self, path: str, why: str = "") -> None:
        if path in self.report.missing or path in self.files:
            return
        self.report.missing.append(path)
        self.report.problems.append(f"{path} is missing{why}")

    def corrupt(self, path: str, reason: str) -> None:
        self.report.corrupt.append(Corrupt(path, reason))
        self.report.problems.append(f"{path}: {reason}")
        self.bad.add(path)

    def links(self) -> None:
        for rel, entry in self.files.items():
            if entry.real_path is None:
                self.corrupt(rel, f"dangling symlink to {entry.link}" if entry.link is not None else "cannot be read")

    def required(self, requirements: list[list[list[str]]]) -> None:
        for alternatives in requirements:
            if any(all(self.present(p) for p in alt) for alt in alternatives):
                continue
            others = [" + ".join(alt) for alt in alternatives[1:]]
            why = f" (or {', or '.join(others)})" if others else ""
            for path in alternatives[0]:
                if not self.present(path):
                    self.missing(path, why)

    def config(self) -> None:
        if not self.present(CONFIG_FILE):
            return
        entry = self.files[CONFIG_FILE]
        try:
            config = read_json_file(entry.location)
        except (OSError, ValueError) as exc:
            self.corrupt(CONFIG_FILE, f"not a readable JSON file: {exc}")
            return
        if not isinstance(config, dict):
            self.corrupt(CONFIG_FILE, "not a JSON object")
            return
        architectures = config.get("architectures")
        if isinstance(architectures, list):
            self.report.architectures = [a if isinstance(a, str) else bounded_repr(a) for a in architectures]

    def weights(self) -> None:
        report = self.report
        weight_map: dict[str, str] | None = None
        total_size: t.Any = None
        if INDEX_FILE in self.files:
            if self.present(INDEX_FILE):
                try:
                    weight_map, total_size = _parse_index(self.files[INDEX_FILE].location)
                except (OSError, ValueError) as exc:
                    self.corrupt(INDEX_FILE, f"not a valid safetensors index: {exc}")
            shards = sorted(set(weight_map.values())) if weight_map else []
            for shard in shards:
                if not self.present(shard):
                    self.missing(shard, f" (a shard named in {INDEX_FILE})")
        elif SINGLE_FILE in self.files:
            shards = [SINGLE_FILE]
        else:
            shards = []
            self.missing(SINGLE_FILE, f": the snapshot has no weights (neither {INDEX_FILE} nor {SINGLE_FILE})")
        report.shards = len(shards)

        headers: dict[str, SafetensorsHeader] = {}
        for rel, entry in self.files.items():
            if not rel.endswith(".safetensors") or entry.real_path is None:
                continue
            try:
                headers[rel] = read_header(entry.location)
            except SafetensorsHeaderError as exc:
                self.corrupt(rel, f"bad safetensors file: {exc}")
            except OSError as exc:
                self.corrupt(rel, f"cannot be read: {exc.strerror or exc}")
        if shards and all(shard in headers for shard in shards):
            report.tensor_bytes = sum(headers[shard].data_bytes for shard in shards)
        if weight_map is None:
            return
        absent: dict[str, list[str]] = {}
        for tensor, shard in weight_map.items():
            if shard in headers and tensor not in headers[shard].tensors:
                absent.setdefault(shard, []).append(tensor)
        for shard, tensors in sorted(absent.items()):
            self.corrupt(shard, f"{len(tensors)} tensor(s) that {INDEX_FILE} puts in it are not in its header: {_listing(sorted(tensors))}")
        warning = _total_size_warning(report, total_size, len(shards))
        if warning is not None:
            report.warnings.append(warning)

    def incomplete(self, res: _Resolution) -> None:
        owners: dict[tuple[str, str], str] = {}
        if res.incomplete_keys:
            for name in [*self.files, *self.report.missing]:
                directory, base = name.rpartition("/")[::2]
                owners[(directory, local_short_hash(base))] = name
        for rel, owner in res.incomplete:
            key = res.incomplete_keys.get(rel)
            if owner is None and key is not None:
                owner = owners.get(key)
            self.report.incomplete_files.append(rel)
            broken = {c.path for c in self.report.corrupt}
            if owner is not None and key is None and owner not in self.report.missing and owner not in broken:
                # huggingface_hub renames a blob into place only once it is whole, and names each attempt's partial
                # <etag>.<id>.incomplete: next to the whole blob, the partial is what a killed attempt left.
                self.report.stale_partials.append(rel)
                self.report.warnings.append(f"{rel}: left by an interrupted download of {owner}, which is there whole; it can be deleted")
            elif owner is not None:
                self.report.problems.append(f"{owner}: its download is not finished ({rel} is there)")
            elif res.incomplete_is_own or self.report.missing:
                self.report.problems.append(f"a partial download is left in {rel}")
            else:
                self.report.warnings.append(f"{rel}: a partial download of no file of this snapshot (another revision, or a download in progress)")


def check_snapshot(
    repo_id: str,
    revision: str = "main",
    *,
    cache_dir: str | None = None,
    local_dir: str | None = None,
    mode: str = MODE_QUICK,
    required_files: t.Sequence[str] = DEFAULT_REQUIRED_FILES,
    manifest: bool = True,
    manifest_path: str | None = None,
    write_manifest: bool = True,
    hash_workers: int | None = None,
    clock: t.Callable[[], float] = time.monotonic,
) -> SnapshotReport:
    """Check the snapshot of ``repo_id`` at ``revision`` in ``local_dir``, or else in ``cache_dir`` (default: as huggingface_hub).

    ``quick`` reads only headers; ``full`` also hashes every file with an etag against it, on ``hash_workers``
    threads, reusing and (when ``write_manifest``) updating the manifest of verified files. Raises
    :class:`SnapshotError` for arguments that cannot name a snapshot; every other problem is in the report.
    """
    start = clock()
    validate_repo_id(repo_id)
    if mode not in (MODE_QUICK, MODE_FULL):
        raise SnapshotError(f"mode {mode!r} is neither {MODE_QUICK!r} nor {MODE_FULL!r}")
    requirements = parse_required(required_files)
    if local_dir is not None:
        source = "local_dir"
        res = _resolve_local(local_dir, revision)
    else:
        source = "cache_dir"
        res = _resolve_cache(cache_dir if cache_dir is not None else default_cache_dir(), repo_id, revision)
    report = SnapshotReport(
        repo_id=repo_id,
        revision=revision,
        mode=mode,
        source=source,
        root=res.root,
        commit=res.commit,
        snapshot_path=res.snapshot_path,
        refs=res.refs,
        files=list(res.files.values()),
        problems=list(res.problems),
        warnings=list(res.warnings),
    )
    if res.snapshot_path is None:
        report.elapsed = clock() - start
        return report

    checker = _Checker(report, res.files)
    checker.links()
    checker.required(requirements)
    checker.config()
    checker.weights()
    checker.incomplete(res)
    report.unverified = [rel for rel, entry in res.files.items() if entry.real_path is not None and entry.etag is None]

    if mode == MODE_FULL:
        _hash(report, res, checker, manifest, manifest_path, write_manifest, hash_workers)
    report.elapsed = clock() - start
    return report


def _hash(
    report: SnapshotReport,
    res: _Resolution,
    checker: _Checker,
    use_manifest: bool,
    manifest_path: str | None,
    write_manifest: bool,
    hash_workers: int | None,
) -> None:
    """Hash every readable, not yet corrupt file that has an etag; record mismatches as corrupt."""
    jobs: dict[str, HashJob] = {}
    paths: dict[str, list[str]] = {}
    for rel, entry in res.files.items():
        algorithm = algorithm_for(entry.etag)
        if entry.real_path is None or entry.etag is None or algorithm is None or rel in checker.bad:
            continue
        jobs.setdefault(entry.real_path, HashJob(key=entry.real_path, address=entry.etag, algorithm=algorithm))
        paths.setdefault(entry.real_path, []).append(rel)
    manifest = None
    if use_manifest:
        report.manifest_path = manifest_path or res.manifest_path
        if report.manifest_path is not None:
            manifest, warning = Manifest.load(report.manifest_path)
            if warning:
                report.warnings.append(warning)
    workers = hash_workers if hash_workers is not None else min(8, os.cpu_count() or 1)
    result = verify(list(jobs.values()), manifest, workers)
    report.hashed_files, report.hashed_bytes, report.reused_files = result.hashed_files, result.hashed_bytes, result.reused_files
    for outcome in result.outcomes:
        if outcome.ok:
            continue
        if outcome.error is not None:
            reason = outcome.error
        else:
            digest = outcome.digest or ""
            reason = f"content does not match its etag: {outcome.job.algorithm} is {digest[:16]}..., the etag {outcome.job.address[:16]}..."
        for rel in paths[outcome.job.key]:
            checker.corrupt(rel, reason)
    if manifest is not None and report.manifest_path is not None and write_manifest and manifest.touched:
        try:
            manifest.save(report.manifest_path)
            report.manifest_written = True
        except OSError as exc:
            report.warnings.append(f"could not write the manifest {report.manifest_path}: {exc}")
