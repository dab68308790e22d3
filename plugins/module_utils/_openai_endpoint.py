# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Wait until an OpenAI-compatible endpoint (vLLM) serves a model and answers a chat completion.

Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.

One attempt (:func:`check_once`) is three requests, each recorded as a step:

* ``GET /health``: informational. vLLM answers 200 with an empty body when healthy and 503 when its engine is
  dead; a server without it answers 404, which is fine. A connection failure here (refused, unreachable) ends the
  attempt, since the other requests go to the same place.
* ``GET /v1/models`` (with the API key): must answer 200 and list the model in ``data[].id``.
* with the smoke test, ``POST /v1/chat/completions`` (with the API key): must answer 200 with
  ``usage.completion_tokens`` > 0. A reasoning model may answer with ``message.content`` null and the text in
  ``message.reasoning`` (or the older ``message.reasoning_content``); that is a healthy answer. Without the smoke
  test, a ``/health`` answering 5xx keeps the endpoint not ready, since nothing else shows the engine works.

:func:`wait_ready` repeats attempts until one is ready or the time is up, sleeping ``interval`` between them but
never past the deadline, and limiting each request to the time left. The HTTP client (:data:`Opener`), the clock
and the sleep are injectable; :func:`ansible_opener` is the real one, on ``ansible.module_utils.urls``. It goes to the
endpoint directly, never through a proxy the environment names (``http_proxy`` and the like), unless asked: the
proxy would get the API key.

