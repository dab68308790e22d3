# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests for the lab's Hugging Face Hub stand-in (tests/lab/standins/hf-hub), against the real client.

The stand-in runs as a subprocess on free ports and serves a small real model made by the lab's builder
(sparklab.hf_model), imported with ``hf-hub --import``. huggingface_hub (the version the collection pins) downloads
it in-process (snapshot_download) and as the ``hf download`` CLI; the resulting caches are compared with the
builder's files and checked by the collection's own snapshot checker (module_utils._hf_snapshot, full mode).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
import typing as t
from pathlib import Path

import pytest
from ansible_collections.sparkops.inference.plugins.module_utils._hf_snapshot import check_snapshot
from hf_hub_process import HF_HUB, Hub, call, import_repo, wait_until
from sparklab.hf_model import SnapshotInfo, build_hub_cache, read_hub_snapshot, repo_folder

hf_hub = pytest.importorskip("huggingface_hub")
from huggingface_hub import constants as hf_constants  # noqa: E402 - after the importorskip
from huggingface_hub.errors import (  # noqa: E402
    EntryNotFoundError,
    GatedRepoError,
    RepositoryNotFoundError,
    RevisionNotFoundError,
)

HF_CLI = Path(sys.executable).parent / "hf"
REPO, GATED, NESTED = "sparkops-lab/tiny-moe", "sparkops-lab/gated-moe", "sparkops-lab/nested"
TOKEN = "hf_LabStandInToken0123456789abcdef"
SHARDS = [f"model-0000{i}-of-00003.safetensors" for i in (1, 2, 3)]


# --- fixtures: the model, the served root and the server --------------------------------------------------------


class Served(t.NamedTuple):
    root: Path
    model: SnapshotInfo  # the builder's snapshot: its files, etags and commit
    nested_src: Path  # the handmade repo's files


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Served:
    base = tmp_path_factory.mktemp("hf-hub")
    model = build_hub_cache(base / "built", REPO, total_bytes=3_000_000, shards=3)
    root = base / "root"
    assert import_repo(root, REPO, model.snapshot_path) == model.commit
    assert import_repo(root, GATED, model.snapshot_path) == model.commit
    nested = base / "nested"
    (nested / "sub" / "dir").mkdir(parents=True)
    (nested / "README.md").write_text("# not a model: folders and a large file without an LFS suffix\n")
    (nested / "sub" / "dir" / "a.txt").write_text("a nested file\n")
    (nested / "big.dat").write_bytes(bytes(range(256)) * 4500)  # 1.1 MiB: LFS by its size, not its name
    import_repo(root, NESTED, nested)
    return Served(root, model, nested)


@pytest.fixture(scope="module")
def hub(served: Served, tmp_path_factory: pytest.TempPathFactory) -> t.Iterator[Hub]:
    token_file = tmp_path_factory.mktemp("secret") / "token"
    token_file.write_text(TOKEN + "\n")
    server = Hub(served.root, "--token-file", str(token_file), "--gated", GATED)
    yield server
    assert server.stop() == 0
    assert server.lines[-1] == "hf-hub: stopped"
    assert not any(TOKEN in line for line in server.lines), "the token leaked into the log"


# --- helpers ---------------------------------------------------------------------------------------------------


