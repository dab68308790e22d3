# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A Hugging Face model's shape (config.json) and size before it is downloaded, for the fit check (:mod:`._model_fit`).

Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.

:func:`read_model_metadata` answers from the head's hub cache when it holds a complete snapshot of the revision
(:func:`from_cache`, no network), else from the Hub's API (:func:`from_hub`), reading only metadata: the commit, the
file listing, ``config.json``, ``model.safetensors.index.json`` and, without an index, the safetensors headers
(two small ranged reads per file). It never downloads a weights file and writes nothing.

The Hub's endpoints are those huggingface_hub 2.4.0 (``model_sync_hf_hub_version``, what the model_sync role
installs) calls, as read in its wheel:

* ``GET {endpoint}/api/models/{repo_id}/revision/{quote(revision, safe='')}``: ``HfApi.model_info``
  (``hf_api.py:3145``, the URL at ``:3202-3206``); the commit is the document's ``sha``.
* ``GET {endpoint}/api/models/{repo_id}/tree/{revision}?recursive=true``: ``HfApi.list_repo_tree`` (``hf_api.py:3867``,
  the URL and query at ``:4022-4026``), paginated by the ``Link: <url>; rel="next"`` header, whose URL carries the query
  (``utils/_pagination.py:41-53``, ``:68-69``). A file's entry is ``{"type": "file", "oid", "size", "path"}``, with
  ``"lfs": {"oid": <sha256>, "size", "pointerSize"}`` for an LFS file (``RepoFile``, ``hf_api.py:680-718``).
* ``GET {endpoint}/{repo_id}/resolve/{revision}/{path}``: ``hf_hub_url`` (``constants.py:70``), which answers an
  LFS file with a redirect to its storage. ``HfApi.parse_safetensors_file_metadata`` (``hf_api.py:6882``, called
  by ``get_safetensors_metadata``, ``:6669``) reads a header with ``Range`` requests: ``bytes=0-100000`` (``:6944``),
  then ``bytes=8-{N + 7}`` when the header is longer (``:6954``). :meth:`HubClient.header_bytes` asks
  ``bytes=0-7`` for N and then the same ``bytes=8-{N + 7}``, so that no tensor data is read.
* errors: ``X-Error-Code`` ``RepoNotFound``, ``RevisionNotFound``, ``EntryNotFound`` or ``GatedRepo``, and a 401
  for a private or gated repo without a token (``utils/_http.py:880-945``).