Nothing a server answers is shown with the API key in it (:func:`redact`): the key is masked as it is, JSON-escaped
(``\\/``, ``\\u002f``, escaped twice) or split by whitespace, before a body is cut to its excerpt, and a prefix of it
that ends an excerpt is masked too. The body of a 401 or 403 answer is never shown: it may echo the credentials.
"""

from __future__ import annotations

import errno
import functools
import http.client
import json
import re
import socket
import ssl
import time
import typing as t
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from ansible_collections.sparkops.inference.plugins.module_utils._run_command import Runner

try:
    from ansible.module_utils.urls import ConnectionError as UrlsConnectionError
    from ansible.module_utils.urls import Request, make_context

    HAS_ANSIBLE_URLS = True
except ImportError:  # on a node, the vLLM liveness probe runs these module utils without Ansible: stdlib_opener
    HAS_ANSIBLE_URLS = False

    class UrlsConnectionError(Exception):  # type: ignore[no-redef]
        """Stands in for ansible.module_utils.urls.ConnectionError, which nothing raises without Ansible."""


DEFAULT_PROMPT = "Say hello."
DEFAULT_MAX_TOKENS = 32
DEFAULT_REQUEST_TIMEOUT = 30.0
USER_AGENT = "sparkops.inference.openai_endpoint"
BODY_EXCERPT = 300
MAX_LISTED_MODELS = 20
REDACTED = "********"
# The shortest start of the API key that is masked where it ends an excerpt (a key cut there, or by the server).
REDACTED_PREFIX = 8
# How far past an excerpt's end the key is looked for, per character of the key: any form that :func:`redact` masks
# (escaped twice, a surrogate pair, whitespace between every character) is shorter.
REDACT_SCAN_PER_CHAR = 64

# The machine words of RV(state).
READY = "ready"
REFUSED = "refused"
UNREACHABLE = "unreachable"
TIMEOUT = "timeout"
LOADING = "loading"
HTTP_ERROR = "http_error"
BAD_RESPONSE = "bad_response"
UNAUTHORIZED = "unauthorized"
MODEL_MISSING = "model_missing"
COMPLETION_FAILED = "completion_failed"
NO_TOKENS = "no_tokens"
STATES = (READY, REFUSED, UNREACHABLE, TIMEOUT, LOADING, HTTP_ERROR, BAD_RESPONSE, UNAUTHORIZED, MODEL_MISSING, COMPLETION_FAILED, NO_TOKENS)

# How a request can fail without an HTTP answer (HttpResponse.failure).
FAIL_REFUSED = "refused"
FAIL_UNREACHABLE = "unreachable"
FAIL_TIMEOUT = "timeout"

STEPS = ("health", "models", "completion")
NOT_TRIED = "not tried"


class EndpointError(ValueError):
    """The arguments cannot describe an endpoint (a bad URL); the message says why."""


def format_seconds(value: float) -> str:
    """``900`` for 900.0, ``0.5`` for 0.5, ``2.3`` for 2.345."""
    rounded = round(float(value), 1)
    return str(int(rounded)) if rounded == int(rounded) else str(rounded)


def normalise_url(url: str) -> str:
    """The base URL of the server: surrounding spaces, trailing slashes and a trailing ``/v1`` removed.

    ``http://h:8000/``, ``http://h:8000/v1`` and ``http://h:8000/v1/`` all give ``http://h:8000``.
    Raises :class:`EndpointError` unless it is an ``http`` or ``https`` URL with a host.
    """
    base = url.strip().rstrip("/")
    if base.endswith("/v1"):
        base = base[: -len("/v1")].rstrip("/")
    try:
        parts = urlsplit(base)
        port_ok = parts.port is None or parts.port > 0  # .port raises ValueError for a port that is not a number
    except ValueError as exc:
        raise EndpointError(f"url {url!r} is not a valid URL: {exc}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname or not port_ok:
        raise EndpointError(f"url {url!r} is not an http:// or https:// URL with a host, such as 'http://192.168.200.11:8000'")
    if parts.query or parts.fragment:
        raise EndpointError(f"url {url!r} must not have a query or a fragment")
    return base


@dataclass(frozen=True)
class HttpRequest:
    method: str
    url: str
    headers: t.Mapping[str, str]
    body: bytes | None
    timeout: float


@dataclass(frozen=True)
class HttpResponse:
    """What a request got: an HTTP status and body, or, with ``status`` None, a ``failure`` and its ``detail``."""

    status: int | None = None
    body: bytes = b""
    failure: str | None = None
    detail: str = ""


Opener = t.Callable[[HttpRequest], HttpResponse]


def _reason_text(reason: object) -> str:
    if isinstance(reason, OSError) and reason.strerror:
        return str(reason.strerror)
    return str(reason) or type(reason).__name__


def describe_failure(exc: BaseException, timeout: float) -> HttpResponse:
    """Turn an exception of a request without an HTTP answer into an :class:`HttpResponse` with a failure."""
    reason: object = exc.reason if isinstance(exc, urllib.error.URLError) else exc
    timed_out = f"timed out after {format_seconds(timeout)} s"
    # socket.timeout is TimeoutError only from Python 3.10 on; modules also run on older Pythons.
    if isinstance(reason, (socket.timeout, TimeoutError)):  # noqa: UP041
        return HttpResponse(failure=FAIL_TIMEOUT, detail=timed_out)
    if isinstance(reason, ConnectionRefusedError) or (isinstance(reason, OSError) and reason.errno == errno.ECONNREFUSED):
        return HttpResponse(failure=FAIL_REFUSED, detail="connection refused")
    if isinstance(reason, socket.gaierror):
        return HttpResponse(failure=FAIL_UNREACHABLE, detail=f"cannot resolve the host name: {_reason_text(reason)}")
    if isinstance(reason, http.client.RemoteDisconnected):
        return HttpResponse(failure=FAIL_UNREACHABLE, detail="the server closed the connection without answering")
    if isinstance(reason, ssl.SSLError):
        return HttpResponse(failure=FAIL_UNREACHABLE, detail=f"TLS error: {_reason_text(reason)}"[:BODY_EXCERPT])
    if isinstance(reason, str) and "timed out" in reason:
        return HttpResponse(failure=FAIL_TIMEOUT, detail=timed_out)
    if isinstance(exc, UrlsConnectionError):
        return HttpResponse(failure=FAIL_UNREACHABLE, detail=str(exc)[:BODY_EXCERPT])
    return HttpResponse(failure=FAIL_UNREACHABLE, detail=_reason_text(reason)[:BODY_EXCERPT])


def error_response(exc: urllib.error.HTTPError) -> HttpResponse:
    """An HTTP error status as an :class:`HttpResponse`, with the body when it can be read; the error is closed."""
    try:
        body = exc.read() or b""
    except Exception:  # the body is only for the message; the status is what counts
        body = b""
    finally:
        exc.close()
    return HttpResponse(status=int(exc.code), body=body)


def ansible_opener(validate_certs: bool = True, use_proxy: bool = False) -> Opener:
    """The real HTTP client: ``ansible.module_utils.urls.Request``, every failure turned into an :class:`HttpResponse`.

    Without ``use_proxy`` it ignores the proxies of the environment (``http_proxy``, ``https_proxy``, ``all_proxy``):
    such a proxy would get the ``Authorization`` header, and over ``http://`` see it in clear text.
    ``~/.netrc`` is not read (it would replace the bearer token) and the ``Authorization`` header is not sent on to
    a redirect's target. The TLS context is made once: ``open_url`` would make one, loading the system's CA
    certificates (tens of milliseconds), for every request, even a plain ``http://`` one.
    """
    client = Request(
        validate_certs=validate_certs,
        use_proxy=use_proxy,
        http_agent=USER_AGENT,
        use_netrc=False,
        unredirected_headers=["Authorization"],
        context=make_context(validate_certs=validate_certs),
    )

    def opener(request: HttpRequest) -> HttpResponse:
        try:
            response = client.open(request.method, request.url, data=request.body, headers=dict(request.headers), timeout=request.timeout)
            try:
                return HttpResponse(status=int(response.getcode()), body=response.read())
            finally:
                response.close()
        except urllib.error.HTTPError as exc:
            return error_response(exc)
        except (urllib.error.URLError, UrlsConnectionError, http.client.HTTPException, OSError) as exc:
            return describe_failure(exc, request.timeout)

    return opener


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """A redirect is an answer, not followed: the ``Authorization`` header never goes to another place."""

    def redirect_request(self, req: t.Any, fp: t.Any, code: t.Any, msg: t.Any, headers: t.Any, newurl: t.Any) -> None:  # noqa: PLR0913
        return None


def stdlib_opener() -> Opener:
    """An HTTP client on the standard library alone, for plain ``http://`` to this host (the vLLM liveness probe on a
    node, where Ansible is not installed): no proxy of the environment (``ProxyHandler({})``), no ``~/.netrc``, no
    redirect followed; every failure turned into an :class:`HttpResponse`, as :func:`ansible_opener` does."""
    client = urllib.request.build_opener(urllib.request.ProxyHandler({}), _NoRedirect())

    def opener(request: HttpRequest) -> HttpResponse:
        prepared = urllib.request.Request(request.url, data=request.body, headers=dict(request.headers), method=request.method)
        prepared.add_header("User-Agent", USER_AGENT)
        try:
            with client.open(prepared, timeout=request.timeout) as response:
                return HttpResponse(status=int(response.status), body=response.read())
        except urllib.error.HTTPError as exc:
            return error_response(exc)
        except (urllib.error.URLError, http.client.HTTPException, OSError) as exc:
            return describe_failure(exc, request.timeout)

    return opener


# Between two characters of the key: whitespace, or whitespace as a JSON string writes it (``\n``, ``\u0020``).
_KEY_GAP = r"(?:\s|\\{1,4}(?:[nrt]|u00(?:20|09|0[aAdD]))){0,4}"
# The end of an excerpt cut inside an escape: a backslash or a started ``\uXXXX``.
_CUT_ESCAPE = r"(?:\\{1,8}(?:u[0-9a-fA-F]{0,3})?)?"
_JSON_SHORT_ESCAPES = {"\b": "b", "\f": "f", "\n": "n", "\r": "r", "\t": "t"}


def _hex_pattern(unit: int) -> str:
    return "".join(f"[{digit}{digit.upper()}]" if digit.isalpha() else digit for digit in f"{unit:04x}")


def _char_pattern(char: str) -> str:
    """A character of the key as a server may write it: itself, JSON-escaped (once or more), or as ``\\uXXXX``."""
    forms = [re.escape(char) if char not in '"/' else r"\\{0,4}" + re.escape(char)]
    if char in _JSON_SHORT_ESCAPES:
        forms.append(r"\\{1,4}" + _JSON_SHORT_ESCAPES[char])
    encoded = char.encode("utf-16-be")
    units = [int.from_bytes(encoded[i : i + 2], "big") for i in range(0, len(encoded), 2)]
    forms.append("".join(r"\\{1,4}u" + _hex_pattern(unit) for unit in units))
    return "(?:" + "|".join(forms) + ")"


def _key_units(secret: str) -> list[tuple[str, int]]:
    """The key as patterns of its characters, each with how many characters it stands for (a run of ``\\`` is one)."""
    units: list[tuple[str, int]] = []
    for run in re.finditer(r"\\+|[^\\]", secret):
        text = run.group()
        units.append((rf"\\{{{len(text)},{8 * len(text)}}}" if text[0] == "\\" else _char_pattern(text), len(text)))
    return units


@functools.lru_cache(maxsize=8)
def _key_patterns(secret: str) -> tuple[re.Pattern[str], re.Pattern[str] | None]:
    """The whole key in any of its written forms; a start of it (at least REDACTED_PREFIX characters) ending a text."""
    units = _key_units(secret)
    whole = re.compile(_KEY_GAP.join(pattern for pattern, _count in units))
    covered = [sum(count for _pattern, count in units[:size]) for size in range(len(units) + 1)]
    needed = next((size for size, chars in enumerate(covered) if chars >= REDACTED_PREFIX), None)
    if needed is None:
        return whole, None  # a key too short to have such a start
    rest = ""
    for pattern, _count in reversed(units[needed:]):
        rest = f"(?:{_KEY_GAP}{pattern}{rest})?"
    head = _KEY_GAP.join(pattern for pattern, _count in units[:needed])
    return whole, re.compile(f"{head}{rest}{_KEY_GAP}{_CUT_ESCAPE}\\Z")


def redact(text: str, secret: str | None) -> str:
    """``text`` with ``secret`` masked as ``********``: as it is, JSON-escaped (``\\/``, ``\\"``, ``\\uXXXX`` in either
    case, escaped again), or with whitespace (or ``\\n``) between its characters."""
    if not secret:
        return text
    return _key_patterns(secret)[0].sub(REDACTED, text)


def redact_cut(text: str, secret: str | None) -> str:
    """``text`` with a start of ``secret`` (at least :data:`REDACTED_PREFIX` characters, in any form :func:`redact`
    masks) that ends it masked: the key was cut there."""
    prefix = _key_patterns(secret)[1] if secret else None
    return prefix.sub(REDACTED, text, count=1) if prefix is not None else text


def redact_value(value: t.Any, secret: str | None) -> t.Any:
    """``value`` with :func:`redact` applied to every string in it, in lists and dicts too."""
    if isinstance(value, str):
        return redact(value, secret)
    if isinstance(value, list):
        return [redact_value(item, secret) for item in value]
    if isinstance(value, dict):
        return {redact_value(key, secret): redact_value(item, secret) for key, item in value.items()}
    return value


@dataclass
class EndpointConfig:
    """What to ask and what counts as ready. ``url`` is a base URL as :func:`normalise_url` returns it."""

    url: str
    model: str
    api_key: str | None = None
    smoke_test: bool = True
    prompt: str = DEFAULT_PROMPT
    max_tokens: int = DEFAULT_MAX_TOKENS
    chat_template_kwargs: dict[str, t.Any] | None = None
    request_timeout: float = DEFAULT_REQUEST_TIMEOUT

    def redact(self, text: str) -> str:
        """``text`` with the API key, should a server echo it (in any form :func:`redact` knows), replaced by ``********``."""
        return redact(text, self.api_key)

    def headers(self, *, json_body: bool = False) -> dict[str, str]:
        headers = {"Accept": "application/json"}
        if json_body:
            headers["Content-Type"] = "application/json"
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        return headers

    def completion_request(self) -> dict[str, t.Any]:
        payload: dict[str, t.Any] = {
            "model": self.model,
            "messages": [{"role": "user", "content": self.prompt}],
            "max_tokens": self.max_tokens,
            "stream": False,
        }
        if self.chat_template_kwargs:
            payload["chat_template_kwargs"] = dict(self.chat_template_kwargs)
        return payload


@dataclass
class Probe:
    """The outcome of one attempt. ``steps`` holds each request's outcome in words, ``state`` the attempt's verdict.

    ``cut_short`` is true when the deadline kept a request from being made or made it time out sooner than
    ``request_timeout``: such an attempt says little, and :func:`wait_ready` reports the previous one instead.
    """

    state: str
    steps: dict[str, str] = field(default_factory=lambda: dict.fromkeys(STEPS, NOT_TRIED))
    health_status: int | None = None
    models: list[str] = field(default_factory=list)
    content: str | None = None
    reasoning: str | None = None
    finish_reason: str | None = None
    usage: dict[str, t.Any] = field(default_factory=dict)
    hint: str | None = None
    cut_short: bool = False

    @property
    def ready(self) -> bool:
        return self.state == READY

    def stop(self, step: str, detail: str, state: str, hint: str | None = None) -> Probe:
        """End the attempt at ``step``: record its outcome, the verdict and (when given) the hint; this probe."""
        self.steps[step] = detail
        self.state = state
        if hint is not None:
            self.hint = hint
        return self


def excerpt(body: bytes, limit: int = BODY_EXCERPT, secret: str | None = None) -> str:
    """The start of a body as one line: whitespace runs made single spaces, at most ``limit`` characters.

    ``secret`` is masked before the text is cut (a key the cut falls in is masked whole), then a start of it that
    ends the excerpt (the server cut it) is masked too.
    """
    text = " ".join(body.decode("utf-8", errors="replace").split())
    if not secret:
        return text[:limit]
    return redact_cut(redact(text[: limit + REDACT_SCAN_PER_CHAR * len(secret)], secret)[:limit], secret)


def http_text(response: HttpResponse, config: EndpointConfig) -> str:
    """``HTTP 503`` or ``HTTP 500: <the start of the body>``, the API key redacted; a 401 or 403 without its body."""
    if response.status in (401, 403):
        return f"HTTP {response.status} (body dropped: it may echo credentials)"
    text = excerpt(response.body, secret=config.api_key)
    return config.redact(f"HTTP {response.status}: {text}" if text else f"HTTP {response.status}")


def _json(body: bytes) -> t.Any:
    try:
        return json.loads(body.decode("utf-8", errors="replace"))
    except ValueError:
        return None


def _list_names(names: t.Sequence[str]) -> str:
    if not names:
        return "no model"
    listed = ", ".join(names[:MAX_LISTED_MODELS])
    more = f" and {len(names) - MAX_LISTED_MODELS} more" if len(names) > MAX_LISTED_MODELS else ""
    return listed + more


def _host_port(url: str) -> str:
    parts = urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return f"{parts.hostname}:{port}"


def _unauthorized_hint(config: EndpointConfig, status: int | None, path: str) -> str:
    if config.api_key:
        return f"the API key was refused (HTTP {status} from {path}); check api_key against the server's --api-key"
    return f"the API key is missing: {path} answers HTTP {status} and no api_key was given"


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def check_once(
    config: EndpointConfig,
    opener: Opener,
    deadline: float | None = None,
    clock: t.Callable[[], float] = time.monotonic,
) -> Probe:
    """Make one attempt: ``/health``, ``/v1/models``, then (with the smoke test) a chat completion.

    Each request waits at most ``config.request_timeout`` seconds, and no longer than until ``deadline`` (a time
    of ``clock``) when one is given; a request with no time left is not made.
    """
    probe = Probe(state=READY)

    def send(method: str, path: str, headers: dict[str, str], body: bytes | None = None) -> HttpResponse | None:
        budget = config.request_timeout
        if deadline is not None:
            budget = min(budget, deadline - clock())
            if budget <= 0:
                probe.cut_short = True
                return None
        response = opener(HttpRequest(method, config.url + path, headers, body, budget))
        if response.failure == FAIL_TIMEOUT and budget < config.request_timeout:
            probe.cut_short = True
        return response

    def no_time(step: str) -> Probe:
        return probe.stop(step, f"{NOT_TRIED} (the time ran out)", TIMEOUT)

    # GET /health: informational.
    health = send("GET", "/health", {"Accept": "application/json"})
    if health is None:
        return no_time("health")
    probe.health_status = health.status
    if health.status is None:
        probe.steps["health"] = health.detail
        if health.failure == FAIL_REFUSED:
            hint = f"nothing listens on {_host_port(config.url)} (vLLM opens its port only once the model is loaded)"
            return probe.stop("health", health.detail, REFUSED, hint)
        if health.failure == FAIL_UNREACHABLE:
            return probe.stop("health", health.detail, UNREACHABLE)
    elif 200 <= health.status < 300:
        probe.steps["health"] = f"HTTP {health.status}"
    elif health.status == 404:
        probe.steps["health"] = "HTTP 404 (no /health; ignored)"
    else:
        probe.steps["health"] = http_text(health, config)

    # GET /v1/models: must list the model.
    models = send("GET", "/v1/models", config.headers())
    if models is None:
        return no_time("models")
    if models.status is None:
        return probe.stop("models", models.detail, {FAIL_REFUSED: REFUSED, FAIL_TIMEOUT: TIMEOUT}.get(models.failure or "", UNREACHABLE))
    if models.status in (401, 403):
        return probe.stop("models", http_text(models, config), UNAUTHORIZED, _unauthorized_hint(config, models.status, "/v1/models"))
    if models.status == 503:
        return probe.stop("models", http_text(models, config), LOADING, "/v1/models answers HTTP 503: the server is still loading")
    if not 200 <= models.status < 300:
        return probe.stop("models", http_text(models, config), HTTP_ERROR)
    data = _json(models.body)
    entries = data.get("data") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        detail = config.redact(f"HTTP {models.status} but not a model list: {excerpt(models.body, secret=config.api_key) or '(empty)'}")
        return probe.stop("models", detail, BAD_RESPONSE, f"{config.url} does not look like an OpenAI-compatible endpoint")
    probe.models = [str(entry["id"]) for entry in entries if isinstance(entry, dict) and isinstance(entry.get("id"), str)]
    if config.model not in probe.models:
        served = _list_names(probe.models)
        return probe.stop(
            "models", f"lists {served}, not {config.model}", MODEL_MISSING, f"the server does not serve the model {config.model!r}; it serves: {served}"
        )
    probe.steps["models"] = f"lists {_list_names(probe.models)}"

    if not config.smoke_test:
        probe.steps["completion"] = f"{NOT_TRIED} (smoke_test is false)"
        if health.status is not None and health.status >= 500:
            probe.state = LOADING
            probe.hint = f"/health answers HTTP {health.status} (still loading, or on vLLM a dead engine)"
        return probe

    # POST /v1/chat/completions: must generate tokens.
    body = json.dumps(config.completion_request()).encode("utf-8")
    completion = send("POST", "/v1/chat/completions", config.headers(json_body=True), body)
    if completion is None:
        return no_time("completion")
    health_answers = health.status is not None and 200 <= health.status < 300
    failing = "/health answers but completions fail: the engine looks wedged" if health_answers else "/v1/models lists the model but completions fail"
    if completion.status is None:
        if completion.failure == FAIL_TIMEOUT:
            return probe.stop("completion", completion.detail, COMPLETION_FAILED, failing)
        return probe.stop("completion", completion.detail, REFUSED if completion.failure == FAIL_REFUSED else UNREACHABLE)
    if completion.status in (401, 403):
        return probe.stop("completion", http_text(completion, config), UNAUTHORIZED, _unauthorized_hint(config, completion.status, "/v1/chat/completions"))
    if not 200 <= completion.status < 300:
        return probe.stop("completion", http_text(completion, config), COMPLETION_FAILED, failing)
    answer = _json(completion.body)
    choices = answer.get("choices") if isinstance(answer, dict) else None
    choice = choices[0] if isinstance(choices, list) and choices else None
    message = choice.get("message") if isinstance(choice, dict) else None
    if not isinstance(answer, dict) or not isinstance(choice, dict) or not isinstance(message, dict):
        detail = config.redact(f"HTTP {completion.status} but no choice with a message: {excerpt(completion.body, secret=config.api_key) or '(empty)'}")
        return probe.stop("completion", detail, COMPLETION_FAILED, failing)
    content = message.get("content")
    reasoning = message.get("reasoning") or message.get("reasoning_content")
    finish_reason = choice.get("finish_reason")
    usage = answer.get("usage")
    probe.content = content if isinstance(content, str) else None
    probe.reasoning = reasoning if isinstance(reasoning, str) else None
    probe.finish_reason = finish_reason if isinstance(finish_reason, str) else None
    probe.usage = dict(usage) if isinstance(usage, dict) else {}
    tokens = probe.usage.get("completion_tokens")
    if not _is_int(tokens) or t.cast(int, tokens) <= 0:
        detail = f"HTTP {completion.status} but no completion tokens (usage.completion_tokens: {json.dumps(tokens)})"
        return probe.stop("completion", detail, NO_TOKENS, "the completion answered but generated no tokens")
    probe.steps["completion"] = f"HTTP {completion.status}: {tokens} tokens, finish_reason {probe.finish_reason}"
    return probe


@dataclass
class WaitOutcome:
    """The outcome of :func:`wait_ready`: the reported attempt, how many were made and how long it took."""

    config: EndpointConfig
    probe: Probe
    attempts: int
    elapsed: float
    timeout: float
    # Why the wait ended before ``timeout`` with the endpoint not ready ("" when it did not): the server's service
    # gave up (see :func:`wait_ready`'s ``gave_up``).
    gave_up: str = ""

    @property
    def ready(self) -> bool:
        return self.probe.ready

    def message(self) -> str:
        """``<url> not ready after <N> s (<n> attempts): health: ...; models: ...; completion: ...[. <hint>]``, or the success."""
        attempts = f"{self.attempts} attempt{'s' if self.attempts != 1 else ''}"
        if self.ready:
            return f"{self.config.url} serves {self.config.model} (ready after {format_seconds(self.elapsed)} s, {attempts})"
        steps = "; ".join(f"{step}: {self.probe.steps[step]}" for step in STEPS)
        waited = self.elapsed if self.gave_up else self.timeout
        message = f"{self.config.url} not ready after {format_seconds(waited)} s ({attempts}): {steps}"
        if self.gave_up:
            message += f". {self.gave_up}"
        elif self.probe.hint:
            message += f". {self.probe.hint}"
        return self.config.redact(message)

    def as_dict(self) -> dict[str, t.Any]:
        """The module's return values; every text a server gave, the API key redacted."""
        probe = self.probe
        secret = self.config.api_key
        return {
            "ready": probe.ready,
            "state": probe.state,
            "url": self.config.url,
            "model": self.config.model,
            "elapsed": round(self.elapsed, 3),
            "attempts": self.attempts,
            "health_status": probe.health_status,
            "models": redact_value(list(probe.models), secret),
            "steps": {step: self.config.redact(probe.steps[step]) for step in STEPS},
            "content": redact_value(probe.content, secret),
            "reasoning": redact_value(probe.reasoning, secret),
            "finish_reason": redact_value(probe.finish_reason, secret),
            "usage": redact_value(dict(probe.usage), secret),
            "gave_up": bool(self.gave_up),
        }