def cli_env(hub: Hub, home: Path, **extra: str) -> dict[str, str]:
    """The CLI's environment: this hub, a fresh HF_HOME (no token), nothing from the caller's HF_* variables."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "HUGGING_FACE"))}
    env.update(HF_ENDPOINT=hub.url, HF_HOME=str(home), HF_HUB_DISABLE_TELEMETRY="1", HF_HUB_DISABLE_UPDATE_CHECK="1")
    env.update(HF_HUB_DISABLE_PROGRESS_BARS="1", NO_COLOR="1", **extra)
    return env


def hf_download(hub: Hub, home: Path, cache: Path, repo_id: str = REPO, revision: str = "main", **env: str) -> subprocess.CompletedProcess[str]:
    if not HF_CLI.exists():
        pytest.skip(f"no hf CLI next to {sys.executable}")
    argv = [str(HF_CLI), "download", repo_id, "--revision", revision, "--cache-dir", str(cache)]
    return subprocess.run(argv, env=cli_env(hub, home, **env), capture_output=True, text=True, timeout=60, check=False)


def etag(path: str, data: bytes) -> str:
    """What the Hub names a blob by: the sha256 of an LFS file, the git blob sha1 of another."""
    if path.endswith(".safetensors") or len(data) > 1 << 20:
        return hashlib.sha256(data).hexdigest()
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def assert_downloaded(cache: Path, repo_id: str, source: Path, commit: str | None = None, model: bool = True) -> SnapshotInfo:
    """The cache holds ``source``'s files as huggingface_hub lays them out: refs/main, relative links to blobs
    named by their etags, the same bytes; and, for a model, the collection's checker finds the snapshot complete."""
    got = read_hub_snapshot(cache, repo_id, "main")
    if commit is not None:
        assert got.commit == commit
    assert (got.repo_dir / "refs" / "main").read_text() == got.commit
    files = sorted(p.relative_to(source).as_posix() for p in source.rglob("*") if p.is_file())
    assert sorted(f.path for f in got.files) == files
    for item in got.files:
        link = got.link(item.path)
        target = os.readlink(link)
        assert not os.path.isabs(target) and Path(target).parent.name == "blobs", target
        data = (source / item.path).read_bytes()
        assert link.read_bytes() == data, item.path
        assert item.etag == etag(item.path, data), item.path
    if not model:
        return got
    report = check_snapshot(repo_id, "main", cache_dir=str(cache), mode="full", write_manifest=False)
    assert report.complete, report.message()
    assert report.hashed_files == len(files) and not report.unverified
    return got


# --- the root and its import -------------------------------------------------------------------------------------


def test_import_lays_out_the_root(served: Served, tmp_path: Path) -> None:
    model = served.model
    repo = served.root / REPO
    assert json.loads((repo / "refs.json").read_text()) == {"main": model.commit}
    assert sorted(p.name for p in repo.iterdir()) == sorted([model.commit, "refs.json"])
    for item in model.files:
        assert (repo / model.commit / item.path).read_bytes() == model.link(item.path).read_bytes()
    # Again, with a tag: the same content is the same commit, and the refs add up.
    root = tmp_path / "root"
    assert import_repo(root, REPO, model.snapshot_path) == model.commit
    assert import_repo(root, REPO, model.snapshot_path, "v1.0") == model.commit
    assert json.loads((root / REPO / "refs.json").read_text()) == {"main": model.commit, "v1.0": model.commit}
    bad = subprocess.run(
        [sys.executable, HF_HUB, "--root", str(root), "--import", "not/a/repo", str(served.nested_src)], capture_output=True, text=True, check=False
    )
    assert bad.returncode != 0 and "not a repo id" in bad.stderr


# --- the HTTP API, request by request ----------------------------------------------------------------------------


def test_resolve_answers_as_the_hub(hub: Hub, served: Served) -> None:
    model = served.model
    config = model.link("config.json").read_bytes()
    status, headers, body = call(f"{hub.url}/{REPO}/resolve/main/config.json", "HEAD")
    assert (status, body) == (200, b"")
    assert headers["etag"] == f'"{etag("config.json", config)}"'
    assert headers["x-repo-commit"] == model.commit
    assert headers["content-length"] == str(len(config))
    assert not [name for name in headers if "xet" in name or name == "link"], headers  # never Xet: plain HTTP downloads

    shard = model.link(SHARDS[0]).read_bytes()
    status, headers, _body = call(f"{hub.url}/{REPO}/resolve/{model.commit}/{SHARDS[0]}", "HEAD")
    assert status == 302
    assert headers["x-linked-etag"] == f'"{hashlib.sha256(shard).hexdigest()}"'
    assert headers["x-linked-size"] == str(len(shard))
    assert headers["x-repo-commit"] == model.commit
    assert hub.cdn is not None and headers["location"].startswith(hub.cdn + "/")

    # The CDN: no token needed, ranges served, a tampered URL refused.
    status, cdn_headers, body = call(headers["location"], headers={"Range": "bytes=100-199"})
    assert (status, body) == (206, shard[100:200])
    assert cdn_headers["content-range"] == f"bytes 100-199/{len(shard)}"
    status, _h, body = call(headers["location"], headers={"Range": "bytes=-10"})
    assert (status, body) == (206, shard[-10:])
    status, cdn_headers, _body = call(headers["location"], headers={"Range": f"bytes={len(shard)}-"})
    assert status == 416 and cdn_headers["content-range"] == f"bytes */{len(shard)}"
    assert call(headers["location"].replace("Signature=", "Signature=0"))[0] == 403

    # Ranges on /resolve itself; a large file is LFS whatever its name.
    status, headers, body = call(f"{hub.url}/{REPO}/resolve/main/config.json", headers={"Range": "bytes=5-"})
    assert (status, body, headers["content-range"]) == (206, config[5:], f"bytes 5-{len(config) - 1}/{len(config)}")
    status, headers, _body = call(f"{hub.url}/{NESTED}/resolve/main/big.dat", "HEAD")
    assert status == 302 and headers["x-linked-etag"] == f'"{etag("big.dat", (served.nested_src / "big.dat").read_bytes())}"'


