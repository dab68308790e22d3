# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests for the _model_metadata module util.

The cache path reads real hub caches built by hf_cache_factory. The Hub path talks to the lab's Hub stand-in
(tests/lab/standins/hf-hub) run as a subprocess on free ports, with repos imported with ``hf-hub --import``, tree
pages of 2 entries (so every listing is paginated), its LFS CDN on a second port (so the header ranges follow a
redirect) and a gated repo. The stand-in logs every request, which shows that no weights file is downloaded and
that the token is never sent to the CDN.
"""

from __future__ import annotations

import io
import json
import re
import socket
import struct
import time
import typing as t
import urllib.error
import urllib.request
from collections.abc import Mapping
from email.message import Message
from pathlib import Path

import numpy as np
import pytest
from ansible_collections.sparkops.inference.plugins.module_utils._model_metadata import (
    SOURCE_CACHE,
    SOURCE_HUB,
    TOKEN_HINT,
    HubClient,
    MetadataError,
    ModelMetadata,
    RepoFile,
    from_cache,
    from_hub,
    next_link,
    present_bytes,
    read_model_metadata,
    weight_files,
)
from ansible_collections.sparkops.inference.tests.unit.plugins.module_utils.hf_cache_factory import (
    COMMIT,
    INDEX,
    REPO_ID,
    HubCache,
    build_cache,
    model_files,
    shard_name,
)
from ansible_collections.sparkops.inference.tests.unit.plugins.module_utils.test__hf_snapshot import (
    DEEP_CONFIG,
    DEEP_SHARD,
    HUGE_DIMS_SHARD,
    SLOW_SHARD,
    nested,
    safetensors_file,
)
from hf_hub_process import Hub, import_repo
from safetensors.numpy import save_file

TOKEN = "hf_ModelMetadataTestToken0123456789"
TINY, SINGLE, LOOSE, NO_TOTAL, GATED = "acme/tiny-llm", "acme/single", "acme/loose-shards", "acme/no-total", "acme/gated"
# hf_cache_factory's tiny LM: per shard, F16 (8, 16) + F32 (8,) + I8 (4,) = 256 + 32 + 4 bytes of tensor data.
TINY_SHARD_BYTES = 8 * 16 * 2 + 8 * 4 + 4
# acme/single's tensors: F16 (64, 64) + F32 (10,) + I8 (3,).
SINGLE_BYTES = 64 * 64 * 2 + 10 * 4 + 3
# acme/loose-shards: two top-level shards of F32 (100,) and F32 (50,) without an index; original/ is not counted.
LOOSE_BYTES = 100 * 4 + 50 * 4


def tiny_cache_metadata(cache: HubCache) -> dict[str, t.Any]:
    """What model_metadata says of hf_cache_factory's tiny LM read from ``cache`` (3 shards, 8 files, all there)."""
    total = sum(len(data) for data in cache.files.values())
    return {
        "source": "cache",
        "commit": COMMIT,
        "config": json.loads(cache.files["config.json"]),
        "weight_bytes": 3 * TINY_SHARD_BYTES,
        "snapshot_bytes": total,
        "files": 8,
        "present_bytes": total,
        "architecture": "TinyLlmForCausalLM",
    }


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def write_files(folder: Path, files: Mapping[str, bytes]) -> Path:
    for path, data in files.items():
        target = folder / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    return folder


def safetensors_bytes(staging: Path, tensors: dict[str, np.ndarray[t.Any, t.Any]], metadata: dict[str, str] | None = None) -> bytes:
    staging.mkdir(parents=True, exist_ok=True)
    path = staging / "tmp.safetensors"
    save_file(tensors, str(path), metadata=metadata)
    data = path.read_bytes()
    path.unlink()
    return data


def config_bytes(architecture: str) -> bytes:
    return json.dumps({"architectures": [architecture], "num_hidden_layers": 2, "num_attention_heads": 4, "hidden_size": 16}).encode()


class Repo(t.NamedTuple):
    commit: str  # what hf-hub --import printed
    files: dict[str, bytes]


class Served(t.NamedTuple):
    hub: Hub
    repos: dict[str, Repo]