A file of the snapshot is already on the head when its blob is in the cache: ``blobs/<etag>``, the etag being the
sha256 of an LFS file and the git blob sha1 of another (``file_download.py:1200``, ``:1679-1680``).
"""

from __future__ import annotations

import http.client
import json
import os
import re
import socket
import ssl
import struct
import typing as t
import urllib.error
from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import quote, urljoin, urlsplit

from ansible.module_utils.urls import ConnectionError as UrlsConnectionError
from ansible.module_utils.urls import Request, make_context
from ansible_collections.sparkops.inference.plugins.module_utils._hf_snapshot import (
    CONFIG_FILE,
    INDEX_FILE,
    SINGLE_FILE,
    JsonDepthError,
    SnapshotError,
    byte_count,
    check_snapshot,
    load_json,
    read_json_file,
    repo_folder,
    validate_repo_id,
)
from ansible_collections.sparkops.inference.plugins.module_utils._safetensors_header import (
    MAX_HEADER_LEN,
    SafetensorsHeaderError,
    bounded_repr,
    parse_header,
)

DEFAULT_ENDPOINT = "https://huggingface.co"
DEFAULT_TIMEOUT = 30
SOURCE_CACHE = "cache"
SOURCE_HUB = "hub"
USER_AGENT = "sparkops.inference.model_metadata"
TOKEN_HINT = "gated or private: give model_sync_hf_token"
REDACTED = "********"
MAX_JSON_BYTES = 64 << 20  # a config, index or tree page larger than this is refused (a 1000-entry page is ~200 kB)
MAX_TREE_PAGES = 1000
EXCERPT = 200

_COMMIT = re.compile(r"[0-9a-f]{40}")
_LINK = re.compile(r"<([^>]*)>((?:\s*;\s*[^;,]*)*)")
_REL_NEXT = re.compile(r';\s*rel\s*=\s*"?([^";]*)"?')


class MetadataError(Exception):
    """The metadata cannot be read; the message names the repo, the revision and the endpoint, never the token."""


class Opener(t.Protocol):
    """GET ``url`` with ``headers``: a response (``getcode()``, ``headers``, ``read(n)``, ``close()``), or raise as
    ``ansible.module_utils.urls.Request.open`` does (``urllib.error.HTTPError`` for an HTTP error status)."""

    def __call__(self, url: str, headers: Mapping[str, str], timeout: float) -> t.Any: ...


def ansible_opener(validate_certs: bool = True) -> Opener:
    """The real HTTP client: ``ansible.module_utils.urls.Request`` (what ``open_url`` wraps), with the TLS context made
    once. It follows redirects (the Hub sends LFS files to their storage), does not send ``Authorization`` on to a
    redirect's target and does not read ``~/.netrc`` (it would replace the token)."""
    client = Request(
        validate_certs=validate_certs,
        http_agent=USER_AGENT,
        use_netrc=False,
        unredirected_headers=["Authorization"],
        decompress=False,  # no Accept-Encoding: a range must be of the file's bytes
        context=make_context(validate_certs=validate_certs),
    )

    def opener(url: str, headers: Mapping[str, str], timeout: float) -> t.Any:
        return client.open("GET", url, headers=dict(headers), timeout=timeout)

    return opener


@dataclass(frozen=True)
class RepoFile:
    """A file of the repo at the commit: its size and its etag (the blob name in a hub cache), when known."""

    path: str
    size: int
    etag: str | None = None


@dataclass
class ModelMetadata:
    """What :func:`read_model_metadata` found; :meth:`as_dict` is the module's result (without the warnings)."""

    source: str
    commit: str
    config: dict[str, t.Any]
    weight_bytes: int
    snapshot_bytes: int
    files: int
    present_bytes: int
    warnings: list[str] = field(default_factory=list)

    @property
    def architecture(self) -> str | None:
        architectures = self.config.get("architectures")
        if isinstance(architectures, list) and architectures and isinstance(architectures[0], str):
            return architectures[0]
        return None

    def as_dict(self) -> dict[str, t.Any]:
        return {
            "source": self.source,
            "commit": self.commit,
            "config": self.config,
            "weight_bytes": self.weight_bytes,
            "snapshot_bytes": self.snapshot_bytes,
            "files": self.files,
            "present_bytes": self.present_bytes,
            "architecture": self.architecture,
        }


def weight_files(paths: t.Iterable[str]) -> list[str]:
    """The safetensors files a loader reads when there is no index: ``model.safetensors`` if there is one, else every
    ``*.safetensors`` at the top of the repo (vLLM globs the snapshot folder itself)."""
    names = sorted(p for p in paths if p.endswith(".safetensors") and "/" not in p)
    return [SINGLE_FILE] if SINGLE_FILE in names else names


# --- the cache --------------------------------------------------------------------------------------------------