@pytest.mark.parametrize(
    ("path", "status", "code"),
    [
        (f"/api/models/{REPO}/revision/main", 200, None),
        (f"/api/models/{REPO}/revision/nope", 404, "RevisionNotFound"),
        ("/api/models/sparkops-lab/missing/revision/main", 404, "RepoNotFound"),
        (f"/api/models/{REPO}/tree/main/nowhere", 404, "EntryNotFound"),
        (f"/{REPO}/resolve/main/missing.json", 404, "EntryNotFound"),
        (f"/{REPO}/resolve/nope/config.json", 404, "RevisionNotFound"),
        ("/sparkops-lab/missing/resolve/main/config.json", 404, "RepoNotFound"),
        (f"/{GATED}/resolve/main/config.json", 401, "GatedRepo"),
        (f"/api/models/{GATED}/revision/main", 200, None),  # a gated repo's metadata is public, as on the Hub
        ("/api/nothing-here", 404, None),
    ],
)
def test_status_and_error_codes(hub: Hub, path: str, status: int, code: str | None) -> None:
    got, headers, body = call(hub.url + path)
    assert got == status
    assert headers.get("x-error-code") == code
    if status != 200:
        assert json.loads(body)["error"] == headers["x-error-message"]
    if code == "EntryNotFound":
        assert len(headers["x-repo-commit"]) == 40  # the client caches the file's absence under this commit


def test_model_info_and_tree(hub: Hub, served: Served) -> None:
    api = hf_hub.HfApi(endpoint=hub.url, token=False)
    info = api.model_info(REPO, revision="main", files_metadata=True)
    assert info.sha == served.model.commit and info.gated is False
    assert info.config == {"architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe"}
    siblings = {s.rfilename: s for s in info.siblings or []}
    assert sorted(siblings) == sorted(f.path for f in served.model.files)
    for item in served.model.files:
        assert siblings[item.path].size == item.size
        lfs = siblings[item.path].lfs
        assert (lfs.sha256 if lfs else None) == (item.etag if item.path.endswith(".safetensors") else None)
    assert api.model_info(GATED).gated == "manual"

    top = {e.path: type(e).__name__ for e in api.list_repo_tree(NESTED, revision="main")}
    assert top == {"README.md": "RepoFile", "big.dat": "RepoFile", "sub": "RepoFolder"}
    deep = {e.path: e for e in api.list_repo_tree(NESTED, revision="main", recursive=True)}
    assert sorted(deep) == ["README.md", "big.dat", "sub", "sub/dir", "sub/dir/a.txt"]
    assert deep["big.dat"].lfs is not None and deep["big.dat"].lfs.size == 1152000
    assert [e.path for e in api.list_repo_tree(NESTED, path_in_repo="sub", revision="main")] == ["sub/dir"]
    expanded = list(api.list_repo_tree(NESTED, revision="main", expand=True))
    assert len(expanded) == 3 and all(e.last_commit is not None and e.last_commit.oid == info_nested_sha(api) for e in expanded)


def info_nested_sha(api: t.Any) -> str:
    return str(api.model_info(NESTED).sha)


# --- downloads with huggingface_hub ------------------------------------------------------------------------------