def serve(base: Path) -> t.Iterator[Served]:
    """Import the test repos into ``base``, start the stand-in and yield it; stop it afterwards (shared with the module's tests)."""
    root = base / "root"
    staging = base / "staging"
    tiny = model_files(staging, shards=3)
    single = {
        "config.json": config_bytes("SingleForCausalLM"),
        "model.safetensors": safetensors_bytes(
            staging,
            {
                "a": np.ones((64, 64), dtype=np.float16),
                "b": np.zeros(10, dtype=np.float32),
                "c": np.arange(3, dtype=np.int8),
            },
            # a header of a few kB, read in one range
            metadata={"format": "pt", "note": "x" * 5000},
        ),
    }
    loose = {
        "config.json": config_bytes("LooseForCausalLM"),
        "README.md": b"# two shards, no index\n",
        "model-00001-of-00002.safetensors": safetensors_bytes(staging, {"w1": np.ones(100, dtype=np.float32)}),
        "model-00002-of-00002.safetensors": safetensors_bytes(staging, {"w2": np.ones(50, dtype=np.float32)}),
        "original/consolidated.safetensors": safetensors_bytes(staging, {"w": np.ones(1000, dtype=np.float32)}),
    }
    index = json.loads(tiny[INDEX])
    no_total = {**tiny, INDEX: json.dumps({"weight_map": index["weight_map"]}).encode()}
    repos: dict[str, Repo] = {}
    for repo_id, files in ((TINY, tiny), (SINGLE, single), (LOOSE, loose), (NO_TOTAL, no_total), (GATED, no_total)):
        src = write_files(base / "src" / repo_id.replace("/", "_"), files)
        commit = import_repo(root, repo_id, src)
        assert re.fullmatch(r"[0-9a-f]{40}", commit), commit
        repos[repo_id] = Repo(commit, files)
    token_file = base / "token"
    token_file.write_text(TOKEN + "\n")
    hub = Hub(root, "--tree-page-size", "2", "--token-file", str(token_file), "--gated", GATED)
    assert hub.cdn is not None, f"no hub and CDN URLs in {hub.lines[0]!r}"
    try:
        yield Served(hub, repos)
    finally:
        assert hub.stop() == 0


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> t.Iterator[Served]:
    yield from serve(tmp_path_factory.mktemp("hub"))


def unreachable() -> str:
    return f"http://127.0.0.1:{free_port()}"


# --- pure helpers ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        (None, None),
        ("", None),
        ('<https://hub/api/models/a/b/tree/c?cursor=2>; rel="next"', "https://hub/api/models/a/b/tree/c?cursor=2"),
        ('<https://hub/p?cursor=1>; rel="prev", <https://hub/p?cursor=3>; rel="next"', "https://hub/p?cursor=3"),
        ("</api/models/a/b/tree/c?cursor=4>; rel=next", "https://hub/api/models/a/b/tree/c?cursor=4"),
        ('<https://hub/p?cursor=9>; rel="last"', None),
        ('<https://hub/p?cursor=5>; title="x"; rel="prefetch next"', "https://hub/p?cursor=5"),
    ],
)
def test_next_link(header: str | None, expected: str | None) -> None:
    assert next_link(header, "https://hub/api/models/a/b/tree/c?recursive=true") == expected


def test_weight_files() -> None:
    assert weight_files(["model.safetensors", "consolidated.safetensors", "config.json"]) == ["model.safetensors"]
    assert weight_files(["b.safetensors", "a.safetensors", "original/c.safetensors", "x.bin"]) == ["a.safetensors", "b.safetensors"]
    assert weight_files(["pytorch_model.bin"]) == []


def test_architecture() -> None:
    def meta(config: dict[str, t.Any]) -> ModelMetadata:
        return ModelMetadata(source=SOURCE_HUB, commit=COMMIT, config=config, weight_bytes=1, snapshot_bytes=1, files=1, present_bytes=0)

    assert meta({"architectures": ["A", "B"]}).architecture == "A"
    assert meta({}).architecture is None
    assert meta({"architectures": []}).architecture is None
    assert meta({"architectures": [3]}).as_dict()["architecture"] is None


def test_present_bytes_counts_whole_blobs_only(tmp_path: Path) -> None:
    blobs = tmp_path / "models--acme--m" / "blobs"
    blobs.mkdir(parents=True)
    (blobs / "aaa").write_bytes(b"12345")
    (blobs / "bbb").write_bytes(b"12")  # smaller than the file: not whole
    (blobs / "ccc.incomplete").write_bytes(b"123")
    files = [RepoFile("a", 5, "aaa"), RepoFile("b", 3, "bbb"), RepoFile("c", 3, "ccc"), RepoFile("d", 4, None), RepoFile("e", 1, "../x")]
    assert present_bytes(str(tmp_path), "acme/m", files) == 5
    assert present_bytes(str(tmp_path / "nowhere"), "acme/m", files) == 0
    assert present_bytes(None, "acme/m", files) == 0


