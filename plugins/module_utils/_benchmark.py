# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Sweep an OpenAI-compatible endpoint (vLLM) with streaming chat completions at several concurrencies.

Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.

The definitions are those of ``vllm bench serve`` in vLLM 0.30.0 (read in the wheel
``vllm-0.30.0+cpu-cp38-abi3-manylinux_2_28_x86_64.whl``), so that the figures compare with it:

* One request (:func:`stream_chat`) follows ``async_request_openai_chat_completions`` in
  ``vllm/benchmarks/lib/endpoint_request_func.py`` (lines 344-445): ``stream: true`` with
  ``stream_options: {include_usage: true}``; ``ttft`` is the time from sending the request to the first SSE
  ``data:`` message whose ``choices`` is not empty, whatever its delta holds (vLLM's server sends the
  ``{"role": "assistant", "content": ""}`` chunk in the engine step that makes the first token,
  ``vllm/entrypoints/openai/chat_completion/serving.py`` lines 526-620, and reasoning deltas count as any other);
  each later such message adds its gap to ``itl`` (inter-token latency); ``latency`` ends at the last such message
  (the trailing usage chunk, ``choices: []``, carries no token and does not count); the output tokens are the final
  usage chunk's ``usage.completion_tokens``. Without a usage chunk vLLM counts with its tokenizer; this client has
  none and counts the chunks whose ``content``, ``reasoning_content`` or ``reasoning`` delta is not empty (vLLM
  sends one token a chunk, so it is the same number).
* The figures (:func:`level_metrics`) follow ``calculate_metrics`` in ``vllm/benchmarks/serve.py`` (lines
  568-777): ``output_throughput`` = the output tokens of the completed requests / the level's duration, the
  duration running from before the first request is sent to after the last one ends (``benchmark()``, lines
  1017 and 1096); ``tpot`` = (latency - ttft) / (output tokens - 1) for each request with more than one output
  token (line 622); TTFT, TPOT, ITL and end-to-end latency as mean, median and 99th percentile in milliseconds,
  the percentile interpolated linearly as ``numpy.percentile`` does; the key names are those of its JSON result.
  Where vLLM reports 0 for a statistic of no values (``np.mean(x or 0)``) this reports None.
* The per-request rate (``per_request_output_throughput``) is vLLM's closest notion, the inverse of the mean TPOT:
  how fast one request's tokens come once its first token is out, in tokens per second.
* Exactly ``concurrency`` requests are in flight (``--max-concurrency`` with ``--request-rate inf``: all requests
  queue at once behind a semaphore), here ``concurrency`` threads taking the requests in turn.