def from_cache(repo_id: str, revision: str, cache_dir: str) -> tuple[ModelMetadata | None, str | None]:
    """The metadata from a complete snapshot in the hub cache, or (None, why not).

    Complete as :func:`._hf_snapshot.check_snapshot` judges it, requiring ``config.json`` and the weights: the revision
    resolves (``refs/<revision>`` or a commit), every file resolves, the index's shards (or ``model.safetensors``)
    are there and every safetensors header matches its file. The weight bytes are the shards' tensor data by their
    headers.
    """
    report = check_snapshot(repo_id, revision, cache_dir=cache_dir, required_files=[CONFIG_FILE])
    if not report.complete or report.commit is None or report.snapshot_path is None:
        return None, report.problems[0] if report.problems else f"no snapshot of {repo_id} at {revision} in {cache_dir}"
    if report.tensor_bytes is None:
        return None, f"the tensor bytes of {repo_id} at {revision} in {report.snapshot_path} cannot be read from its headers"
    try:
        config = read_json_file(os.path.join(report.snapshot_path, CONFIG_FILE))
    except (OSError, ValueError) as exc:
        return None, f"{CONFIG_FILE} cannot be read: {exc}"
    if not isinstance(config, dict):
        return None, f"{CONFIG_FILE} is not a JSON object"
    total = report.total_bytes
    metadata = ModelMetadata(
        source=SOURCE_CACHE,
        commit=report.commit,
        config=config,
        weight_bytes=report.tensor_bytes,
        snapshot_bytes=total,
        files=len(report.files),
        present_bytes=total,
        warnings=list(report.warnings),
    )
    return metadata, None


def present_bytes(cache_dir: str | None, repo_id: str, files: t.Iterable[RepoFile]) -> int:
    """The bytes of ``files`` whose blob is in the hub cache, whole (its size is the file's)."""
    if not cache_dir:
        return 0
    blobs = os.path.join(cache_dir, repo_folder(repo_id), "blobs")
    total = 0
    for entry in files:
        if entry.etag is None or "/" in entry.etag or entry.etag.startswith("."):
            continue
        try:
            if os.path.getsize(os.path.join(blobs, entry.etag)) == entry.size:
                total += entry.size
        except OSError:
            continue
    return total


# --- the Hub ----------------------------------------------------------------------------------------------------


def next_link(header: str | None, base: str) -> str | None:
    """The ``rel="next"`` URL of a ``Link`` header (as requests' ``Response.links`` reads it), made absolute."""
    if not header:
        return None
    for match in _LINK.finditer(header):
        rels = [rel for value in _REL_NEXT.findall(match.group(2)) for rel in value.split()]
        if "next" in rels:
            return urljoin(base, match.group(1).strip())
    return None


def _origin(url: str) -> tuple[str, str]:
    parts = urlsplit(url)
    return parts.scheme.lower(), parts.netloc.lower()


def _reason(exc: BaseException) -> str:
    reason: object = exc.reason if isinstance(exc, urllib.error.URLError) else exc
    if isinstance(reason, (socket.timeout, TimeoutError)):  # noqa: UP041 - socket.timeout is TimeoutError from 3.10 only
        return "timed out"
    if isinstance(reason, ConnectionRefusedError):
        return "connection refused"
    if isinstance(reason, socket.gaierror):
        return f"cannot resolve the host name ({reason.strerror or reason})"
    if isinstance(reason, http.client.RemoteDisconnected):
        return "the server closed the connection without answering"
    if isinstance(reason, ssl.SSLError):
        return f"TLS error: {reason}"
    if isinstance(reason, OSError) and reason.strerror:
        return reason.strerror
    return str(reason) or type(reason).__name__