# --- the cache ---------------------------------------------------------------------------------------------------


def test_cache_answers_without_the_network(tmp_path: Path) -> None:
    cache = build_cache(tmp_path)
    result = read_model_metadata(REPO_ID, "main", cache_dir=str(cache.cache_dir), endpoint=unreachable())
    total = sum(len(data) for data in cache.files.values())
    assert result.source == SOURCE_CACHE
    assert result.commit == COMMIT
    assert result.config == json.loads(cache.files["config.json"])
    assert result.architecture == "TinyLlmForCausalLM"
    assert result.weight_bytes == 3 * TINY_SHARD_BYTES
    assert (result.snapshot_bytes, result.files, result.present_bytes) == (total, 8, total)
    assert result.warnings == []
    assert result.as_dict() == tiny_cache_metadata(cache)


def test_cache_by_commit_and_tag(tmp_path: Path) -> None:
    cache = build_cache(tmp_path, refs=("main", "v1.0"))
    for revision in (COMMIT, "v1.0"):
        result, why = from_cache(REPO_ID, revision, str(cache.cache_dir))
        assert why is None
        assert result is not None and result.commit == COMMIT and result.source == SOURCE_CACHE


def test_cache_single_file(tmp_path: Path) -> None:
    cache = build_cache(tmp_path, single=True)
    result, _why = from_cache(REPO_ID, "main", str(cache.cache_dir))
    assert result is not None and result.weight_bytes == TINY_SHARD_BYTES and result.files == 5


def test_cache_counts_the_headers_not_the_index_total(tmp_path: Path) -> None:
    files = model_files(tmp_path / "staging")
    index = json.loads(files[INDEX])
    index["metadata"]["total_size"] = 12345
    cache = build_cache(tmp_path, files={**files, INDEX: json.dumps(index).encode()})
    result, _why = from_cache(REPO_ID, "main", str(cache.cache_dir))
    assert result is not None and result.weight_bytes == 3 * TINY_SHARD_BYTES
    assert any("total_size" in warning for warning in result.warnings)


@pytest.mark.parametrize(
    ("damage", "why"),
    [
        ("no_repo", "is not in the Hugging Face cache"),
        ("other_revision", "revision 'v2'"),
        ("missing_shard", "is missing (a shard named in"),
        ("dangling", "dangling symlink"),
        ("truncated", "bad safetensors file: truncated"),
        ("no_config", "config.json is missing"),
        ("no_weights", "the snapshot has no weights"),
    ],
)
def test_incomplete_cache_does_not_answer(tmp_path: Path, damage: str, why: str) -> None:
    cache = build_cache(tmp_path)
    revision = "main"
    cache_dir = str(tmp_path / "empty") if damage == "no_repo" else str(cache.cache_dir)
    if damage == "other_revision":
        revision = "v2"
    elif damage == "missing_shard":
        cache.remove(shard_name(2, 3))
    elif damage == "dangling":
        cache.blob(shard_name(1, 3)).unlink()
    elif damage == "truncated":
        blob = cache.blob(shard_name(3, 3))
        blob.write_bytes(blob.read_bytes()[:-5])
    elif damage == "no_config":
        cache.remove("config.json")
    elif damage == "no_weights":
        for name in (shard_name(1, 3), shard_name(2, 3), shard_name(3, 3), INDEX):
            cache.remove(name)
    result, reason = from_cache(REPO_ID, revision, cache_dir)
    assert result is None
    assert reason is not None and why in reason


def test_cache_failure_is_in_the_hub_error(tmp_path: Path) -> None:
    cache = build_cache(tmp_path)
    cache.remove(shard_name(2, 3))
    endpoint = unreachable()
    with pytest.raises(MetadataError) as raised:
        read_model_metadata(REPO_ID, "main", cache_dir=str(cache.cache_dir), endpoint=endpoint, timeout=5)
    message = str(raised.value)
    assert message.startswith(f"{REPO_ID} at revision main from {endpoint}: {endpoint} is unreachable from this host: connection refused")
    assert f"and the cache {cache.cache_dir} cannot answer: {shard_name(2, 3)} is missing" in message


