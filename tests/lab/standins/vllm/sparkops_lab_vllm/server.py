# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""vLLM's OpenAI-compatible HTTP API on a ThreadingHTTPServer.

Endpoints: GET /health, /version, /metrics, /v1/models; POST /v1/chat/completions and /v1/completions (both
with ``stream``). ``--api-key`` (or $VLLM_API_KEY) guards the paths vLLM 0.30.0's middleware guards.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import socket
import socketserver
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from . import engine
from .config import Behaviour
from .logs import log, uvicorn
from .metrics import Metrics
from .state import ENGINE_DEAD_MESSAGE, State

GUARDED_PREFIX = ("/v1", "/v2", "/inference", "/cohere")  # serve/middleware/authenticate.py:11


@dataclass
class Api:
    """What the HTTP API needs to know."""

    version: str
    model: str  # MODEL as given (root)
    served_names: list[str]
    max_model_len: int
    api_keys: list[str]  # --api-key KEY..., else $VLLM_API_KEY (serve/middleware/register.py:32-36)
    reasoning_parser: str | None
    auto_tools: bool  # --enable-auto-tool-choice with --tool-call-parser
    chat_template: str | None
    max_num_seqs: int
    behaviour: Behaviour
    state: State
    access_log: bool = True
    log_requests: bool = False
    metrics: Metrics = field(init=False)
    slots: threading.Semaphore = field(init=False)

    def __post_init__(self) -> None:
        self.metrics = Metrics(self.served_names[0], self.max_model_len * self.max_num_seqs)
        self.slots = threading.Semaphore(self.max_num_seqs)