class HubClient:
    """Reads one repo's metadata from the Hub at ``endpoint``; every failure is a :class:`MetadataError`."""

    def __init__(
        self,
        repo_id: str,
        revision: str,
        endpoint: str = DEFAULT_ENDPOINT,
        token: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        opener: Opener | None = None,
    ) -> None:
        self.repo_id = repo_id
        self.revision = revision
        self.endpoint = endpoint.rstrip("/")
        self.token = token or None
        self.timeout = timeout
        self.opener = opener if opener is not None else ansible_opener()

    # -- plumbing --

    def redact(self, text: str) -> str:
        return text.replace(self.token, REDACTED) if self.token else text

    def fail(self, detail: str) -> MetadataError:
        return MetadataError(self.redact(f"{self.repo_id} at revision {self.revision} from {self.endpoint}: {detail}"))

    def headers(self, url: str) -> dict[str, str]:
        """The token goes only to the endpoint's own scheme, host and port, never to a host a link points to."""
        if self.token and _origin(url) == _origin(self.endpoint):
            return {"Authorization": f"Bearer {self.token}"}
        return {}

    def api_url(self, *parts: str) -> str:
        return f"{self.endpoint}/api/models/{self.repo_id}/" + "/".join(parts)

    def resolve_url(self, commit: str, path: str) -> str:
        return f"{self.endpoint}/{self.repo_id}/resolve/{commit}/{quote(path)}"

    def http_error(self, exc: urllib.error.HTTPError, what: str) -> MetadataError:
        code = exc.headers.get("X-Error-Code") if exc.headers is not None else None
        message = exc.headers.get("X-Error-Message") if exc.headers is not None else None
        status = int(exc.code)
        said = " ".join(str(message or exc.reason or "").split())[:EXCERPT]
        answer = f"HTTP {status}" + (f" {code}" if code else "") + (f" ({said})" if said else "")
        if code == "RevisionNotFound":
            return self.fail(f"revision {self.revision!r} not found ({answer} for {what})")
        if code == "EntryNotFound":
            return self.fail(f"not found ({answer} for {what})")
        if code == "RepoNotFound" and status == 404:
            return self.fail(f"repo {self.repo_id} not found ({answer} for {what})")
        if status in (401, 403):
            hint = f"repo {self.repo_id} not found, or it is {TOKEN_HINT}" if code == "RepoNotFound" else TOKEN_HINT
            if self.token and status == 403:
                hint += " (the token given was refused: its account has no access to the repo; ask for it on the repo's page)"
            elif self.token:
                hint += " (the token given was not accepted: is it valid?)"
            return self.fail(f"{hint} ({answer} for {what})")
        if status == 404:
            return self.fail(f"repo {self.repo_id} or revision {self.revision!r} not found ({answer} for {what})")
        return self.fail(f"{answer} for {what}")

    def get(self, url: str, what: str, byte_range: tuple[int, int] | None = None) -> tuple[bytes, t.Any]:
        """GET ``url``: the body (the ``byte_range``, inclusive, when given) and the response's headers."""
        headers = self.headers(url)
        if byte_range is not None:
            headers["Range"] = f"bytes={byte_range[0]}-{byte_range[1]}"
        try:
            response = self.opener(url, headers, self.timeout)
        except urllib.error.HTTPError as exc:
            try:
                raise self.http_error(exc, what) from None
            finally:
                exc.close()
        except (urllib.error.URLError, UrlsConnectionError, http.client.HTTPException, OSError) as exc:
            raise self.fail(f"{self.endpoint} is unreachable from this host: {_reason(exc)} (for {what})") from None
        try:
            if byte_range is None:
                body = response.read(MAX_JSON_BYTES + 1)
                if len(body) > MAX_JSON_BYTES:
                    raise self.fail(f"{what}: the answer is larger than {MAX_JSON_BYTES} bytes")
            else:
                start, end = byte_range
                # A server that ignores Range answers 200 with the whole file: read only up to the range's end.
                skip = start if int(response.getcode()) == 200 else 0
                body = response.read(skip + end - start + 1)[skip:]
                if len(body) != end - start + 1:
                    raise self.fail(f"{what}: {len(body)} bytes in answer to a range of {end - start + 1}")
            return body, response.headers
        except (OSError, http.client.HTTPException) as exc:
            raise self.fail(f"{self.endpoint} is unreachable from this host: {_reason(exc)} (reading {what})") from None
        finally:
            response.close()

    def get_json(self, url: str, what: str) -> tuple[t.Any, t.Any]:
        body, headers = self.get(url, what)
        try:
            return load_json(body.decode("utf-8")), headers
        except JsonDepthError as exc:
            raise self.fail(f"{what}: the answer is {exc}") from None
        except ValueError:
            excerpt = " ".join(body[:EXCERPT].decode("utf-8", errors="replace").split())
            raise self.fail(f"{what}: the answer is not JSON: {excerpt!r}") from None

    # -- the endpoints --

    def commit(self) -> str:
        """The commit the revision is at (``model_info``'s ``sha``)."""
        url = self.api_url("revision", quote(self.revision, safe=""))
        what = f"GET /api/models/{self.repo_id}/revision/{quote(self.revision, safe='')}"
        info, _headers = self.get_json(url, what)
        sha = info.get("sha") if isinstance(info, dict) else None
        if not isinstance(sha, str) or not _COMMIT.fullmatch(sha):
            raise self.fail(f"{what}: the answer has no commit ('sha' is {bounded_repr(sha)})")
        return sha

    def tree(self, commit: str) -> dict[str, RepoFile]:
        """Every file of the repo at ``commit`` with its size (``list_repo_tree(recursive=True)``, all its pages)."""
        url: str | None = self.api_url("tree", commit) + "?recursive=true"
        files: dict[str, RepoFile] = {}
        seen: set[str] = set()
        while url is not None:
            if url in seen or len(seen) >= MAX_TREE_PAGES:
                raise self.fail(f"the listing of commit {commit} does not end (page {len(seen) + 1}: {url})")
            seen.add(url)
            what = f"GET /api/models/{self.repo_id}/tree/{commit} (page {len(seen)})"
            page, headers = self.get_json(url, what)
            if not isinstance(page, list):
                raise self.fail(f"{what}: the answer is not a list of entries")
            for entry in page:
                if not isinstance(entry, dict) or entry.get("type") != "file":
                    continue
                path, size = entry.get("path"), byte_count(entry.get("size"))
                if not isinstance(path, str) or size is None:
                    raise self.fail(f"{what}: an entry without a path or size: {json.dumps(entry)[:EXCERPT]}")
                lfs = entry.get("lfs")
                etag = lfs.get("oid") if isinstance(lfs, dict) else entry.get("oid")
                files[path] = RepoFile(path=path, size=size, etag=etag if isinstance(etag, str) and etag else None)
            url = next_link(headers.get("Link") if headers is not None else None, url)
        return files

    def file_json(self, commit: str, path: str) -> t.Any:
        document, _headers = self.get_json(self.resolve_url(commit, path), f"GET /{self.repo_id}/resolve/{commit}/{path}")
        return document

    def header_bytes(self, commit: str, entry: RepoFile) -> tuple[int, str | None]:
        """The tensor data bytes of a safetensors file by its header, read with two ranges, and a warning if any."""
        url = self.resolve_url(commit, entry.path)
        what = f"the header of {entry.path} (GET /{self.repo_id}/resolve/{commit}/{entry.path}"
        if entry.size < 8:
            raise self.fail(f"{entry.path}: {entry.size} bytes, too short for a safetensors file")
        prefix, _headers = self.get(url, what + ", bytes 0-7)", (0, 7))
        (header_len,) = struct.unpack("<Q", prefix)
        if header_len == 0 or header_len >= MAX_HEADER_LEN or 8 + header_len > entry.size:
            raise self.fail(f"{entry.path}: safetensors header length {header_len} is out of range for a file of {entry.size} bytes")
        header, _headers = self.get(url, what + f", bytes 8-{header_len + 7})", (8, header_len + 7))
        try:
            tensors, _metadata = parse_header(header)
        except SafetensorsHeaderError as exc:
            raise self.fail(f"{entry.path}: bad safetensors header: {exc}") from None
        data = max((tensor.end for tensor in tensors.values()), default=0)
        warning = None
        if 8 + header_len + data != entry.size:
            warning = (
                f"{entry.path}: the Hub lists {entry.size} bytes, its header says {8 + header_len + data}"
                f" (8 + {header_len} + {data}); the weight bytes use the header"
            )
        return data, warning