Differences kept on purpose: a request also fails when its stream carries an ``error`` object or ends without
``data: [DONE]`` (vLLM's client counts such a stream as a success once a chunk came); each request opens its own
connection (vLLM's aiohttp session keeps them alive): the TCP (and TLS) handshake, well under a millisecond on a
LAN, is part of the TTFT. The API key is sent as ``Authorization: Bearer <key>`` and is never in a result or a
message (a server that echoes it gets it masked).

The prompt is synthetic (:func:`synthetic_prompt`): common English words drawn at random, each one token in the BPE
vocabularies of current models (Qwen, Llama, Mistral). With the warm-up on, the word count is calibrated against the
server's own tokenizer (:func:`prompt_calibration`: the warm-up and one more request of twice the words, neither
counted), so that the user content is ``prompt_tokens`` tokens as vLLM's ``--input-len`` makes it, whatever the
tokenizer; the chat template adds its few. The server's count is ``usage.prompt_tokens`` (``total_input_tokens``). Every request
draws other words from its first word on, as vLLM's random dataset does, so that no request finds another's
prefix in vLLM's prefix cache.
"""

from __future__ import annotations

import http.client
import json
import random
import socket
import ssl
import statistics
import threading
import time
import typing as t
from dataclasses import dataclass, field
from datetime import datetime, timezone
from urllib.parse import urlsplit, urlunsplit

from ansible_collections.sparkops.inference.plugins.module_utils._vllm_metrics import SPECULATION, counter_totals, speculation

DEFAULT_CONCURRENCY = (1, 2, 4, 8, 16)
DEFAULT_PROMPT_TOKENS = 256
DEFAULT_OUTPUT_TOKENS = 128
DEFAULT_TIMEOUT = 300.0
USER_AGENT = "sparkops.inference.openai_benchmark"
REDACTED = "********"
BODY_EXCERPT = 300
MAX_LINE = 1 << 20  # one SSE line; a chunk of vLLM's is a few hundred bytes
MAX_ERROR_MESSAGES = 5
VERSION_TIMEOUT = 10.0
# The most of GET /metrics read (vLLM's is tens of kilobytes, its histograms' buckets the most of it).
METRICS_LIMIT = 8 << 20

# The kinds of failure (RequestRecord.error_kind, a level's error_kinds).
HTTP_STATUS = "http_status"
CONNECTION = "connection"
TIMEOUT = "timeout"
STREAM_ERROR = "stream_error"
PROTOCOL = "protocol"
ERROR_KINDS = (HTTP_STATUS, CONNECTION, TIMEOUT, STREAM_ERROR, PROTOCOL)

TEXT_FIELDS = ("content", "reasoning_content", "reasoning")
CALIBRATION_WORDS = 16  # words of the warm-up's prompt (and twice as many in its calibration twin)

# One token each (with its leading space) in the BPE vocabularies of Qwen, Llama and Mistral models.
PROMPT_WORDS = (
    "time", "year", "people", "way", "day", "man", "thing", "woman", "life", "child", "world", "school", "state",
    "family", "student", "group", "country", "problem", "hand", "part", "place", "case", "week", "company", "system",
    "program", "question", "work", "number", "night", "point", "home", "water", "room", "mother", "area", "money",
    "story", "fact", "month", "lot", "right", "study", "book", "eye", "job", "word", "business", "issue", "side",
    "kind", "head", "house", "service", "friend", "father", "power", "hour", "game", "line", "end", "member", "law",
    "car", "city", "name", "team", "minute", "idea", "body", "back", "parent", "face", "level", "office", "door",
    "health", "person", "art", "war", "history", "party", "result", "change", "morning", "reason", "research", "girl",
    "moment", "air", "teacher", "force", "river", "light", "music", "garden", "paper", "table", "window", "road",
)  # fmt: skip


class BenchmarkError(ValueError):
    """The arguments cannot describe a benchmark (a bad URL); the message says why."""


# ---------------------------------------------------------------------------------------------------------------
# The endpoint


@dataclass(frozen=True)
class Endpoint:
    """Where the server is: ``base`` is the URL without a trailing ``/`` or ``/v1``, ``path`` its path part."""

    scheme: str
    host: str
    port: int
    path: str

    @property
    def base(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        default = 443 if self.scheme == "https" else 80
        netloc = host if self.port == default else f"{host}:{self.port}"
        return urlunsplit((self.scheme, netloc, self.path, "", ""))


def parse_url(url: str) -> Endpoint:
    """The endpoint of ``url`` (``http://h:8000``, ``http://h:8000/``, ``http://h:8000/v1`` are the same).

    Raises :class:`BenchmarkError` unless it is an ``http`` or ``https`` URL with a host and no credentials, query
    or fragment (the API key goes in ``api_key``).
    """
    base = url.strip().rstrip("/")
    if base.endswith("/v1"):
        base = base[: -len("/v1")].rstrip("/")
    shown = public_url(url)
    try:
        parts = urlsplit(base)
        port = parts.port  # raises ValueError for a port that is not a number
    except ValueError as exc:
        raise BenchmarkError(f"url {shown!r} is not a valid URL: {exc}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname or port == 0:
        raise BenchmarkError(f"url {shown!r} is not an http:// or https:// URL with a host, such as 'http://192.168.100.10:8000'")
    if parts.username is not None or parts.password is not None:
        raise BenchmarkError(f"url {shown!r} must not carry credentials; give the API key in api_key")
    if parts.query or parts.fragment:
        raise BenchmarkError(f"url {shown!r} must not have a query or a fragment")
    return Endpoint(parts.scheme, parts.hostname, port or (443 if parts.scheme == "https" else 80), parts.path)


def public_url(url: str) -> str:
    """``url`` without credentials (``user:password@``), query or fragment, for messages and reports."""
    try:
        parts = urlsplit(url.strip())
    except ValueError:
        return "<an invalid URL>"
    netloc = parts.netloc.rpartition("@")[2]
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


# ---------------------------------------------------------------------------------------------------------------
# One request


@dataclass
class RequestRecord:
    """What one request got. Times are in seconds; ``start`` on the clock of :func:`stream_chat`."""

    success: bool
    start: float = 0.0
    ttft: float = 0.0
    latency: float = 0.0
    itl: list[float] = field(default_factory=list)
    output_tokens: int = 0
    prompt_tokens: int | None = None
    streamed_tokens: int = 0  # chunks with a content, reasoning_content or reasoning delta that is not empty
    error_kind: str = ""
    error: str = ""

    def summary(self) -> dict[str, t.Any]:
        """The record as the warm-up is reported: milliseconds, no per-token gaps."""
        return {
            "success": self.success,
            "ttft_ms": _ms(self.ttft) if self.success else None,
            "e2el_ms": _ms(self.latency) if self.success else None,
            "output_tokens": self.output_tokens if self.success else 0,
            "prompt_tokens": self.prompt_tokens,
            "error": self.error or None,
        }


Clock = t.Callable[[], float]


def _ms(seconds: float) -> float:
    return round(seconds * 1000.0, 3)


def mask(text: str, secret: str | None) -> str:
    """``text`` with every occurrence of ``secret`` replaced, so that no message carries the API key."""
    return text.replace(secret, REDACTED) if secret else text


def request_headers(api_key: str | None) -> dict[str, str]:
    headers = {
        "Content-Type": "application/json",
        "Accept": "text/event-stream",
        "User-Agent": USER_AGENT,
        "Connection": "close",
    }
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    return headers


def chat_body(model: str, prompt: str, output_tokens: int, ignore_eos: bool) -> bytes:
    """The JSON body of a streamed chat completion of ``output_tokens`` tokens at most (exactly, with ``ignore_eos``)."""
    body: dict[str, t.Any] = {
        "model": model,
        "messages": [{"role": "user", "content": prompt}],
        "max_tokens": output_tokens,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    if ignore_eos:  # vLLM's sampling parameter; left out when false, as vLLM's benchmark does
        body["ignore_eos"] = True
    return json.dumps(body, separators=(",", ":")).encode()


def synthetic_prompt(prompt_tokens: int, seed: str) -> str:
    """``prompt_tokens`` words drawn from :data:`PROMPT_WORDS` with a generator seeded by ``seed``."""
    rng = random.Random(seed)
    return " ".join(rng.choice(PROMPT_WORDS) for _word in range(prompt_tokens))


def _connection(endpoint: Endpoint, timeout: float, context: ssl.SSLContext | None) -> http.client.HTTPConnection:
    if endpoint.scheme == "https":
        return http.client.HTTPSConnection(endpoint.host, endpoint.port, timeout=timeout, context=context)
    return http.client.HTTPConnection(endpoint.host, endpoint.port, timeout=timeout)


def ssl_context(validate_certs: bool) -> ssl.SSLContext:
    context = ssl.create_default_context()
    if not validate_certs:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    return context


def _seconds(value: float) -> str:
    rounded = round(float(value), 1)
    return str(int(rounded)) if rounded == int(rounded) else str(rounded)


def describe_exception(exc: BaseException, timeout: float) -> tuple[str, str]:
    """(kind, message) of an exception raised while a request was sent or its stream read."""
    # socket.timeout is TimeoutError only from Python 3.10 on; modules also run on older Pythons.
    if isinstance(exc, (socket.timeout, TimeoutError)):  # noqa: UP041
        return TIMEOUT, f"timed out after {_seconds(timeout)} s"
    if isinstance(exc, http.client.IncompleteRead):
        return CONNECTION, "the server closed the connection in the middle of the stream"
    if isinstance(exc, http.client.RemoteDisconnected):
        return CONNECTION, "the server closed the connection without answering"
    if isinstance(exc, ConnectionRefusedError):
        return CONNECTION, "connection refused"
    if isinstance(exc, ConnectionResetError):
        return CONNECTION, "connection reset by the server"
    if isinstance(exc, socket.gaierror):
        return CONNECTION, f"cannot resolve the host name: {exc.strerror or exc}"
    if isinstance(exc, ssl.SSLError):
        return CONNECTION, f"TLS error: {exc.reason or exc}"[:BODY_EXCERPT]
    if isinstance(exc, http.client.HTTPException):
        return PROTOCOL, f"bad HTTP answer: {type(exc).__name__}: {exc}"[:BODY_EXCERPT]
    if isinstance(exc, OSError):
        return CONNECTION, (exc.strerror or str(exc) or type(exc).__name__)[:BODY_EXCERPT]
    return PROTOCOL, f"{type(exc).__name__}: {exc}"[:BODY_EXCERPT]


def _stream_error_text(error: object) -> str:
    if isinstance(error, dict):
        message = error.get("message")
        if message is not None:
            return str(message)
    return json.dumps(error) if not isinstance(error, str) else error


class _Failure(Exception):
    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message


def _limit(connection: http.client.HTTPConnection, remaining: float) -> None:
    """Let the next socket operation wait ``remaining`` seconds at most; raise TimeoutError when none are left."""
    if remaining <= 0:
        raise TimeoutError("timed out")
    if connection.sock is not None:
        connection.sock.settimeout(remaining)


def _lines(response: http.client.HTTPResponse, connection: http.client.HTTPConnection, deadline: float, clock: Clock) -> t.Iterator[bytes]:
    """The lines of the body as they arrive, each read waiting until ``deadline`` at most.

    ``read1`` rather than ``readline``: on a chunked body cut short, ``readline`` returns an end of file
    (``HTTPResponse.peek`` swallows the ``IncompleteRead``), while ``read1`` raises it.
    """
    buffer = b""
    while True:
        newline = buffer.find(b"\n")
        if newline >= 0:
            yield buffer[:newline]
            buffer = buffer[newline + 1 :]
            continue
        if len(buffer) > MAX_LINE:
            raise _Failure(PROTOCOL, f"a stream line is longer than {MAX_LINE} bytes")
        _limit(connection, deadline - clock())
        data = response.read1(65536)
        if not data:
            if buffer:
                yield buffer
            return
        buffer += data


def stream_chat(
    endpoint: Endpoint,
    body: bytes,
    api_key: str | None,
    timeout: float,
    context: ssl.SSLContext | None = None,
    clock: Clock = time.perf_counter,
) -> RequestRecord:
    """Send one streamed chat completion and time its chunks; never raises for what the server or network does.

    ``timeout`` bounds the whole request: connecting, and reading the stream until its end.
    """
    start = clock()
    deadline = start + timeout
    record = RequestRecord(success=False, start=start)
    last: float | None = None
    done = False
    usage_tokens: int | None = None
    connection = _connection(endpoint, timeout, context)
    try:
        connection.request("POST", endpoint.path + "/v1/chat/completions", body=body, headers=request_headers(api_key))
        _limit(connection, deadline - clock())
        response = connection.getresponse()
        if response.status != 200:
            excerpt = response.read(BODY_EXCERPT * 4).decode("utf-8", "replace").strip()
            raise _Failure(HTTP_STATUS, f"HTTP {response.status}: {excerpt[:BODY_EXCERPT]}" if excerpt else f"HTTP {response.status}")
        for raw in _lines(response, connection, deadline, clock):
            line = raw.decode("utf-8", "replace").strip()
            if not line.startswith("data:"):
                continue  # blank separators, ": comments" (pings), event:, id:, retry:
            payload = line[len("data:") :].strip()
            if payload == "[DONE]":
                done = True
                break
            timestamp = clock()
            try:
                data = json.loads(payload)
            except ValueError:
                raise _Failure(PROTOCOL, f"a stream chunk is not JSON: {payload[:BODY_EXCERPT]}") from None
            if not isinstance(data, dict):
                raise _Failure(PROTOCOL, f"a stream chunk is not a JSON object: {payload[:BODY_EXCERPT]}")
            if data.get("error") or data.get("object") == "error":  # vLLM 0.30: {"error": {...}}; older: {"object": "error", ...}
                error = data["error"] if data.get("error") else data
                raise _Failure(STREAM_ERROR, f"error in the stream: {_stream_error_text(error)}"[:BODY_EXCERPT])
            choices = data.get("choices")
            if choices:
                if last is None:
                    record.ttft = timestamp - start
                else:
                    record.itl.append(timestamp - last)
                last = timestamp
                choice = choices[0] if isinstance(choices, list) and isinstance(choices[0], dict) else {}
                raw_delta = choice.get("delta")
                delta = raw_delta if isinstance(raw_delta, dict) else {}
                if any(isinstance(delta.get(name), str) and delta.get(name) for name in TEXT_FIELDS):
                    record.streamed_tokens += 1
            elif isinstance(data.get("usage"), dict):
                usage = data["usage"]
                if isinstance(usage.get("completion_tokens"), int):
                    usage_tokens = usage["completion_tokens"]
                if isinstance(usage.get("prompt_tokens"), int):
                    record.prompt_tokens = usage["prompt_tokens"]
        if last is None:
            raise _Failure(PROTOCOL, "the stream carried no chunk with choices (vLLM's benchmark counts it failed)")
        if not done:
            raise _Failure(PROTOCOL, "the stream ended without 'data: [DONE]'")
    except _Failure as failure:
        record.error_kind, record.error = failure.kind, mask(failure.message, api_key)
        return record
    except Exception as exc:  # anything the network or http.client raises is this request's failure
        kind, message = describe_exception(exc, timeout)
        record.error_kind, record.error = kind, mask(message, api_key)
        return record
    finally:
        connection.close()
    record.success = True
    record.latency = last - start
    record.output_tokens = usage_tokens if usage_tokens is not None else record.streamed_tokens
    return record


def server_version(endpoint: Endpoint, timeout: float = VERSION_TIMEOUT, context: ssl.SSLContext | None = None) -> str | None:
    """vLLM's ``GET /version`` (``{"version": "0.30.0"}``, not guarded by the API key); None when it does not answer so."""
    connection = _connection(endpoint, timeout, context)
    try:
        connection.request("GET", endpoint.path + "/version", headers={"User-Agent": USER_AGENT, "Accept": "application/json"})
        response = connection.getresponse()
        raw = response.read(4096)
        if response.status != 200:
            return None
        version = json.loads(raw).get("version")
        return str(version)[:100] if isinstance(version, (str, int, float)) and str(version) else None
    except Exception:  # informational: a server without /version is measured all the same
        return None
    finally:
        connection.close()


def speculation_counters(endpoint: Endpoint, timeout: float = VERSION_TIMEOUT, context: ssl.SSLContext | None = None) -> dict[str, float] | None:
    """vLLM's speculative decoding counters from its ``GET /metrics`` (not guarded by the API key: none is sent); None
    when it does not answer with Prometheus' text. An engine that does not speculate has none of them (an empty dict)."""
    connection = _connection(endpoint, timeout, context)
    try:
        connection.request("GET", endpoint.path + "/metrics", headers={"User-Agent": USER_AGENT, "Accept": "text/plain"})
        response = connection.getresponse()
        raw = response.read(METRICS_LIMIT)
        if response.status != 200:
            return None
        return counter_totals(raw.decode("utf-8", "replace"), SPECULATION)
    except Exception:  # informational: a server without /metrics is measured all the same
        return None
    finally:
        connection.close()


# ---------------------------------------------------------------------------------------------------------------
# The statistics (pure functions)


def percentile(values: t.Sequence[float], p: float) -> float:
    """The ``p``-th percentile, interpolated linearly between the two nearest ranks (``numpy.percentile``'s default)."""
    if not values:
        raise ValueError("percentile of no values")
    ordered = sorted(values)
    rank = (len(ordered) - 1) * p / 100.0
    low = int(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def _round(value: float | None, digits: int = 3) -> float | None:
    return None if value is None else round(value, digits)


def distribution_ms(name: str, values: t.Sequence[float]) -> dict[str, float | None]:
    """``mean_<name>_ms``, ``median_<name>_ms`` and ``p99_<name>_ms`` of ``values`` (seconds); None for no values."""
    if not values:
        return {f"mean_{name}_ms": None, f"median_{name}_ms": None, f"p99_{name}_ms": None}
    return {
        f"mean_{name}_ms": _round(statistics.fmean(values) * 1000.0),
        f"median_{name}_ms": _round(percentile(values, 50) * 1000.0),
        f"p99_{name}_ms": _round(percentile(values, 99) * 1000.0),
    }


def error_summary(records: t.Iterable[RequestRecord]) -> tuple[dict[str, int], list[str]]:
    """(failures by kind, the first :data:`MAX_ERROR_MESSAGES` distinct messages in the order they came)."""
    kinds: dict[str, int] = {}
    messages: list[str] = []
    for record in records:
        if record.success:
            continue
        kinds[record.error_kind] = kinds.get(record.error_kind, 0) + 1
        if record.error not in messages and len(messages) < MAX_ERROR_MESSAGES:
            messages.append(record.error)
    return kinds, messages


def level_metrics(records: t.Sequence[RequestRecord], duration: float, concurrency: int) -> dict[str, t.Any]:
    """The figures of one concurrency level, as vLLM's ``calculate_metrics`` computes them (see the module's doc)."""
    completed = [record for record in records if record.success]
    output_lens = [record.output_tokens for record in completed]
    input_lens = [record.prompt_tokens or 0 for record in completed]
    tpots = [(record.latency - record.ttft) / (record.output_tokens - 1) for record in completed if record.output_tokens > 1]
    itls = [gap for record in completed for gap in record.itl]
    total_output = sum(output_lens)
    kinds, messages = error_summary(records)
    metrics: dict[str, t.Any] = {
        "max_concurrency": concurrency,
        "num_prompts": len(records),
        "completed": len(completed),
        "failed": len(records) - len(completed),
        "duration": _round(duration, 4),
        "total_input_tokens": sum(input_lens),
        "total_output_tokens": total_output,
        "mean_output_tokens": _round(total_output / len(completed), 2) if completed else None,
        "request_throughput": _round(len(completed) / duration) if duration > 0 else None,
        "output_throughput": _round(total_output / duration) if duration > 0 else None,
        "total_token_throughput": _round((sum(input_lens) + total_output) / duration) if duration > 0 else None,
        "per_request_output_throughput": None,
    }
    metrics.update(distribution_ms("ttft", [record.ttft for record in completed]))
    metrics.update(distribution_ms("tpot", tpots))
    metrics.update(distribution_ms("itl", itls))
    metrics.update(distribution_ms("e2el", [record.latency for record in completed]))
    if tpots and statistics.fmean(tpots) > 0:
        metrics["per_request_output_throughput"] = _round(1.0 / statistics.fmean(tpots))
    metrics["error_kinds"] = kinds
    metrics["error_messages"] = messages
    return metrics


# ---------------------------------------------------------------------------------------------------------------
# The sweep


def requests_for(concurrency: int, requests_per_level: int | None) -> int:
    """How many requests a level sends: ``requests_per_level``, or by default 4 rounds of ``concurrency``, 8 at least."""
    return requests_per_level if requests_per_level else max(8, 4 * concurrency)


Sender = t.Callable[[bytes], RequestRecord]


def run_level(bodies: t.Sequence[bytes], concurrency: int, send: Sender, clock: Clock = time.perf_counter) -> tuple[list[RequestRecord], float]:
    """Send every body with exactly ``concurrency`` requests in flight (threads); (records in order, duration)."""
    records: list[RequestRecord | None] = [None] * len(bodies)
    lock = threading.Lock()
    cursor = [0]

    def worker() -> None:
        while True:
            with lock:
                index = cursor[0]
                cursor[0] += 1
            if index >= len(bodies):
                return
            try:
                records[index] = send(bodies[index])
            except Exception as exc:  # a bug in send must not hang the level
                records[index] = RequestRecord(success=False, error_kind=PROTOCOL, error=f"{type(exc).__name__}: {exc}"[:BODY_EXCERPT])

    threads = [threading.Thread(target=worker, name=f"benchmark-{n}", daemon=True) for n in range(min(concurrency, len(bodies)))]
    started = clock()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    duration = clock() - started
    return [record if record is not None else RequestRecord(success=False, error_kind=PROTOCOL, error="not sent") for record in records], duration


@dataclass
class BenchmarkConfig:
    url: str
    model: str
    api_key: str | None = None
    concurrency: t.Sequence[int] = DEFAULT_CONCURRENCY
    requests_per_level: int | None = None
    prompt_tokens: int = DEFAULT_PROMPT_TOKENS
    output_tokens: int = DEFAULT_OUTPUT_TOKENS
    warmup: bool = True
    ignore_eos: bool = True
    timeout: float = DEFAULT_TIMEOUT
    validate_certs: bool = True

    def check(self) -> list[str]:
        """What is wrong with the settings, each naming its option; empty when they are fine."""
        problems: list[str] = []
        try:
            parse_url(self.url)
        except BenchmarkError as exc:
            problems.append(str(exc))
        if not self.model.strip():
            problems.append("model must not be empty")
        if not self.concurrency:
            problems.append("concurrency must list at least one level")
        bad = [level for level in self.concurrency if not isinstance(level, int) or isinstance(level, bool) or level < 1]
        if bad:
            problems.append(f"concurrency levels must be integers of at least 1, not {', '.join(map(repr, bad))}")
        if len(set(self.concurrency)) != len(list(self.concurrency)):
            problems.append(f"concurrency must not repeat a level: {list(self.concurrency)}")
        if self.requests_per_level is not None and self.requests_per_level < 1:
            problems.append(f"requests_per_level must be at least 1, not {self.requests_per_level}")
        for name in ("prompt_tokens", "output_tokens"):
            if getattr(self, name) < 1:
                problems.append(f"{name} must be at least 1, not {getattr(self, name)}")
        if not self.timeout > 0:
            problems.append(f"timeout must be above 0, not {self.timeout}")
        return problems

    def settings(self) -> dict[str, t.Any]:
        return {
            "concurrency": list(self.concurrency),
            "requests_per_level": self.requests_per_level,
            "prompt_tokens": self.prompt_tokens,
            "output_tokens": self.output_tokens,
            "warmup": self.warmup,
            "ignore_eos": self.ignore_eos,
            "timeout": self.timeout,
        }


@dataclass
class BenchmarkResult:
    url: str
    model: str
    settings: dict[str, t.Any]
    started: str
    finished: str = ""
    server_version: str | None = None
    warmup: RequestRecord | None = None
    prompt_calibration: dict[str, t.Any] | None = None
    levels: list[dict[str, t.Any]] = field(default_factory=list)
    stopped: str | None = None

    @property
    def warmup_failed(self) -> bool:
        return self.warmup is not None and not self.warmup.success

    @property
    def completed(self) -> int:
        return sum(int(level["completed"]) for level in self.levels)

    @property
    def failed(self) -> int:
        return sum(int(level["failed"]) for level in self.levels)

    def as_dict(self) -> dict[str, t.Any]:
        return {
            "url": self.url,
            "model": self.model,
            "settings": self.settings,
            "started": self.started,
            "finished": self.finished,
            "server_version": self.server_version,
            "warmup": self.warmup.summary() if self.warmup is not None else None,
            "prompt_calibration": self.prompt_calibration,
            "levels": self.levels,
            "stopped": self.stopped,
        }

    def message(self) -> str:
        if self.warmup_failed and self.warmup is not None:
            return f"{self.url}: the warm-up request failed ({self.warmup.error}); nothing was measured"
        parts = [
            f"{level['max_concurrency']}: {level['output_throughput']} tok/s"
            + (f" ({level['failed']} of {level['num_prompts']} failed)" if level["failed"] else "")
            for level in self.levels
        ]
        text = f"{self.url} ({self.model}), output tokens/s by concurrency: " + "; ".join(parts)
        return text + (f"; {self.stopped}" if self.stopped else "")


def prompt_calibration(probe_words: int, prompt_tokens: int, single: RequestRecord, doubled: RequestRecord) -> dict[str, t.Any] | None:
    """How many words make ``prompt_tokens`` tokens of the server's own tokenizer, from the prompt token counts it
    reported for ``probe_words`` words (the warm-up) and for twice as many: tokens per word is the difference over
    ``probe_words``; the rest of the first count is the chat template's. vLLM's ``--input-len`` counts the user
    content the same way (the template comes on top). None when the server reported no usable counts (then one word
    per token is assumed, as the words are chosen to be one token in common vocabularies)."""
    if not (single.success and doubled.success and single.prompt_tokens and doubled.prompt_tokens):
        return None
    per_word = (doubled.prompt_tokens - single.prompt_tokens) / probe_words
    if per_word <= 0:
        return None
    return {
        "words": max(1, round(prompt_tokens / per_word)),
        "tokens_per_word": round(per_word, 3),
        "template_tokens": max(0, round(single.prompt_tokens - probe_words * per_word)),
    }


def utc_now() -> str:
    # datetime.UTC is Python 3.11+; modules also run on older Pythons.
    return datetime.now(timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z")  # noqa: UP017


def run_benchmark(
    config: BenchmarkConfig,
    send: Sender | None = None,
    version: t.Callable[[], str | None] | None = None,
    seed: str | None = None,
    counters: t.Callable[[], dict[str, float] | None] | None = None,
) -> BenchmarkResult:
    """The warm-up (not counted), then each level in turn.

    A failed warm-up ends the run before the levels; a level in which every request failed ends it after that
    level (the server is down or refuses everything: the next levels would only wait for their timeouts).
    Around each level the engine's speculative decoding counters are read (``counters``; vLLM's ``/metrics``): the
    level's ``speculative`` is what speculation did in it (:func:`_vllm_metrics.speculation`), None when the engine
    does not speculate or does not say. Other traffic to the engine during the level (a liveness probe) counts too.
    ``send``, ``version`` and ``counters`` replace the HTTP client (tests); ``seed`` makes the prompts repeatable.
    """
    endpoint = parse_url(config.url)
    context = ssl_context(config.validate_certs) if endpoint.scheme == "https" else None
    if send is None:

        def send(body: bytes) -> RequestRecord:
            return stream_chat(endpoint, body, config.api_key, config.timeout, context)

    if version is None:

        def version() -> str | None:
            return server_version(endpoint, min(VERSION_TIMEOUT, config.timeout), context)

    if counters is None:

        def counters() -> dict[str, float] | None:
            return speculation_counters(endpoint, min(VERSION_TIMEOUT, config.timeout), context)

    run_seed = seed if seed is not None else f"{random.SystemRandom().getrandbits(64):016x}"
    result = BenchmarkResult(url=endpoint.base, model=config.model, settings=config.settings(), started=utc_now())
    result.server_version = version()

    words = config.prompt_tokens

    def bodies(label: str, count: int) -> list[bytes]:
        return [chat_body(config.model, synthetic_prompt(words, f"{run_seed}:{label}:{n}"), config.output_tokens, config.ignore_eos) for n in range(count)]

    if config.warmup:
        # The warm-up's prompt is short (a tokenizer that splits words finely must not push it past the context);
        # with one more of twice its words it sizes the measured prompts.
        probe = min(words, CALIBRATION_WORDS)
        warmup_body = chat_body(config.model, synthetic_prompt(probe, f"{run_seed}:warmup"), config.output_tokens, config.ignore_eos)
        result.warmup = send(warmup_body)
        if not result.warmup.success:
            result.finished = utc_now()
            return result
        doubled = send(chat_body(config.model, synthetic_prompt(2 * probe, f"{run_seed}:calibrate"), 1, False))
        result.prompt_calibration = prompt_calibration(probe, config.prompt_tokens, result.warmup, doubled)
        if result.prompt_calibration is not None:
            words = int(result.prompt_calibration["words"])
    levels = list(config.concurrency)
    for index, concurrency in enumerate(levels):
        before = counters()
        records, duration = run_level(bodies(str(concurrency), requests_for(concurrency, config.requests_per_level)), concurrency, send)
        result.levels.append({**level_metrics(records, duration, concurrency), "speculative": speculation(before, counters())})
        if not any(record.success for record in records):
            rest = levels[index + 1 :]
            if rest:
                result.stopped = f"every request at concurrency {concurrency} failed: concurrency {', '.join(map(str, rest))} not run"
            break
    result.finished = utc_now()
    return result