class ApiError(Exception):
    """An error response in vLLM's format: ``{"error": {"message", "type", "param", "code"}}``."""

    def __init__(self, status: int, message: str, kind: str, param: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.body = {"error": {"message": message, "type": kind, "param": param, "code": status}}


def bad_request(message: str, param: str | None = None) -> ApiError:
    return ApiError(400, message, "BadRequestError", param)


def positive_int(body: dict[str, Any], *names: str) -> int | None:
    for name in names:
        value = body.get(name)
        if value is None:
            continue
        if not isinstance(value, int) or isinstance(value, bool):
            raise bad_request(f"{name}: Input should be a valid integer", name)
        if value < 1:
            raise bad_request(f"{name} must be at least 1, got {value}.", name)
        return value
    return None


class HttpServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    # vLLM hands its bound socket to uvicorn (launcher.py:95-111), which listens with uvicorn's backlog, 2048;
    # socketserver's default of 5 would drop the connections of a burst of clients (a benchmark at concurrency 16).
    request_queue_size = 2048
    api: Api

    def server_bind(self) -> None:
        # HTTPServer.server_bind looks the host name up (getfqdn), which can hang without DNS: bind only.
        socketserver.TCPServer.server_bind(self)
        host, port = self.server_address[:2]
        self.server_name, self.server_port = str(host), int(port)


def bind_server(host: str | None, port: int) -> HttpServer:
    """A server bound to (host, port) but not listening yet: connections are refused until serve_in_background.

    vLLM binds its socket before the engine starts and listens once it is ready (launcher.py:212-227, :269-276);
    the API the server answers with is set (``server.api``) before it listens."""
    family = socket.AF_INET6 if host and ":" in host else socket.AF_INET

    class Server(HttpServer):
        address_family = family

    server = Server((host or "", port), Handler, bind_and_activate=False)
    try:
        server.server_bind()
    except OSError:
        server.server_close()
        raise
    return server


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: HttpServer

    def version_string(self) -> str:
        return "uvicorn"

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        if self.server.api.access_log:
            host, port = self.client_address[:2]
            status = int(code) if str(code).isdigit() else 0
            phrase = self.responses.get(status, ("",))[0] if status else ""
            uvicorn("INFO", f'{host}:{port} - "{self.command} {self.path} {self.request_version}" {code} {phrase}'.rstrip())

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (BaseHTTPRequestHandler's signature)
        pass

    def do_GET(self) -> None:
        self.dispatch("GET")

    def do_POST(self) -> None:
        self.dispatch("POST")

    # --- plumbing ----------------------------------------------------------------------------------------
    def send(self, status: int, body: bytes, content_type: str = "application/json") -> None:
        self.send_response(status)
        if body or content_type != "application/json":
            self.send_header("content-type", content_type)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def send_json(self, status: int, document: Any) -> None:
        self.send(status, json.dumps(document, separators=(",", ":")).encode())

    def read_body(self) -> dict[str, Any]:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw or b"null")
        except ValueError as exc:
            raise bad_request(f"JSON decode error: {exc}") from None
        if not isinstance(body, dict):
            raise bad_request("Input should be a valid dictionary or object to extract fields from")
        return body

    def dispatch(self, method: str) -> None:
        api, path = self.server.api, self.path.split("?", 1)[0]
        routes = {
            "/health": ("GET", self.health),
            "/version": ("GET", lambda: self.send_json(200, {"version": api.version})),
            "/metrics": ("GET", lambda: self.send(200, api.metrics.render().encode(), "text/plain; version=0.0.4; charset=utf-8")),
            "/v1/models": ("GET", self.models),
            "/v1/chat/completions": ("POST", self.chat),
            "/v1/completions": ("POST", self.completions),
        }
        try:
            if api.api_keys and path.startswith(GUARDED_PREFIX) and method != "OPTIONS" and not self.authorized(api.api_keys):
                self.send_json(401, {"error": "Unauthorized"})
                return
            if path not in routes:
                self.send_json(404, {"detail": "Not Found"})
                return
            wanted, handler = routes[path]
            if method != wanted:
                self.send_json(405, {"detail": "Method Not Allowed"})
                return
            if path.startswith("/v1") and api.state.phase == "unhealthy":
                raise ApiError(503, "The engine is not ready yet.", "ServiceUnavailableError")
            handler()
        except ApiError as error:
            self.send_json(error.status, error.body)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        except Exception as exc:  # a stand-in bug: uvicorn's answer to an unhandled exception, and on with serving
            log("ERROR", "httptools_impl.py:414", f"Exception in ASGI application: {type(exc).__name__}: {exc}")
            self.close_connection = True
            with contextlib.suppress(OSError):
                self.send(500, b"Internal Server Error", "text/plain; charset=utf-8")

    def authorized(self, keys: list[str]) -> bool:
        """serve/middleware/authenticate.py:30-45: ``Authorization: <scheme> <token>``, the scheme ``bearer`` in any case."""
        scheme, _space, token = (self.headers.get("authorization") or "").partition(" ")
        digest = hashlib.sha256(token.encode()).digest()
        return scheme.lower() == "bearer" and any(hmac.compare_digest(digest, hashlib.sha256(key.encode()).digest()) for key in keys)

    # --- endpoints -----------------------------------------------------------------------------------------
    def health(self) -> None:
        self.send(200 if self.server.api.state.phase == "healthy" else 503, b"")

    def models(self) -> None:
        api, now = self.server.api, int(time.time())
        permission = {
            "object": "model_permission",
            "created": now,
            "allow_create_engine": False,
            "allow_sampling": True,
            "allow_logprobs": True,
            "allow_search_indices": False,
            "allow_view": True,
            "allow_fine_tuning": False,
            "organization": "*",
            "group": None,
            "is_blocking": False,
        }
        data = [
            {
                "id": name,
                "object": "model",
                "created": now,
                "owned_by": "vllm",
                "root": api.model,
                "parent": None,
                "max_model_len": api.max_model_len,
                "permission": [{"id": f"modelperm-{uuid.uuid4().hex}", **permission}],
            }
            for name in api.served_names
        ]
        self.send_json(200, {"object": "list", "data": data})

    def check_request(self, body: dict[str, Any]) -> None:
        api = self.server.api
        model = body.get("model")
        if model and model not in api.served_names:
            raise ApiError(404, f"The model `{model}` does not exist.", "NotFoundError", "model")
        if api.state.phase == "dead":  # engine_error_handler (vllm_error.py:28-68): shut down, answer 500
            api.state.exit_now.set()
            raise ApiError(500, ENGINE_DEAD_MESSAGE, "InternalServerError")
        if api.behaviour.wedged:
            raise ApiError(500, "EngineCore did not answer in time (lab stand-in: wedged).", "InternalServerError")

    def budget(self, body: dict[str, Any], prompt_tokens: int) -> int:
        """max_tokens (or max_completion_tokens) checked as vLLM 0.30.0's TokenizeParams checks them
        (renderers/params.py:216-247 and :494-516; chat_completion/protocol.py:617-635).

        The prompt is tokenized truncated to max_input_tokens + 1 (params.py:326-334), so a prompt that is too
        long always counts "at least" max_input_tokens + 1 tokens. VLLMValidationError's text carries its
        parameter and value (exceptions.py:48-55); it is a 400 BadRequestError (error_response.py:41-44).
        """
        limit = self.server.api.max_model_len
        name = "max_completion_tokens" if body.get("max_completion_tokens") is not None else "max_tokens"
        max_tokens = positive_int(body, "max_completion_tokens", "max_tokens")
        wanted = max_tokens or 0
        if wanted > limit:
            raise bad_request(
                f"{name}={wanted} cannot be greater than max_model_len=max_total_tokens={limit}. Please request fewer output tokens. "
                f"(parameter={name}, value={wanted})",
                name,
            )
        max_input = limit - wanted
        if prompt_tokens > max_input:
            counted = max_input + 1
            raise bad_request(
                f"This model's maximum context length is {limit} tokens. However, you requested {wanted} output tokens and your prompt "
                f"contains at least {counted} input tokens, for a total of at least {counted + wanted} tokens. Please reduce the length of "
                f"the input prompt or the number of requested output tokens. (parameter=input_tokens, value={counted})",
                "input_tokens",
            )
        return limit - prompt_tokens if max_tokens is None else max_tokens

    def chat(self) -> None:
        api, body = self.server.api, self.read_body()
        self.check_request(body)
        messages = body.get("messages")
        if not isinstance(messages, list) or not all(isinstance(message, dict) for message in messages):
            raise bad_request("messages: Field required" if messages is None else "messages: Input should be a valid list", "messages")
        if api.chat_template is None:
            raise bad_request(
                "As of transformers v4.44, default chat template is no longer allowed, so you must provide a chat template "
                "if the tokenizer does not define one."
            )
        tool_choice = body.get("tool_choice", "auto" if body.get("tools") else "none")
        if tool_choice == "auto" and body.get("tools") and not api.auto_tools:
            raise bad_request('"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set')
        prompt = engine.chat_prompt(messages)
        prompt_tokens = engine.count_tokens(prompt)
        max_tokens = self.budget(body, prompt_tokens)
        kwargs = body.get("chat_template_kwargs") or {}
        thinks = bool(api.reasoning_parser) and kwargs.get("enable_thinking", True) is not False
        output = engine.generate(prompt, max_tokens, api.behaviour.reasoning_tokens if thinks else 0, self.answer_tokens(body, max_tokens))
        self.respond(body, "chat.completion", f"chatcmpl-{uuid.uuid4().hex}", prompt_tokens, output)

    def completions(self) -> None:
        body = self.read_body()
        self.check_request(body)
        prompt = body.get("prompt")
        if isinstance(prompt, list):
            prompt = " ".join(str(item) for item in prompt)
        if not isinstance(prompt, str):
            raise bad_request("prompt: Field required" if prompt is None else "prompt: Input should be a valid string", "prompt")
        prompt_tokens = engine.count_tokens(prompt)
        max_tokens = self.budget(body, prompt_tokens)
        output = engine.generate(prompt, max_tokens, 0, self.answer_tokens(body, max_tokens))
        self.respond(body, "text_completion", f"cmpl-{uuid.uuid4().hex}", prompt_tokens, output)

    # --- generation ----------------------------------------------------------------------------------------
    def answer_tokens(self, body: dict[str, Any], max_tokens: int) -> int:
        """The answer's natural length; with vLLM's ``ignore_eos: true`` there is no end of sequence: the request
        runs to ``max_tokens`` and ends with finish_reason ``length`` (``sampling_params.py``, ``ignore_eos``)."""
        if body.get("ignore_eos") is True:
            return max_tokens + 1
        return self.server.api.behaviour.answer_tokens

    def respond(self, body: dict[str, Any], kind: str, request_id: str, prompt_tokens: int, output: engine.Output) -> None:
        api = self.server.api
        if api.log_requests:
            log("INFO", "logger.py:39", f"Received request {request_id}: prompt tokens {prompt_tokens}, max tokens {output.tokens}.")
        started = time.monotonic()
        api.metrics.add(waiting=1)
        api.slots.acquire()
        api.metrics.add(waiting=-1, running=1, tokens=prompt_tokens)
        first: list[float] = []
        settled: list[str] = []

        def settle(finish: str) -> None:
            """Count the request as finished, once: before its last bytes go out, as vLLM's output processor records
            a finished request's stats before the API server sends its end (a client reading /metrics after its
            answer sees it counted), or when the request is aborted."""
            if settled:
                return
            settled.append(finish)
            api.metrics.add(running=-1, tokens=-prompt_tokens)
            api.slots.release()
            done = time.monotonic()
            api.metrics.finished(prompt_tokens, output.tokens if finish != "abort" else 0, finish, (first[0] if first else done) - started, done - started)

        try:
            if body.get("stream") is True:
                self.stream(body, kind, request_id, prompt_tokens, output, first, lambda: settle(output.finish_reason))
            else:
                self.pace(output.tokens, first)
                document = self.document(kind, request_id, prompt_tokens, output)
                settle(output.finish_reason)
                self.send_json(200, document)
        finally:
            settle("abort")

    def pace(self, tokens: int, first: list[float]) -> None:
        """Spend the time ``tokens`` take at tokens_per_second after first_token_seconds, noting when the first was out."""
        behaviour = self.server.api.behaviour
        step = 1.0 / behaviour.tokens_per_second
        time.sleep(behaviour.first_token_seconds + step)
        first.append(time.monotonic())
        if tokens > 1:
            time.sleep(step * (tokens - 1))

    def head(self, kind: str, request_id: str) -> dict[str, Any]:
        return {"id": request_id, "object": kind, "created": int(time.time()), "model": self.server.api.served_names[0]}

    @staticmethod
    def usage(prompt_tokens: int, completion_tokens: int) -> dict[str, Any]:
        return {
            "prompt_tokens": prompt_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
            "completion_tokens": completion_tokens,
            "prompt_tokens_details": None,
        }

    def document(self, kind: str, request_id: str, prompt_tokens: int, output: engine.Output) -> dict[str, Any]:
        choice: dict[str, Any]
        if kind == "chat.completion":
            message: dict[str, Any] = {
                "role": "assistant",
                "content": "".join(output.content) if output.content else None,
                "refusal": None,
                "annotations": None,
                "audio": None,
                "function_call": None,
                "tool_calls": [],
                "reasoning": "".join(output.reasoning) if output.reasoning else None,
            }
            choice = {"index": 0, "message": message, "logprobs": None, "finish_reason": output.finish_reason, "stop_reason": None, "token_ids": None}
        else:
            choice = {
                "index": 0,
                "text": "".join(output.content),
                "logprobs": None,
                "finish_reason": output.finish_reason,
                "stop_reason": None,
                "prompt_logprobs": None,
            }
        return {
            **self.head(kind, request_id),
            "choices": [choice],
            "service_tier": None,
            "system_fingerprint": None,
            "usage": self.usage(prompt_tokens, output.tokens),
            "prompt_logprobs": None,
            "kv_transfer_params": None,
        }

    def chunks(self, body: dict[str, Any], kind: str, request_id: str, prompt_tokens: int, output: engine.Output) -> Iterator[tuple[bool, dict[str, Any]]]:
        """(carries a token, chunk) of the stream's chunks as vLLM sends them (fields left unset are left out)."""
        options = body.get("stream_options") or {}
        continuous = bool(options.get("include_usage")) and bool(options.get("continuous_usage_stats"))
        chunk_kind = "chat.completion.chunk" if kind == "chat.completion" else kind
        pieces = output.pieces()
        if kind == "chat.completion":
            first = {
                **self.head(chunk_kind, request_id),
                "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "logprobs": None, "finish_reason": None}],
            }
            if continuous:
                first["usage"] = self.usage(prompt_tokens, 0)
            yield False, first
        for n, (name, text) in enumerate(pieces, 1):
            choice: dict[str, Any] = {"index": 0, "delta": {name: text}} if kind == "chat.completion" else {"index": 0, "text": text}
            choice["logprobs"] = None
            choice["finish_reason"] = output.finish_reason if n == len(pieces) else None
            if n == len(pieces):
                choice["stop_reason"] = None
            chunk = {**self.head(chunk_kind, request_id), "choices": [choice]}
            if continuous:
                chunk["usage"] = self.usage(prompt_tokens, n)
            yield True, chunk
        if options.get("include_usage"):
            yield False, {**self.head(chunk_kind, request_id), "choices": [], "usage": self.usage(prompt_tokens, output.tokens)}

    def stream(
        self, body: dict[str, Any], kind: str, request_id: str, prompt_tokens: int, output: engine.Output, first: list[float], before_done: Callable[[], None]
    ) -> None:
        """The chunks, one token each tokens_per_second apart, the first after first_token_seconds and one step;
        ``before_done`` runs before ``data: [DONE]`` goes out.

        vLLM sends a chat stream's ``role`` chunk in the engine step that makes the first token
        (``chat_completion/serving.py:526-620``), so it goes out with the first token, not before it."""
        behaviour = self.server.api.behaviour
        step = 1.0 / behaviour.tokens_per_second
        self.send_response(200)
        self.send_header("content-type", "text/event-stream; charset=utf-8")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        for n, (token, chunk) in enumerate(self.chunks(body, kind, request_id, prompt_tokens, output)):
            opens = n == 0 and kind == "chat.completion"  # the role chunk
            if not first and (token or opens):
                time.sleep(behaviour.first_token_seconds + step)
                first.append(time.monotonic())
            elif token and not (n == 1 and kind == "chat.completion"):  # the first token went out with the role chunk
                time.sleep(step)
            self.write_chunk(f"data: {json.dumps(chunk, separators=(',', ':'))}\n\n".encode())
        before_done()
        self.write_chunk(b"data: [DONE]\n\n")
        self.wfile.write(b"0\r\n\r\n")

    def write_chunk(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))


def serve_in_background(server: HttpServer) -> threading.Thread:
    server.server_activate()  # listen(): from now on connections are accepted
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.2}, name="http", daemon=True)
    thread.start()
    return thread