def _weight_bytes(client: HubClient, commit: str, files: dict[str, RepoFile], warnings: list[str]) -> int:
    """The index's ``metadata.total_size``, else the tensor data of the weight files by their headers."""
    shards: list[str]
    if INDEX_FILE in files:
        index = client.file_json(commit, INDEX_FILE)
        if not isinstance(index, dict):
            raise client.fail(f"{INDEX_FILE} is not a JSON object")
        metadata = index.get("metadata")
        written = metadata.get("total_size") if isinstance(metadata, dict) else None
        total = byte_count(written)
        if total is not None:
            return total
        weight_map = index.get("weight_map")
        if not isinstance(weight_map, dict) or not all(isinstance(v, str) for v in weight_map.values()):
            raise client.fail(f"{INDEX_FILE} has neither metadata.total_size nor a weight_map")
        shards = sorted(set(weight_map.values()))
        if written is None:
            warnings.append(f"{INDEX_FILE} has no metadata.total_size: the weight bytes were read from the {len(shards)} shards' headers")
        else:
            warnings.append(
                f"{INDEX_FILE}'s metadata.total_size is {bounded_repr(written)}, not a byte count:"
                f" the weight bytes were read from the {len(shards)} shards' headers"
            )
        missing = [shard for shard in shards if shard not in files]
        if missing:
            raise client.fail(f"{INDEX_FILE} names shards that are not in the repo at commit {commit}: {', '.join(missing[:5])}")
    else:
        shards = weight_files(files)
    if not shards:
        raise client.fail(f"no safetensors weights at commit {commit} (neither {INDEX_FILE} nor *.safetensors files); only safetensors models can be sized")
    total = 0
    for shard in shards:
        data, warning = client.header_bytes(commit, files[shard])
        total += data
        if warning is not None:
            warnings.append(warning)
    return total