def test_bad_repo_id(tmp_path: Path) -> None:
    with pytest.raises(MetadataError, match="is not a Hugging Face repo id"):
        read_model_metadata("a/b/c", cache_dir=str(tmp_path), endpoint=unreachable())


# --- the Hub -----------------------------------------------------------------------------------------------------


def safetensors_requests(lines: list[str], repo_id: str) -> list[str]:
    """The requests of a weights file (not the index) of ``repo_id``, at the Hub or at the CDN."""
    return [line for line in lines if re.search(r"\.safetensors\s", line) and (repo_id in line or repo_id.replace("/", "%2F") in line)]


def test_hub_with_index(served: Served, tmp_path: Path) -> None:
    hub, repo = served.hub, served.repos[TINY]
    mark = len(hub.lines)
    result = from_hub(TINY, "main", endpoint=hub.url, cache_dir=str(tmp_path))
    assert result.source == SOURCE_HUB
    assert result.commit == repo.commit
    assert result.config == json.loads(repo.files["config.json"])
    assert result.architecture == "TinyLlmForCausalLM"
    assert result.weight_bytes == 3 * TINY_SHARD_BYTES  # the index's metadata.total_size, the exact tensor bytes here
    assert result.snapshot_bytes == sum(len(data) for data in repo.files.values())
    assert result.files == 8
    assert result.present_bytes == 0
    assert result.warnings == []
    lines = hub.requests_since(mark)
    # 8 files in pages of 2: 4 pages, each but the last with a Link to the next.
    assert len([line for line in lines if f"/api/models/{TINY}/tree/{repo.commit}" in line]) == 4
    assert any(f"GET /api/models/{TINY}/revision/main 200" in line for line in lines)
    assert safetensors_requests(lines, TINY) == []  # the index answers: no shard is touched
    assert all(" 200 " in line for line in lines), lines


def test_hub_by_commit(served: Served) -> None:
    repo = served.repos[TINY]
    result = from_hub(TINY, repo.commit, endpoint=served.hub.url)
    assert result.commit == repo.commit and result.weight_bytes == 3 * TINY_SHARD_BYTES


def test_hub_single_file_reads_the_header_only(served: Served) -> None:
    hub, repo = served.hub, served.repos[SINGLE]
    mark = len(hub.lines)
    result = from_hub(SINGLE, "main", endpoint=hub.url + "/")
    assert result.weight_bytes == SINGLE_BYTES
    assert result.architecture == "SingleForCausalLM"
    assert (result.files, result.snapshot_bytes) == (2, sum(len(data) for data in repo.files.values()))
    assert result.warnings == []
    shard = repo.files["model.safetensors"]
    (header_len,) = struct.unpack("<Q", shard[:8])
    assert header_len > 5000
    lines = safetensors_requests(hub.requests_since(mark), SINGLE)
    hub_lines = [line for line in lines if line.startswith("[hub]")]
    cdn_lines = [line for line in lines if line.startswith("[cdn]")]
    # two requests, each redirected to the CDN, which serves exactly the two ranges: no tensor data at all
    assert [line.split()[3] for line in hub_lines] == ["302", "302"]
    assert [re.search(r"range=(\S+) sent=(\d+)", line).groups() for line in cdn_lines] == [  # type: ignore[union-attr]
        ("bytes=0-7", "8"),
        (f"bytes=8-{header_len + 7}", str(header_len)),
    ]
    assert all("auth=no" in line for line in lines)


def test_hub_loose_shards_paginated(served: Served) -> None:
    repo = served.repos[LOOSE]
    result = from_hub(LOOSE, "main", endpoint=served.hub.url)
    assert result.weight_bytes == LOOSE_BYTES  # the top-level shards, not original/consolidated.safetensors
    assert result.files == 5  # across 3 tree pages (folders are entries too)
    assert result.snapshot_bytes == sum(len(data) for data in repo.files.values())


def test_hub_index_without_total_reads_the_shards(served: Served) -> None:
    hub = served.hub
    mark = len(hub.lines)
    result = from_hub(NO_TOTAL, "main", endpoint=hub.url)
    assert result.weight_bytes == 3 * TINY_SHARD_BYTES
    assert result.warnings == [f"{INDEX} has no metadata.total_size: the weight bytes were read from the 3 shards' headers"]
    cdn = [line for line in safetensors_requests(hub.requests_since(mark), NO_TOTAL) if line.startswith("[cdn]")]
    assert len(cdn) == 6 and all("range=bytes=" in line for line in cdn)