def test_snapshot_download_in_process(hub: Hub, served: Served, tmp_path: Path) -> None:
    path = hf_hub.snapshot_download(REPO, revision="main", cache_dir=tmp_path, endpoint=hub.url, token=False)
    got = assert_downloaded(tmp_path, REPO, served.model.snapshot_path, served.model.commit)
    assert path == str(got.snapshot_path)
    assert got.etags == served.model.etags  # the blobs are named exactly as the builder's cache names them
    hf_hub.snapshot_download(NESTED, cache_dir=tmp_path, endpoint=hub.url, token=False)
    nested = assert_downloaded(tmp_path, NESTED, served.nested_src, model=False)
    assert os.readlink(nested.link("sub/dir/a.txt")).startswith("../../../../blobs/")


def test_cli_download_and_a_second_run_that_fetches_nothing(hub: Hub, served: Served, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    done = hf_download(hub, tmp_path / "home", cache)
    assert done.returncode == 0, done.stderr
    assert f"snapshots/{served.model.commit}" in done.stdout
    assert_downloaded(cache, REPO, served.model.snapshot_path, served.model.commit)

    mark = len(hub.lines)
    again = hf_download(hub, tmp_path / "home", cache)
    assert again.returncode == 0, again.stderr
    fetched = [line for line in hub.requests_since(mark) if "/resolve/" in line or line.startswith("[cdn]")]
    assert fetched == [], "the second run fetched files"


def test_gated_repo(hub: Hub, served: Served, tmp_path: Path) -> None:
    with pytest.raises(GatedRepoError) as no_token:
        hf_hub.snapshot_download(GATED, cache_dir=tmp_path / "lib", endpoint=hub.url, token=False)
    assert no_token.value.response.status_code == 401
    with pytest.raises(GatedRepoError) as wrong:
        hf_hub.snapshot_download(GATED, cache_dir=tmp_path / "lib", endpoint=hub.url, token="hf_NotTheToken")
    assert wrong.value.response.status_code == 403 and "not in the authorized list" in str(wrong.value)

    denied = hf_download(hub, tmp_path / "home", tmp_path / "cli", GATED)
    assert denied.returncode != 0
    assert f"Access denied. Model '{GATED}' requires approval." in denied.stderr

    mark = len(hub.lines)
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN)
    done = hf_download(hub, tmp_path / "home", tmp_path / "cli", GATED, HF_TOKEN_PATH=str(token_file), HF_HUB_DISABLE_XET="1")
    assert done.returncode == 0, done.stderr
    assert_downloaded(tmp_path / "cli", GATED, served.model.snapshot_path, served.model.commit)
    lines = hub.requests_since(mark)
    resolves = [line for line in lines if "/resolve/" in line]
    assert len(resolves) == 2 * len(served.model.files) - 3 and all(" auth=yes" in line for line in resolves)  # HEADs + non-LFS GETs
    cdn = [line for line in lines if line.startswith("[cdn]")]
    assert len(cdn) == 3 and all("auth=no" in line for line in cdn)  # the client drops the token for the CDN
    assert not any(TOKEN in line for line in hub.lines)


def test_unknown_repo_revision_and_file(hub: Hub, tmp_path: Path) -> None:
    with pytest.raises(RepositoryNotFoundError) as repo:
        hf_hub.snapshot_download("sparkops-lab/missing", cache_dir=tmp_path, endpoint=hub.url, token=False)
    assert not isinstance(repo.value, GatedRepoError)
    with pytest.raises(RevisionNotFoundError):
        hf_hub.snapshot_download(REPO, revision="no-such-branch", cache_dir=tmp_path, endpoint=hub.url, token=False)
    with pytest.raises(EntryNotFoundError):
        hf_hub.hf_hub_download(REPO, "missing.json", cache_dir=tmp_path, endpoint=hub.url, token=False)

    missing = hf_download(hub, tmp_path / "home", tmp_path / "cli", "sparkops-lab/missing")
    assert missing.returncode != 0 and "Model 'sparkops-lab/missing' not found." in missing.stderr
    revision = hf_download(hub, tmp_path / "home", tmp_path / "cli", REPO, "no-such-branch")
    assert revision.returncode != 0 and f"Revision not found in model '{REPO}'." in revision.stderr