def from_hub(
    repo_id: str,
    revision: str = "main",
    *,
    endpoint: str = DEFAULT_ENDPOINT,
    token: str | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    cache_dir: str | None = None,
    opener: Opener | None = None,
) -> ModelMetadata:
    """The metadata from the Hub: the commit, the file listing, config.json and the weight bytes (see the module doc).

    ``cache_dir`` is only looked at for the blobs already there (``present_bytes``). Raises :class:`MetadataError`.
    """
    try:
        validate_repo_id(repo_id)
    except SnapshotError as exc:
        raise MetadataError(str(exc)) from None
    client = HubClient(repo_id, revision, endpoint=endpoint, token=token, timeout=timeout, opener=opener)
    commit = client.commit()
    files = client.tree(commit)
    if CONFIG_FILE not in files:
        raise client.fail(f"no {CONFIG_FILE} at commit {commit} ({len(files)} files): not a transformers model")
    config = client.file_json(commit, CONFIG_FILE)
    if not isinstance(config, dict):
        raise client.fail(f"{CONFIG_FILE} at commit {commit} is not a JSON object")
    warnings: list[str] = []
    weight_bytes = _weight_bytes(client, commit, files, warnings)
    return ModelMetadata(
        source=SOURCE_HUB,
        commit=commit,
        config=config,
        weight_bytes=weight_bytes,
        snapshot_bytes=sum(entry.size for entry in files.values()),
        files=len(files),
        present_bytes=present_bytes(cache_dir, repo_id, files.values()),
        warnings=warnings,
    )


def read_model_metadata(
    repo_id: str,
    revision: str = "main",
    *,
    cache_dir: str,
    endpoint: str = DEFAULT_ENDPOINT,
    token: str | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    opener: Opener | None = None,
) -> ModelMetadata:
    """The metadata from a complete snapshot in ``cache_dir``, else from the Hub. Raises :class:`MetadataError`.

    When the Hub fails too, the message also says why the cache could not answer.
    """
    try:
        validate_repo_id(repo_id)
    except SnapshotError as exc:
        raise MetadataError(str(exc)) from None
    cached, why_not = from_cache(repo_id, revision, cache_dir)
    if cached is not None:
        return cached
    try:
        return from_hub(repo_id, revision, endpoint=endpoint, token=token, timeout=timeout, cache_dir=cache_dir, opener=opener)
    except MetadataError as exc:
        raise MetadataError(f"{exc}; and the cache {cache_dir} cannot answer: {why_not}") from None