def test_hub_present_bytes_from_a_partial_cache(served: Served, tmp_path: Path) -> None:
    repo = served.repos[TINY]
    cache = build_cache(tmp_path, repo_id=TINY, commit=repo.commit, files=repo.files)
    cache.remove(shard_name(2, 3))  # the cache cannot answer: the Hub does, and the blobs there count
    cache.remove("tokenizer.json")
    result = read_model_metadata(TINY, "main", cache_dir=str(cache.cache_dir), endpoint=served.hub.url)
    assert result.source == SOURCE_HUB
    assert result.commit == repo.commit
    assert result.present_bytes == result.snapshot_bytes - len(repo.files[shard_name(2, 3)]) - len(repo.files["tokenizer.json"])
    assert 0 < result.present_bytes < result.snapshot_bytes


def test_hub_revision_not_found(served: Served) -> None:
    with pytest.raises(MetadataError) as raised:
        from_hub(TINY, "v9", endpoint=served.hub.url)
    assert str(raised.value) == (
        f"{TINY} at revision v9 from {served.hub.url}: revision 'v9' not found"
        f" (HTTP 404 RevisionNotFound (Invalid rev id: v9) for GET /api/models/{TINY}/revision/v9)"
    )


def test_hub_repo_not_found(served: Served) -> None:
    with pytest.raises(MetadataError) as raised:
        from_hub("acme/nope", "main", endpoint=served.hub.url)
    assert str(raised.value).startswith(f"acme/nope at revision main from {served.hub.url}: repo acme/nope not found (HTTP 404 RepoNotFound")


def test_hub_gated_without_token(served: Served) -> None:
    with pytest.raises(MetadataError) as raised:
        from_hub(GATED, "main", endpoint=served.hub.url)
    message = str(raised.value)
    assert message.startswith(f"{GATED} at revision main from {served.hub.url}: {TOKEN_HINT} (HTTP 401 GatedRepo")
    assert "/config.json" in message
    assert TOKEN not in message


def test_hub_gated_with_a_wrong_token(served: Served) -> None:
    wrong = "hf_WrongToken42"
    with pytest.raises(MetadataError) as raised:
        from_hub(GATED, "main", endpoint=served.hub.url, token=wrong)
    message = str(raised.value)
    assert TOKEN_HINT in message and "HTTP 403 GatedRepo" in message and "the token given was refused" in message
    assert wrong not in message and TOKEN not in message


def test_hub_gated_with_the_token(served: Served) -> None:
    hub, repo = served.hub, served.repos[GATED]
    mark = len(hub.lines)
    result = from_hub(GATED, "main", endpoint=hub.url, token=TOKEN)
    assert result.commit == repo.commit and result.weight_bytes == 3 * TINY_SHARD_BYTES  # by the shards' headers
    assert TOKEN not in json.dumps(result.as_dict()) and TOKEN not in json.dumps(result.warnings)
    lines = hub.requests_since(mark)
    hub_lines = [line for line in lines if line.startswith("[hub]")]
    cdn_lines = [line for line in lines if line.startswith("[cdn]")]
    assert hub_lines and all("auth=yes" in line for line in hub_lines)
    # the shards' header ranges were redirected to the CDN: the token stayed with the Hub
    assert len(cdn_lines) == 6 and all("auth=no" in line for line in cdn_lines)


def test_hub_unreachable() -> None:
    endpoint = unreachable()
    with pytest.raises(MetadataError) as raised:
        from_hub(TINY, "main", endpoint=endpoint, token=TOKEN, timeout=5)
    message = str(raised.value)
    assert message == (
        f"{TINY} at revision main from {endpoint}: {endpoint} is unreachable from this host: connection refused (for GET /api/models/{TINY}/revision/main)"
    )
    assert TOKEN not in message


# --- odd servers, through a fake opener ------------------------------------------------------------------------