# --- interrupted downloads ---------------------------------------------------------------------------------------


def test_dropped_connection_resumes_with_a_range(served: Served, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The client retries a cut body with Range: bytes=<what it wrote>- (http_get). It writes whole
    DOWNLOAD_CHUNK_SIZE chunks only (10 MiB), so the chunk is made smaller than the cut for these 1 MB shards."""
    monkeypatch.setattr(hf_constants, "DOWNLOAD_CHUNK_SIZE", 64 << 10)
    server = Hub(served.root, "--no-cdn", "--drop-after", "300000", "--tree-page-size", "3")
    try:
        assert server.cdn is None
        hf_hub.snapshot_download(REPO, cache_dir=tmp_path, endpoint=server.url, token=False)
        assert_downloaded(tmp_path, REPO, served.model.snapshot_path, served.model.commit)
        lines = server.requests_since(1)
    finally:
        assert server.stop() == 0
    for shard in SHARDS:
        bodies = [line for line in lines if line.startswith(f"[hub] GET /{REPO}/resolve/") and line.split()[2].endswith(shard)]
        assert len(bodies) == 2 and " 200 " in bodies[0] and bodies[0].endswith("sent=300000 cut"), bodies
        assert " 206 " in bodies[1] and "range=bytes=262144-" in bodies[1], bodies  # 4 whole chunks written
    assert len([line for line in lines if "/tree/" in line]) == 3  # 8 files, 3 a page: Link headers followed


def test_killed_cli_then_rerun(hub: Hub, served: Served, tmp_path: Path) -> None:
    """Kill -9 the CLI in the middle of the shards (paced at 3 Mbit/s: ~2.6 s each), then run it again."""
    slow = Hub(served.root, "--rate-mbps", "3")
    cache = tmp_path / "cache"
    blobs = cache / repo_folder(REPO) / "blobs"
    try:
        argv = [str(HF_CLI), "download", REPO, "--revision", "main", "--cache-dir", str(cache)]
        if not HF_CLI.exists():
            pytest.skip(f"no hf CLI next to {sys.executable}")
        cli = subprocess.Popen(argv, env=cli_env(slow, tmp_path / "home"), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            wait_until(lambda: len(list(blobs.glob("*.incomplete"))) == 3)
            time.sleep(0.3)
        finally:
            cli.kill()
            cli.wait()
        wait_until(lambda: sum(" aborted" in line for line in slow.lines) == 3)
    finally:
        assert slow.stop() == 0
    stale = sorted(p.name for p in blobs.glob("*.incomplete"))
    assert len(stale) == 3 and not [p for p in blobs.iterdir() if len(p.name) == 64]  # no shard finished

    done = hf_download(hub, tmp_path / "home", cache)
    assert done.returncode == 0, done.stderr
    got = read_hub_snapshot(cache, REPO)
    assert got.etags == served.model.etags
    for shard in SHARDS:
        assert hashlib.sha256(got.blob(shard).read_bytes()).hexdigest() == got.etags[shard]
    # huggingface_hub 2.x downloads into a per-process <etag>.<id>.incomplete and starts afresh in a new process,
    # so a killed run's temporary files stay behind, next to the finished blobs.
    assert sorted(p.name for p in blobs.glob("*.incomplete")) == stale
    report = check_snapshot(REPO, "main", cache_dir=str(cache), mode="full", write_manifest=False)
    assert not report.missing and not report.corrupt and report.hashed_files == len(served.model.files)


# --- the process -------------------------------------------------------------------------------------------------


def test_sigterm_exits_0_and_arguments_are_checked(served: Served, tmp_path: Path) -> None:
    server = Hub(served.root, "--no-cdn")
    assert server.stop() == 0 and server.lines[-1] == "hf-hub: stopped"
    gated = subprocess.run([sys.executable, HF_HUB, "--root", str(served.root), "--gated", REPO], capture_output=True, text=True, check=False)
    assert gated.returncode == 2 and "--gated needs --token-file" in gated.stderr
    nowhere = subprocess.run([sys.executable, HF_HUB, "--root", str(tmp_path / "nowhere"), "--port", "0"], capture_output=True, text=True, check=False)
    assert nowhere.returncode == 2 and "is not a folder" in nowhere.stderr