UNIT_PROPERTIES = "ActiveState,SubState,Result,NRestarts"  # what a unit's state says, read after an attempt not ready


@dataclass
class UnitWatch:
    """The server's systemd ``unit``, read after each attempt that is not ready (:func:`wait_ready`'s ``gave_up``):
    calling it reads :data:`UNIT_PROPERTIES` (``run`` runs an argv, returning (rc, stdout, stderr)) and answers why the
    server will not answer ("" while it may): its ``ActiveState`` is ``failed`` (systemd gave up: its start limit hit,
    or it is not restarted). A unit systemd does not know, or no systemd, counts as one that may still answer."""

    unit: str
    run: Runner
    state: str = ""  # the last read, one ``Name=value`` a line ("" before one, or when systemctl failed)

    def __call__(self) -> str:
        rc, out, _err = self.run(["systemctl", "show", "--property", UNIT_PROPERTIES, self.unit])
        self.state = out.strip() if rc == 0 else ""
        if "ActiveState=failed" in self.state.splitlines():
            return f"{self.unit} failed (ActiveState=failed): systemd gave up starting it, so it will not answer"
        return ""


def wait_ready(
    config: EndpointConfig,
    timeout: float,
    interval: float,
    opener: Opener,
    clock: t.Callable[[], float] | None = None,
    sleep: t.Callable[[float], t.Any] | None = None,
    gave_up: t.Callable[[], str] | None = None,
) -> WaitOutcome:
    """Make attempts until one is ready or ``timeout`` seconds have passed; the first one is made at once.

    Between attempts it sleeps ``interval`` seconds, never past the deadline, and makes no attempt once the deadline
    is reached; each request waits no longer than the time left. ``timeout`` 0 makes one attempt, each request
    waiting up to ``config.request_timeout``. The outcome reports the last attempt, unless the deadline cut it short
    (see :class:`Probe`) and an earlier one exists. ``clock`` and ``sleep`` (default ``time.monotonic`` and
    ``time.sleep``) are injectable. ``gave_up``, when given, is asked after each attempt that is not ready: a
    non-empty answer (why: the server's service gave up, so it will not answer) ends the wait at once.
    """
    clock = clock or time.monotonic
    sleep = sleep or time.sleep
    start = clock()
    deadline = start + timeout if timeout > 0 else None
    attempts = 0
    reported: Probe | None = None
    why = ""
    while True:
        attempts += 1
        probe = check_once(config, opener, deadline, clock)
        if reported is None or probe.ready or not probe.cut_short:
            reported = probe
        if probe.ready:
            break
        why = gave_up() if gave_up is not None else ""
        if why or deadline is None:
            break
        remaining = deadline - clock()
        if remaining <= 0:
            break
        sleep(min(max(0.0, interval), remaining))
        if clock() >= deadline:
            break
    return WaitOutcome(config=config, probe=reported, attempts=attempts, elapsed=clock() - start, timeout=timeout, gave_up=why)