class Answer:
    """A response as ansible.module_utils.urls.Request.open returns it."""

    def __init__(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
        self.status = status
        self.body = io.BytesIO(body)
        self.headers = Message()
        for name, value in (headers or {}).items():
            self.headers[name] = value
        self.closed = False

    def getcode(self) -> int:
        return self.status

    def read(self, size: int = -1) -> bytes:
        return self.body.read(size)

    def close(self) -> None:
        self.closed = True


class FakeOpener:
    def __init__(self, routes: dict[str, t.Callable[[Mapping[str, str]], Answer]]) -> None:
        self.routes = routes
        self.calls: list[tuple[str, dict[str, str]]] = []

    def __call__(self, url: str, headers: Mapping[str, str], timeout: float) -> Answer:
        self.calls.append((url, dict(headers)))
        return self.routes[url](headers)


def http_error(url: str, status: int, headers: dict[str, str]) -> urllib.error.HTTPError:
    message = Message()
    for name, value in headers.items():
        message[name] = value
    return urllib.error.HTTPError(url, status, "Error", message, io.BytesIO(b"{}"))


def test_server_ignoring_range(tmp_path: Path) -> None:
    data = safetensors_bytes(tmp_path, {"a": np.ones(7, dtype=np.float32)})
    url = "https://hub/acme/m/resolve/" + COMMIT + "/model.safetensors"
    opener = FakeOpener({url: lambda headers: Answer(200, data)})  # the whole file, whatever the Range
    client = HubClient("acme/m", "main", endpoint="https://hub", opener=opener)
    assert client.header_bytes(COMMIT, RepoFile("model.safetensors", len(data))) == (28, None)
    assert [headers["Range"] for _url, headers in opener.calls] == ["bytes=0-7", f"bytes=8-{struct.unpack('<Q', data[:8])[0] + 7}"]


def test_header_size_mismatch_warns(tmp_path: Path) -> None:
    data = safetensors_bytes(tmp_path, {"a": np.ones(7, dtype=np.float32)})
    url = "https://hub/acme/m/resolve/" + COMMIT + "/model.safetensors"

    def ranged(headers: Mapping[str, str]) -> Answer:
        first, last = map(int, headers["Range"].removeprefix("bytes=").split("-"))
        return Answer(206, data[first : last + 1])

    client = HubClient("acme/m", "main", endpoint="https://hub", opener=FakeOpener({url: ranged}))
    data_bytes, warning = client.header_bytes(COMMIT, RepoFile("model.safetensors", len(data) + 10))
    assert data_bytes == 28
    assert warning is not None and f"the Hub lists {len(data) + 10} bytes, its header says {len(data)}" in warning


def test_bad_header_length() -> None:
    url = "https://hub/acme/m/resolve/" + COMMIT + "/model.safetensors"
    opener = FakeOpener({url: lambda headers: Answer(206, struct.pack("<Q", 10**9))})
    client = HubClient("acme/m", "main", endpoint="https://hub", opener=opener)
    with pytest.raises(MetadataError, match="safetensors header length 1000000000 is out of range for a file of 4096 bytes"):
        client.header_bytes(COMMIT, RepoFile("model.safetensors", 4096))


def test_token_echoed_by_the_server_is_masked() -> None:
    url = "https://hub/api/models/acme/m/revision/main"

    def refuse(headers: Mapping[str, str]) -> Answer:
        raise http_error(url, 401, {"X-Error-Message": f"bad token {TOKEN}"})

    opener = FakeOpener({url: refuse})
    with pytest.raises(MetadataError) as raised:
        from_hub("acme/m", "main", endpoint="https://hub", token=TOKEN, opener=opener)
    message = str(raised.value)
    assert TOKEN not in message and "bad token ********" in message
    assert f"{TOKEN_HINT} (the token given was not accepted: is it valid?) (HTTP 401" in message
    assert opener.calls[0][1] == {"Authorization": f"Bearer {TOKEN}"}


def test_401_repo_not_found_may_be_private() -> None:
    url = "https://hub/api/models/acme/m/revision/main"

    def refuse(headers: Mapping[str, str]) -> Answer:
        raise http_error(url, 401, {"X-Error-Code": "RepoNotFound", "X-Error-Message": "Repository not found"})

    with pytest.raises(MetadataError) as raised:
        from_hub("acme/m", "main", endpoint="https://hub", opener=FakeOpener({url: refuse}))
    assert f"repo acme/m not found, or it is {TOKEN_HINT} (HTTP 401 RepoNotFound (Repository not found)" in str(raised.value)


def test_token_only_to_the_endpoint_and_pages_end() -> None:
    base = "https://hub/api/models/acme/m/tree/" + COMMIT
    first, elsewhere = base + "?recursive=true", "https://elsewhere/page2"
    opener = FakeOpener(
        {
            first: lambda headers: Answer(
                200, json.dumps([{"type": "file", "path": "a", "size": 1, "oid": "x"}]).encode(), {"Link": f'<{elsewhere}>; rel="next"'}
            ),
            elsewhere: lambda headers: Answer(200, json.dumps([{"type": "directory", "path": "d"}]).encode()),
        }
    )
    client = HubClient("acme/m", "main", endpoint="https://hub", token=TOKEN, opener=opener)
    assert client.tree(COMMIT) == {"a": RepoFile("a", 1, "x")}
    assert [headers.get("Authorization") for _url, headers in opener.calls] == [f"Bearer {TOKEN}", None]


def test_pages_that_loop_are_refused() -> None:
    first = "https://hub/api/models/acme/m/tree/" + COMMIT + "?recursive=true"
    opener = FakeOpener({first: lambda headers: Answer(200, b"[]", {"Link": f'<{first}>; rel="next"'})})
    with pytest.raises(MetadataError, match="does not end"):
        HubClient("acme/m", "main", endpoint="https://hub", opener=opener).tree(COMMIT)


def test_not_json() -> None:
    url = "https://hub/api/models/acme/m/revision/main"
    opener = FakeOpener({url: lambda headers: Answer(200, b"<html>captive portal</html>")})
    with pytest.raises(MetadataError, match="the answer is not JSON: '<html>captive portal</html>'"):
        from_hub("acme/m", "main", endpoint="https://hub", opener=opener)


def test_no_safetensors() -> None:
    info = "https://hub/api/models/acme/m/revision/main"
    tree = f"https://hub/api/models/acme/m/tree/{COMMIT}?recursive=true"
    config = f"https://hub/acme/m/resolve/{COMMIT}/config.json"
    listing = [{"type": "file", "path": p, "size": 10, "oid": "x"} for p in ("config.json", "pytorch_model.bin")]
    opener = FakeOpener(
        {
            info: lambda headers: Answer(200, json.dumps({"sha": COMMIT}).encode()),
            tree: lambda headers: Answer(200, json.dumps(listing).encode()),
            config: lambda headers: Answer(200, b'{"architectures": ["X"]}'),
        }
    )
    with pytest.raises(MetadataError, match="no safetensors weights at commit"):
        from_hub("acme/m", "main", endpoint="https://hub", opener=opener)


# --- hostile answers and files (issue 15): a MetadataError or a warning naming the file, never another exception ------

HUB = "https://hub"
GOOD_SHARD = safetensors_file({"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}, b"\0" * 8)


def fake_hub(files: dict[str, bytes], listing: bytes | None = None) -> FakeOpener:
    """acme/m at COMMIT on a Hub holding ``files`` (ranges answered), listed by ``listing`` (raw JSON) if given."""
    entries = [{"type": "file", "path": path, "size": len(data), "oid": "x"} for path, data in files.items()]

    def ranged(data: bytes) -> t.Callable[[Mapping[str, str]], Answer]:
        def answer(headers: Mapping[str, str]) -> Answer:
            if "Range" not in headers:
                return Answer(200, data)
            first, last = map(int, headers["Range"].removeprefix("bytes=").split("-"))
            return Answer(206, data[first : last + 1])

        return answer

    routes = {f"{HUB}/acme/m/resolve/{COMMIT}/{path}": ranged(data) for path, data in files.items()}
    routes[f"{HUB}/api/models/acme/m/revision/main"] = lambda headers: Answer(200, json.dumps({"sha": COMMIT}).encode())
    routes[f"{HUB}/api/models/acme/m/tree/{COMMIT}?recursive=true"] = lambda headers: Answer(200, listing or json.dumps(entries).encode())
    return FakeOpener(routes)


def hub_metadata(files: dict[str, bytes], listing: bytes | None = None, seconds: float = 2.0) -> ModelMetadata:
    start = time.monotonic()
    try:
        return from_hub("acme/m", "main", endpoint=HUB, opener=fake_hub(files, listing))
    finally:
        assert time.monotonic() - start < seconds


CONFIG = b'{"architectures": ["X"], "num_hidden_layers": 2}'


def test_the_fake_hub_answers() -> None:
    metadata = hub_metadata({"config.json": CONFIG, "model.safetensors": GOOD_SHARD})
    assert (metadata.weight_bytes, metadata.architecture, metadata.warnings) == (8, "X", [])


@pytest.mark.parametrize(
    ("shard", "message"),
    [
        (HUGE_DIMS_SHARD, "model.safetensors: bad safetensors header: tensor 'w': shape holds 1000000000000000000000000000000, more than 64 bits hold"),
        (DEEP_SHARD, "model.safetensors: bad safetensors header: the header is nested too deeply for a JSON parser"),
        (SLOW_SHARD, "model.safetensors: bad safetensors header: tensor 'w': shape holds 1000000000000000000000000000000, more than 64 bits hold"),
    ],
    ids=["dims-10e30", "deep-100000", "2.6MB-of-dims"],
)
def test_a_hostile_header_on_the_hub_is_named(shard: bytes, message: str) -> None:
    with pytest.raises(MetadataError) as raised:
        hub_metadata({"config.json": CONFIG, "model.safetensors": shard})
    assert message in str(raised.value) and len(str(raised.value)) < 600


def test_a_header_over_the_cap_is_not_fetched() -> None:
    """The 8-byte length says 80 MB (under the reference's 100 MB, over our 64 MiB): the header itself is never asked for."""
    opener = fake_hub({"config.json": CONFIG})
    url = f"{HUB}/acme/m/resolve/{COMMIT}/model.safetensors"
    opener.routes[url] = lambda headers: Answer(206, struct.pack("<Q", 80_000_000))
    client = HubClient("acme/m", "main", endpoint=HUB, opener=opener)
    with pytest.raises(MetadataError, match="model.safetensors: safetensors header length 80000000 is out of range for a file of 10000000000 bytes"):
        client.header_bytes(COMMIT, RepoFile("model.safetensors", 10**10))
    assert [headers["Range"] for called, headers in opener.calls if called == url] == ["bytes=0-7"]


@pytest.mark.parametrize(
    ("files", "message"),
    [
        ({"config.json": DEEP_CONFIG}, f"GET /acme/m/resolve/{COMMIT}/config.json: the answer is nested more than 64 levels deep"),
        ({"config.json": b'{"a": ' + nested(65) + b"}"}, "config.json: the answer is nested more than 64 levels deep"),
        ({"config.json": CONFIG, INDEX: b'{"weight_map": ' + nested(100_000) + b"}"}, f"{INDEX}: the answer is nested more than 64 levels deep"),
    ],
    ids=["config-100000-deep", "config-66-deep", "index-100000-deep"],
)
def test_hostile_json_on_the_hub_is_named(files: dict[str, bytes], message: str) -> None:
    with pytest.raises(MetadataError) as raised:
        hub_metadata({**files, "model.safetensors": GOOD_SHARD})
    assert message in str(raised.value)


@pytest.mark.parametrize("size", [b"1e400", b"NaN", str(2**64).encode()])
def test_a_listed_size_past_any_file_is_refused(size: bytes) -> None:
    """1e400 (infinity) made an OverflowError, NaN a ValueError."""
    listing = b'[{"type": "file", "path": "config.json", "size": ' + size + b', "oid": "x"}]'
    with pytest.raises(MetadataError, match="an entry without a path or size"):
        hub_metadata({"config.json": CONFIG}, listing)


@pytest.mark.parametrize(("total", "shown"), [(b"1e400", "inf"), (b"NaN", "nan"), (str(10**400).encode(), "100000000000000000...0000000000000000000")])
def test_an_index_total_size_past_any_file_falls_back_to_the_headers(total: bytes, shown: str) -> None:
    index = b'{"metadata": {"total_size": ' + total + b'}, "weight_map": {"w": "model.safetensors"}}'
    metadata = hub_metadata({"config.json": CONFIG, INDEX: index, "model.safetensors": GOOD_SHARD})
    assert metadata.weight_bytes == 8
    assert metadata.warnings == [f"{INDEX}'s metadata.total_size is {shown}, not a byte count: the weight bytes were read from the 1 shards' headers"]


def test_a_hostile_cache_does_not_answer_and_says_why(tmp_path: Path) -> None:
    files = model_files(tmp_path / "staging")
    files["config.json"] = DEEP_CONFIG
    files[shard_name(2, 3)] = HUGE_DIMS_SHARD
    cache = build_cache(tmp_path, files=files)
    result, reason = from_cache(REPO_ID, "main", str(cache.cache_dir))
    assert result is None
    assert reason == "config.json: not a readable JSON file: nested more than 64 levels deep"
