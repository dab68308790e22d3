# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests for the private module util _benchmark.

The statistics are pure functions, tested on synthetic records with exact values. The client and the sweep talk
HTTP to :class:`SseServer`, a threaded local server that streams chat completion chunks as vLLM does, at a set pace:
the first token ``first_token_seconds`` after the request came, the next ones ``1 / tokens_per_second`` apart.
"""

from __future__ import annotations

import itertools
import json
import socket
import threading
import time
import typing as t
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from ansible_collections.sparkops.inference.plugins.module_utils._benchmark import (
    BenchmarkConfig,
    BenchmarkError,
    RequestRecord,
    chat_body,
    distribution_ms,
    error_summary,
    level_metrics,
    parse_url,
    percentile,
    prompt_calibration,
    public_url,
    requests_for,
    run_benchmark,
    run_level,
    stream_chat,
    synthetic_prompt,
)
from ansible_collections.sparkops.inference.plugins.module_utils._vllm_metrics import SPECULATION
from prometheus_client import CollectorRegistry, Counter, generate_latest

MODEL = "tiny-moe"
SECRET = "sk-bench-3c9e1a77f2d0"


# ---------------------------------------------------------------------------------------------------------------
# The local server


@dataclass
class Pace:
    """How :class:`SseServer` answers. ``mode``: ``ok``; ``status_500`` (echoes the Authorization header in the
    body); ``close_mid_stream`` (the connection drops after ``break_after`` tokens); ``error_in_stream`` (an
    ``error`` object after ``break_after`` tokens); ``no_done`` (no ``data: [DONE]``); ``stall`` (no token)."""

    tokens_per_second: float = 1000.0
    first_token_seconds: float = 0.0
    mode: str = "ok"
    reasoning_tokens: int = 0  # the first tokens go to ``reasoning`` with ``content: null``, as a reasoning model's
    usage: bool = True
    break_after: int = 2
    prompt_tokens: int = 42


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    request_queue_size = 64  # socketserver's 5 can drop a burst of connections (a SYN retried a second later)
    owner: SseServer

    def handle_error(self, request: t.Any, client_address: t.Any) -> None:
        pass  # a connection the test dropped on purpose


def _chunk(delta: dict[str, t.Any] | None, finish: str | None = None, usage: dict[str, int] | None = None) -> bytes:
    document: dict[str, t.Any] = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": MODEL}
    document["choices"] = [] if delta is None else [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]
    if usage is not None:
        document["usage"] = usage
    return b"data: " + json.dumps(document, separators=(",", ":")).encode() + b"\n\n"


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: t.Any) -> None:  # noqa: A002 - the base class's name
        pass

    def do_GET(self) -> None:
        owner = t.cast(_Server, self.server).owner
        owner.gets.append((self.path, dict(self.headers.items())))
        if self.path == "/version":
            self._whole(200, b'{"version":"0.30.0"}')
        elif self.path == "/metrics" and owner.metrics:
            self._whole(200, owner.metrics_text())
        else:
            self._whole(404, b'{"detail":"Not Found"}')

    def _whole(self, status: int, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        self.close_connection = True

    def _send(self, data: bytes, timeline: Timeline | None = None) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()
        if timeline is not None:
            timeline.chunks.append(time.monotonic())

    def do_POST(self) -> None:
        owner = t.cast(_Server, self.server).owner
        arrived = time.monotonic()
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
        owner.arrived(body, dict(self.headers.items()))
        timeline = Timeline(arrived)
        try:
            self._stream(owner.pace, body, timeline)
        except OSError:  # the client gave up
            pass
        finally:
            if not timeline.end:
                owner.left()
        self.close_connection = True

    def _stream(self, pace: Pace, body: dict[str, t.Any], timeline: Timeline) -> None:
        if pace.mode == "status_500":
            self._whole(500, json.dumps({"error": {"message": f"boom, you sent {self.headers.get('Authorization')}"}}).encode())
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        if pace.mode == "stall":
            time.sleep(1.0)
            return
        tokens = int(body["max_tokens"])
        step = 1.0 / pace.tokens_per_second
        for n in range(tokens):
            due = timeline.arrived + pace.first_token_seconds + n * step  # on schedule, so that sleeps do not add up
            time.sleep(max(0.0, due - time.monotonic()))
            if n == 0:  # vLLM sends the role chunk in the step that makes the first token
                self._send(_chunk({"role": "assistant", "content": ""}), timeline)
            if pace.mode in ("close_mid_stream", "error_in_stream") and n == pace.break_after:
                if pace.mode == "close_mid_stream":
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                self._send(b'data: {"error":{"message":"EngineCore died","type":"InternalServerError","code":500}}\n\n')
                break
            delta = {"reasoning": f" r{n}", "content": None} if n < pace.reasoning_tokens else {"content": f" w{n}"}
            self._send(_chunk(delta, "length" if n == tokens - 1 else None), timeline)
        if pace.usage:
            self._send(_chunk(None, usage={"prompt_tokens": pace.prompt_tokens, "completion_tokens": tokens, "total_tokens": pace.prompt_tokens + tokens}))
        # before [DONE]: the client, its stream ended, must find the request recorded and no longer in flight
        t.cast(_Server, self.server).owner.finished(timeline)
        if pace.mode != "no_done":
            self._send(b"data: [DONE]\n\n")
        self.wfile.write(b"0\r\n\r\n")


@dataclass
class Timeline:
    """When the server really did what its pace asked, for one request: ``arrived`` (the request read), ``chunks``
    (each chunk with choices sent: the role chunk, then one a token), ``end`` (just before ``[DONE]``)."""

    arrived: float
    chunks: list[float] = field(default_factory=list)
    end: float = 0.0


@dataclass
class SseServer:
    pace: Pace = field(default_factory=Pace)
    timelines: list[Timeline] = field(default_factory=list)
    bodies: list[dict[str, t.Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    in_flight: int = 0
    most_in_flight: int = 0
    # GET /metrics: served (as prometheus_client writes it) or 404; what each request adds to the speculative
    # counters (drafts, draft tokens, accepted tokens), None for an engine that does not speculate.
    metrics: bool = True
    speculative_per_request: tuple[int, int, int] | None = None
    gets: list[tuple[str, dict[str, str]]] = field(default_factory=list)

    def metrics_text(self) -> bytes:
        registry = CollectorRegistry()
        requests = len(self.bodies)
        Counter("vllm:generation_tokens", "doc", ["model_name", "engine"], registry=registry).labels(MODEL, "0").inc(8 * requests)
        if self.speculative_per_request is not None:
            for name, each in zip(SPECULATION, self.speculative_per_request, strict=True):
                family = Counter(name.removesuffix("_total"), "doc", ["model_name", "engine"], registry=registry)
                family.labels(MODEL, "0").inc(each * requests)
        return bytes(generate_latest(registry))

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.owner = self
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()

    def arrived(self, body: dict[str, t.Any], headers: dict[str, str]) -> None:
        with self._lock:
            self.bodies.append(body)
            self.headers.append(headers)
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)

    def left(self) -> None:
        with self._lock:
            self.in_flight -= 1

    def finished(self, timeline: Timeline) -> None:
        """A stream about to end: its timeline recorded, the request no longer in flight."""
        timeline.end = time.monotonic()
        with self._lock:
            self.timelines.append(timeline)
            self.in_flight -= 1

    def close(self) -> None:
        self._server.shutdown()
        self._thread.join(5)
        self._server.server_close()


@pytest.fixture
def server() -> t.Iterator[SseServer]:
    instance = SseServer()
    yield instance
    instance.close()


def config(url: str, **kwargs: t.Any) -> BenchmarkConfig:
    settings: dict[str, t.Any] = {"concurrency": [1], "requests_per_level": 2, "prompt_tokens": 16, "output_tokens": 8, "timeout": 5.0}
    settings.update(kwargs)
    return BenchmarkConfig(url=url, model=MODEL, **settings)


# ---------------------------------------------------------------------------------------------------------------
# The statistics, on synthetic records


def record(ttft: float, latency: float, tokens: int, itl: list[float] | None = None, prompt: int | None = 10) -> RequestRecord:
    return RequestRecord(success=True, ttft=ttft, latency=latency, output_tokens=tokens, itl=itl or [], prompt_tokens=prompt)


def failure(kind: str, message: str) -> RequestRecord:
    return RequestRecord(success=False, error_kind=kind, error=message)


@pytest.mark.parametrize(
    "values,p,expected",
    [
        ([1.0, 2.0, 3.0, 4.0], 50, 2.5),
        ([1.0, 2.0, 3.0, 4.0], 99, 3.97),  # numpy.percentile([1, 2, 3, 4], 99) == 3.97
        ([4.0, 1.0, 3.0, 2.0], 0, 1.0),
        ([4.0, 1.0, 3.0, 2.0], 100, 4.0),
        ([7.0], 99, 7.0),
        ([0.1, 0.2, 0.3, 0.4, 1.0], 99, 0.976),  # 0.4 + 0.96 * 0.6
    ],
)
def test_percentile_interpolates_linearly_as_numpy(values: list[float], p: float, expected: float) -> None:
    assert percentile(values, p) == pytest.approx(expected, abs=1e-12)


def test_percentile_of_nothing_is_an_error() -> None:
    with pytest.raises(ValueError):
        percentile([], 50)


def test_distribution_in_milliseconds_and_none_for_no_values() -> None:
    assert distribution_ms("ttft", [0.1, 0.2, 0.3, 0.4]) == {"mean_ttft_ms": 250.0, "median_ttft_ms": 250.0, "p99_ttft_ms": 397.0}
    assert distribution_ms("itl", []) == {"mean_itl_ms": None, "median_itl_ms": None, "p99_itl_ms": None}


def test_level_metrics_follow_vllms_calculate_metrics_exactly() -> None:
    records = [
        record(0.2, 1.2, 11, [0.1] * 10, prompt=30),  # tpot 0.1
        record(0.4, 2.4, 21, [0.1] * 20, prompt=50),  # tpot 0.1
        record(0.3, 0.3, 1, [], prompt=20),  # one token: no tpot, as in vLLM
        failure("http_status", "HTTP 500: boom"),
    ]
    metrics = level_metrics(records, duration=4.0, concurrency=2)
    assert metrics["max_concurrency"] == 2
    assert (metrics["num_prompts"], metrics["completed"], metrics["failed"]) == (4, 3, 1)
    assert (metrics["total_input_tokens"], metrics["total_output_tokens"]) == (100, 33)
    assert metrics["output_throughput"] == 8.25  # 33 tokens / 4 s
    assert metrics["request_throughput"] == 0.75
    assert metrics["total_token_throughput"] == 33.25  # (100 + 33) / 4
    assert metrics["mean_output_tokens"] == 11.0
    assert metrics["mean_tpot_ms"] == 100.0 and metrics["median_tpot_ms"] == 100.0 and metrics["p99_tpot_ms"] == 100.0
    assert metrics["per_request_output_throughput"] == 10.0  # 1 / 0.1 s
    assert metrics["mean_ttft_ms"] == 300.0 and metrics["median_ttft_ms"] == 300.0 and metrics["p99_ttft_ms"] == 398.0
    assert metrics["mean_itl_ms"] == 100.0 and metrics["p99_itl_ms"] == 100.0
    assert metrics["mean_e2el_ms"] == 1300.0 and metrics["median_e2el_ms"] == 1200.0
    assert metrics["error_kinds"] == {"http_status": 1}
    assert metrics["error_messages"] == ["HTTP 500: boom"]


def test_level_metrics_tpot_is_per_request_then_averaged() -> None:
    # tpots 0.05 and 0.2: mean 0.125 s, so the per-request rate is 8 tok/s (not the mean of 20 and 5)
    metrics = level_metrics([record(0.0, 0.5, 11), record(0.0, 2.0, 11)], duration=2.0, concurrency=2)
    assert metrics["mean_tpot_ms"] == 125.0
    assert metrics["per_request_output_throughput"] == 8.0
    assert metrics["output_throughput"] == 11.0


def test_level_metrics_of_only_failures_are_none() -> None:
    metrics = level_metrics([failure("connection", "connection refused")] * 3, duration=0.5, concurrency=4)
    assert (metrics["completed"], metrics["failed"], metrics["total_output_tokens"], metrics["output_throughput"]) == (0, 3, 0, 0.0)
    for key in ("mean_ttft_ms", "p99_itl_ms", "mean_tpot_ms", "per_request_output_throughput", "mean_output_tokens"):
        assert metrics[key] is None
    assert metrics["error_kinds"] == {"connection": 3} and metrics["error_messages"] == ["connection refused"]


def test_error_summary_keeps_the_first_five_distinct_messages() -> None:
    records = [failure("timeout", f"message {n % 7}") for n in range(20)] + [record(0.1, 0.2, 2)]
    kinds, messages = error_summary(records)
    assert kinds == {"timeout": 20}
    assert messages == [f"message {n}" for n in range(5)]


def test_requests_per_level_default() -> None:
    assert [requests_for(c, None) for c in (1, 2, 4, 8, 16)] == [8, 8, 16, 32, 64]
    assert requests_for(16, 5) == 5


def test_run_level_keeps_exactly_concurrency_in_flight() -> None:
    lock = threading.Lock()
    state = {"now": 0, "most": 0}

    def send(body: bytes) -> RequestRecord:
        with lock:
            state["now"] += 1
            state["most"] = max(state["most"], state["now"])
        time.sleep(0.02)
        with lock:
            state["now"] -= 1
        return record(0.01, 0.02, int(body))

    records, duration = run_level([str(n).encode() for n in range(10)], 3, send)
    assert state["most"] == 3
    assert [r.output_tokens for r in records] == list(range(10))  # in the order of the bodies
    assert 0.06 <= duration < 1.0  # 4 rounds of 0.02 s at least


def test_run_level_turns_a_crashing_sender_into_failures() -> None:
    def send(body: bytes) -> RequestRecord:
        raise RuntimeError("bug")

    records, _duration = run_level([b"1", b"2"], 2, send)
    assert [(r.success, r.error) for r in records] == [(False, "RuntimeError: bug")] * 2


# ---------------------------------------------------------------------------------------------------------------
# Requests and settings


def test_parse_url_removes_v1_and_refuses_credentials() -> None:
    assert parse_url("http://h:8000/v1/").base == "http://h:8000"
    assert parse_url("https://h").port == 443
    assert parse_url("http://[fd00::1]:8000/").base == "http://[fd00::1]:8000"
    for bad, words in (
        ("ftp://h", "not an http"),
        ("http://user:pw@h:8000", "must not carry credentials"),
        ("http://h:8000?x=1", "query"),
        ("http://h:port", "not a valid URL"),
    ):
        with pytest.raises(BenchmarkError, match=words) as caught:
            parse_url(bad)
        assert "pw" not in str(caught.value)


def test_public_url_drops_credentials() -> None:
    assert public_url("http://user:pw@h:8000/v1?x=1") == "http://h:8000/v1"


def test_chat_body_is_what_the_brief_asks() -> None:
    body = json.loads(chat_body(MODEL, "hello there", 64, ignore_eos=True))
    assert body == {
        "model": MODEL,
        "messages": [{"role": "user", "content": "hello there"}],
        "max_tokens": 64,
        "stream": True,
        "stream_options": {"include_usage": True},
        "ignore_eos": True,
    }
    assert "ignore_eos" not in json.loads(chat_body(MODEL, "x", 1, ignore_eos=False))


def test_synthetic_prompts_have_the_length_asked_and_differ_from_the_first_word() -> None:
    prompts = [synthetic_prompt(256, f"seed:{n}") for n in range(20)]
    assert all(len(prompt.split()) == 256 for prompt in prompts)
    assert len({" ".join(prompt.split()[:4]) for prompt in prompts}) == 20
    assert synthetic_prompt(5, "same") == synthetic_prompt(5, "same")


@pytest.mark.parametrize(
    "changes,words",
    [
        ({"concurrency": [1, 0]}, "concurrency levels must be integers of at least 1, not 0"),
        ({"concurrency": []}, "concurrency must list at least one level"),
        ({"concurrency": [2, 2]}, "concurrency must not repeat"),
        ({"requests_per_level": 0}, "requests_per_level must be at least 1"),
        ({"prompt_tokens": 0}, "prompt_tokens must be at least 1"),
        ({"output_tokens": -1}, "output_tokens must be at least 1"),
        ({"timeout": 0}, "timeout must be above 0"),
        ({"url": "nope"}, "url 'nope'"),
        ({"model": " "}, "model must not be empty"),
    ],
)
def test_config_check_names_the_option(changes: dict[str, t.Any], words: str) -> None:
    settings = config("http://127.0.0.1:1")
    for key, value in changes.items():
        setattr(settings, key, value)
    problems = settings.check()
    assert len(problems) == 1 and words in problems[0]


# ---------------------------------------------------------------------------------------------------------------
# Against the local server


def test_a_reasoning_stream_counts_reasoning_deltas_and_times_the_first_chunk(server: SseServer) -> None:
    server.pace = Pace(first_token_seconds=0.05, reasoning_tokens=5, usage=False)
    outcome = stream_chat(parse_url(server.url), chat_body(MODEL, "hi", 8, True), None, 5.0)
    assert outcome.success, outcome.error
    assert outcome.output_tokens == 8 and outcome.streamed_tokens == 8  # no usage chunk: the deltas, reasoning ones too
    assert 0.04 <= outcome.ttft < 0.2
    assert len(outcome.itl) == 8  # the role chunk, then 8 token chunks: 8 gaps (the first about 0), as vLLM's client counts
    assert outcome.latency >= outcome.ttft


def test_usage_counts_when_present(server: SseServer) -> None:
    server.pace = Pace(prompt_tokens=77)
    outcome = stream_chat(parse_url(server.url), chat_body(MODEL, "hi", 4, True), SECRET, 5.0)
    assert (outcome.success, outcome.output_tokens, outcome.prompt_tokens) == (True, 4, 77)
    assert server.headers[0]["Authorization"] == f"Bearer {SECRET}"
    assert server.bodies[0]["stream_options"] == {"include_usage": True}


@pytest.mark.parametrize("concurrency,requests", [(1, 3), (4, 4)])
def test_measured_figures_match_the_server_pace(server: SseServer, concurrency: int, requests: int) -> None:
    """20 tokens/s after a first token at 0.2 s: TTFT 0.2 s, TPOT 0.05 s, ``concurrency`` requests of 8 tokens at a
    time. The figures are checked against what the server's own clock says it did (on a busy test machine its sleeps
    overrun the pace, and the client cannot know better than the server), within 5 % or a millisecond. The client's
    TTFT also holds the request's way in (connecting, the server's accept and thread start: 30 ms on a loaded 2-core
    machine, over 130 ms with four requests at once while the lab ran beside it), so it is checked between the
    server's and the server's plus that way in, read from the client's own end-to-end latency (the server's time from
    arrival to end, plus the way in and out), plus half a token's step for one request's way in above the average (12
    ms seen while the engine's tests ran beside): a TTFT taken from the wrong moment (the end, or the first token chunk
    after the role chunk, a whole step later) lands outside."""
    tokens, step = 8, 0.05
    server.pace = Pace(tokens_per_second=1 / step, first_token_seconds=0.2)
    result = run_benchmark(config(server.url, concurrency=[concurrency], requests_per_level=requests, output_tokens=tokens, warmup=False))
    (level,) = result.levels
    assert (level["completed"], level["failed"], level["total_output_tokens"]) == (requests, 0, tokens * requests)
    assert server.most_in_flight == concurrency
    lines = server.timelines
    assert len(lines) == requests and all(len(line.chunks) == 1 + tokens for line in lines)  # the role chunk, the tokens
    ttfts = [line.chunks[0] - line.arrived for line in lines]
    tpots = [(line.end - line.chunks[0]) / (tokens - 1) for line in lines]
    gaps = [later - earlier for line in lines for earlier, later in itertools.pairwise(line.chunks)]
    # The pace is a floor: each token goes on schedule from the request's arrival (first at 0.2 s, the last at 0.55 s)
    # or late, never early. A late first token shortens the gaps after it, so a request's TPOT may be under the step.
    assert min(ttfts) >= 0.2 and min(line.chunks[-1] - line.arrived for line in lines) >= 0.2 + (tokens - 1) * step - 0.001
    ms = 1000.0
    slack = ms * step / 2  # one request's way in above the average, at most half a step
    server_e2e = ms * sum(line.end - line.arrived for line in lines) / requests
    way_in = level["mean_e2el_ms"] - server_e2e  # what the client's clock adds to the server's, on average
    # The client does not double a request; it may end a little before the server notes its end (the server's thread
    # can be put aside between its last write and its clock: 2 ms seen under load).
    assert -slack <= way_in <= server_e2e, (level["mean_e2el_ms"], server_e2e)
    assert ms * sum(ttfts) / requests - 1.0 <= level["mean_ttft_ms"] <= ms * sum(ttfts) / requests + max(way_in, 0.0) + slack
    # With so few, near the slowest; one request's way in is at most all of theirs.
    assert ms * sorted(ttfts)[-2] - 1.0 <= level["p99_ttft_ms"] <= ms * max(ttfts) + requests * max(way_in, 0.0) + slack
    assert level["mean_tpot_ms"] == pytest.approx(ms * sum(tpots) / requests, rel=0.05, abs=1.0)
    assert level["per_request_output_throughput"] == pytest.approx(requests / sum(tpots), rel=0.05)
    assert level["mean_itl_ms"] == pytest.approx(ms * sum(gaps) / len(gaps), rel=0.05, abs=1.0)  # paced, the first about 0
    # The level's duration runs on the client's clock, from before the first request is sent to after the last one
    # ends: the server's span plus every request's way in and the client's own work between requests (a loaded
    # machine: 130 ms for four at once beside the engine's image tests; 110 ms more than the way in for three in a
    # row), never less than the span. A duration summed over the requests (four times the span at concurrency 4) or
    # taken from one request lands outside.
    span = max(line.end for line in lines) - min(line.arrived for line in lines)
    slowest = span * 1.25 + requests * max(way_in, 0.0) / ms + 0.05
    assert tokens * requests / slowest <= level["output_throughput"] <= tokens * requests / span * 1.05, (level["duration"], span, way_in)


def test_the_warm_up_goes_first_and_is_not_counted(server: SseServer) -> None:
    result = run_benchmark(config(server.url, concurrency=[1, 2], requests_per_level=2), seed="fixed")
    assert len(server.bodies) == 1 + 1 + 2 + 2  # the warm-up, its calibration twin, the levels
    assert result.warmup is not None and result.warmup.success
    assert [level["num_prompts"] for level in result.levels] == [2, 2]
    prompts = [body["messages"][0]["content"] for body in server.bodies]
    assert len(set(prompts)) == 6  # the warm-up's prompts are their own; no two requests share a prefix
    assert result.prompt_calibration is None  # this server reports the same prompt_tokens whatever the prompt
    summary = result.as_dict()
    assert summary["warmup"]["success"] is True and summary["warmup"]["output_tokens"] == 8
    assert summary["server_version"] == "0.30.0"
    assert result.message().startswith(f"{server.url} ({MODEL}), output tokens/s by concurrency: 1: ")


def test_without_warm_up_no_extra_request(server: SseServer) -> None:
    result = run_benchmark(config(server.url, requests_per_level=3, warmup=False))
    assert len(server.bodies) == 3 and result.warmup is None and result.as_dict()["warmup"] is None


@pytest.mark.parametrize(
    "pace,kind,words",
    [
        (Pace(mode="status_500"), "http_status", "HTTP 500: "),
        (Pace(mode="close_mid_stream"), "connection", "closed the connection in the middle of the stream"),
        (Pace(mode="error_in_stream"), "stream_error", "error in the stream: EngineCore died"),
        (Pace(mode="no_done"), "protocol", "without 'data: [DONE]'"),
        (Pace(mode="stall"), "timeout", "timed out after 0.3 s"),
    ],
)
def test_failures_are_counted_by_kind(server: SseServer, pace: Pace, kind: str, words: str) -> None:
    server.pace = pace
    # Only the stall waits for the timeout; the others fail at once, and a short timeout would let a busy machine
    # turn them into timeouts too.
    timeout = 0.3 if kind == "timeout" else 10
    result = run_benchmark(config(server.url, concurrency=[2], requests_per_level=2, api_key=SECRET, warmup=False, timeout=timeout))
    (level,) = result.levels
    assert (level["completed"], level["failed"], level["total_output_tokens"]) == (0, 2, 0)
    assert level["error_kinds"] == {kind: 2}
    assert len(level["error_messages"]) == 1 and words in level["error_messages"][0]
    assert SECRET not in json.dumps(result.as_dict()) and SECRET not in result.message()


def test_the_api_key_a_server_echoes_is_masked(server: SseServer) -> None:
    server.pace = Pace(mode="status_500")
    result = run_benchmark(config(server.url, api_key=SECRET))
    assert server.headers[0]["Authorization"] == f"Bearer {SECRET}"  # it was sent
    assert result.warmup_failed and result.levels == []  # a failed warm-up ends the run before the levels
    assert result.warmup is not None and result.warmup.error == 'HTTP 500: {"error": {"message": "boom, you sent Bearer ********"}}'
    assert SECRET not in json.dumps(result.as_dict()) and SECRET not in result.message()
    assert "the warm-up request failed" in result.message()


def test_a_refused_connection_fails_every_request_and_stops_the_sweep() -> None:
    with socket.socket() as placeholder:
        placeholder.bind(("127.0.0.1", 0))
        port = placeholder.getsockname()[1]  # bound, not listening: connections are refused
        result = run_benchmark(config(f"http://127.0.0.1:{port}", concurrency=[1, 2, 4], requests_per_level=2, warmup=False))
    assert [level["max_concurrency"] for level in result.levels] == [1]
    assert result.levels[0]["error_kinds"] == {"connection": 2}
    assert result.levels[0]["error_messages"] == ["connection refused"]
    assert result.stopped == "every request at concurrency 1 failed: concurrency 2, 4 not run"
    assert result.server_version is None


def test_some_failures_leave_the_others_measured(server: SseServer) -> None:
    calls = {"n": 0}

    def send(body: bytes) -> RequestRecord:
        calls["n"] += 1
        return record(0.1, 0.5, 5) if calls["n"] % 2 else failure("timeout", "timed out after 1 s")

    result = run_benchmark(config(server.url, concurrency=[1], requests_per_level=4, warmup=False), send=send, version=lambda: None)
    assert (result.levels[0]["completed"], result.levels[0]["failed"], result.completed, result.failed) == (2, 2, 2, 2)
    assert "(2 of 4 failed)" in result.message()


def test_the_prompt_is_calibrated_against_the_servers_tokenizer() -> None:
    """A tokenizer that splits each word into 3 tokens and a chat template of 19: 32 prompt tokens are 11 words."""
    single = RequestRecord(success=True, prompt_tokens=32 * 3 + 19)
    doubled = RequestRecord(success=True, prompt_tokens=64 * 3 + 19)
    assert prompt_calibration(32, 32, single, doubled) == {"words": 11, "tokens_per_word": 3.0, "template_tokens": 19}
    assert prompt_calibration(32, 64, single, doubled) == {"words": 21, "tokens_per_word": 3.0, "template_tokens": 19}
    assert prompt_calibration(32, 32, single, RequestRecord(success=False)) is None
    assert prompt_calibration(32, 32, single, RequestRecord(success=True, prompt_tokens=None)) is None
    assert prompt_calibration(32, 32, single, single) is None  # no difference: nothing to learn from


def test_the_levels_use_the_calibrated_word_count() -> None:
    counts = iter([16 * 2 + 10, 32 * 2 + 10])  # the warm-up's 16 words, its twin's 32
    bodies: list[dict[str, t.Any]] = []

    def send(body: bytes) -> RequestRecord:
        bodies.append(json.loads(body))
        return RequestRecord(success=True, ttft=0.1, latency=0.5, output_tokens=8, itl=[0.05] * 7, prompt_tokens=next(counts, 42))

    result = run_benchmark(config("http://127.0.0.1:9", concurrency=[1], requests_per_level=2, prompt_tokens=32), send=send, version=lambda: None)
    assert result.as_dict()["prompt_calibration"] == {"words": 16, "tokens_per_word": 2.0, "template_tokens": 10}
    assert [len(b["messages"][0]["content"].split()) for b in bodies] == [16, 32, 16, 16]
    assert bodies[1]["max_tokens"] == 1 and "ignore_eos" not in bodies[1]


def test_each_level_reports_what_speculation_did_from_the_engine_s_counters_with_no_key_sent_there(server: SseServer) -> None:
    """Around each level the engine's /metrics is read (vLLM's spec-decode counters): 2 requests a level, each adding
    4 drafts of 3 tokens with 6 accepted, make half the draft tokens accepted and 2.5 tokens a step; the API key goes
    to the completions only."""
    server.speculative_per_request = (4, 12, 6)
    result = run_benchmark(config(server.url, concurrency=[1, 2], requests_per_level=2, api_key=SECRET, warmup=False))
    expected = {"drafts": 8, "draft_tokens": 24, "accepted_tokens": 12, "acceptance_rate": 0.5, "mean_acceptance_length": 2.5}
    assert [level["speculative"] for level in result.levels] == [expected, expected]
    metrics = [headers for path, headers in server.gets if path == "/metrics"]
    assert len(metrics) == 4 and not any(SECRET in str(headers) for headers in metrics)
    assert all(SECRET in headers.get("Authorization", "") for headers in server.headers)


@pytest.mark.parametrize("served", [True, False])
def test_no_speculative_figures_from_an_engine_that_does_not_speculate_or_has_no_metrics(server: SseServer, served: bool) -> None:
    server.metrics = served
    result = run_benchmark(config(server.url, requests_per_level=2, warmup=False))
    assert [level["speculative"] for level in result.levels] == [None] and result.levels[0]["completed"] == 2
