# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A benchmark sweep's figures as llama-benchy names them: the profile (pp, tg, depth) and pp/tg tokens per second.

Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.

The DGX Spark community compares its figures with llama-benchy (PyPI ``llama-benchy`` 0.4.0, read in the wheel
``llama_benchy-0.4.0-py3-none-any.whl``). Its definitions, for a test of ``--pp P --tg G --depth 0`` at one
``--concurrency`` level:

* The prompt: tokens of a book (``--book-url``, tokenized with ``--tokenizer``, ``corpus.py`` lines 71-103; a
  local folder's ``tokenizer.json``, lines 11-23; fetched with ``requests``, so an ``http(s)`` URL, and cached by
  the URL's MD5 in ``~/.cache/llama-benchy``, lines 74-89) decoded from a random start (``prompts.py`` lines
  13-48), ``P`` less the chat template's tokens as its warm-up measured them (``--adapt-prompt``, on by default:
  ``runner.py`` lines 111-113, ``client.py`` lines 232-251), so that the server counts about ``P`` prompt tokens,
  template included; ``--no-cache`` appends a UUID (``prompts.py`` lines 19-21, 45-46). The prompt tokens of a
  request are the server's ``usage.prompt_tokens`` when within 20 % of that, else the target (``results.py`` lines
  282-287).
* One request's times (``client.py`` lines 286-407): ``ttfr`` is from sending it to the first SSE chunk with
  ``choices`` (vLLM's role chunk, in the engine step of the first token: what ``vllm bench serve`` and
  openai_benchmark call TTFT); each chunk with a non-empty ``content``, ``reasoning_content`` or ``reasoning`` delta is
  a token timestamp (one a token, from the chunk's ``token_ids``, which it asks for with ``return_token_ids``:
  ``client.py`` lines 111-132).
* ``pp`` (prompt processing, t/s): at concurrency 1, the mean over the runs of prompt tokens / ``est_ppt``, where
  ``est_ppt`` = ``ttfr`` - the latency (the mean of three ``GET /v1/models``, ``--latency-mode api``: ``client.py``
  lines 155-189; ``results.py`` lines 298-315 and 191). At concurrency c > 1 a run is c requests sent at once, and
  ``pp`` is the mean over the runs of their prompt tokens / (the last first token - the first start)
  (``results.py`` lines 328-337).
* ``tg`` (token generation, t/s): at concurrency 1, the mean over the runs of (tokens - 1) / (last token's time -
  first token's time) (``results.py`` lines 317-322 and 194); at c > 1, the decode tokens of the run's requests /
  (the last token - the first first token) (``results.py`` lines 339-353).
* Each test runs ``--runs`` times (default 3) after one warm-up run (``runner.py`` lines 103-106); its name is
  ``pp<P>`` and ``tg<G>``, with `` @ d<depth>`` when the depth is not 0 (``results.py`` lines 402-423). Its
  defaults are ``--pp 2048 --tg 32 --depth 0 --concurrency 1 --runs 3`` (``config.py`` lines 240-270, 320-326).

From one of openai_benchmark's levels (the ``vllm bench serve`` figures, :mod:`._benchmark`), at the same lengths:

* P is the server's count, ``total_input_tokens / completed`` (template included, as llama-benchy's target).
* ``pp`` = P / the median TTFT, ``tg`` = 1 / the median TPOT: the same times as llama-benchy's ``ttfr`` and its
  token gaps, one request at a time. The median request's rate, as P / t is monotonic: it is the median of
  llama-benchy's per-run values, and on a steady engine their mean (its headline); a few slow requests (a loaded
  host) move a mean of rates and a rate of means apart, not the medians. openai_benchmark opens a connection a
  request and subtracts nothing: llama-benchy's latency (a round trip, about a millisecond on a LAN) is inside our
  TTFT.
* At concurrency c > 1, an estimate: c x the per-request rates (c streams each at the level's pace); llama-benchy's
  bursts of c requests started together are not the steady c in flight of a level. Only concurrency 1 is the same
  experiment; the report says so.
"""

from __future__ import annotations

import math
import typing as t
from dataclasses import dataclass

LLAMA_BENCHY = "llama-benchy 0.4.0"
MISSING = "-"


@dataclass(frozen=True)
class Profile:
    """The lengths of a benchmark as llama-benchy names them: ``pp`` prompt tokens (as the server counts them, the
    chat template included), ``tg`` generated tokens, ``depth`` earlier conversation tokens (0 here)."""

    pp: int
    tg: int
    depth: int = 0
    concurrency: tuple[int, ...] = (1,)

    @property
    def name(self) -> str:
        """``pp256 tg128``, with `` @ d<depth>`` when the depth is not 0, as llama-benchy names its tests."""
        suffix = f" @ d{self.depth}" if self.depth else ""
        return f"pp{self.pp}{suffix} tg{self.tg}{suffix}"

    @property
    def command(self) -> str:
        """The llama-benchy options that measure this profile."""
        levels = " ".join(str(level) for level in self.concurrency)
        return f"llama-benchy --pp {self.pp} --tg {self.tg} --depth {self.depth} --concurrency {levels}"


@dataclass(frozen=True)
class Figures:
    """llama-benchy's pp and tg figures (tokens per second) of one level; None where the level cannot give them.
    ``exact``: whether llama-benchy's experiment is the same (concurrency 1) rather than estimated from it."""

    concurrency: int
    pp: float | None
    tg: float | None
    exact: bool

    def as_dict(self) -> dict[str, t.Any]:
        return {
            "concurrency": self.concurrency,
            "pp_tps": None if self.pp is None else round(self.pp, 2),
            "tg_tps": None if self.tg is None else round(self.tg, 2),
            "exact": self.exact,
        }


def _number(value: object) -> float | None:
    """``value`` as a finite number above 0, else None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    number = float(value)
    return number if math.isfinite(number) and number > 0 else None


def prompt_of(level: t.Mapping[str, t.Any]) -> float | None:
    """The mean prompt of a level's completed requests in tokens as the server counted them; None without any."""
    completed = _number(level.get("completed"))
    total = _number(level.get("total_input_tokens"))
    return None if completed is None or total is None else total / completed


def figures(level: t.Mapping[str, t.Any]) -> Figures:
    """llama-benchy's pp and tg of one of openai_benchmark's levels (see the module's doc for the definitions)."""
    concurrency = int(level.get("max_concurrency") or 1)
    prompt = prompt_of(level)
    ttft_ms = _number(level.get("median_ttft_ms"))
    tpot_ms = _number(level.get("median_tpot_ms"))
    pp = None if prompt is None or ttft_ms is None else concurrency * prompt * 1000.0 / ttft_ms
    tg = None if tpot_ms is None else concurrency * 1000.0 / tpot_ms
    return Figures(concurrency=concurrency, pp=pp, tg=tg, exact=concurrency == 1)


def profile(header: t.Mapping[str, t.Any], levels: t.Sequence[t.Mapping[str, t.Any]]) -> Profile | None:
    """The profile of a sweep: pp the server's mean prompt over every level (llama-benchy's target counts the
    template too), tg the output tokens asked for (``output_tokens``); None when no request completed or the output
    length is unknown."""
    completed = sum(int(level.get("completed") or 0) for level in levels)
    total = sum(int(level.get("total_input_tokens") or 0) for level in levels)
    output = header.get("output_tokens")
    if not completed or not total or isinstance(output, bool) or not isinstance(output, int) or output < 1:
        return None
    concurrency = tuple(int(level["max_concurrency"]) for level in levels if "max_concurrency" in level) or (1,)
    return Profile(pp=round(total / completed), tg=output, depth=0, concurrency=concurrency)


def profile_document(header: t.Mapping[str, t.Any], levels: t.Sequence[t.Mapping[str, t.Any]]) -> dict[str, t.Any] | None:
    """The profile and each level's figures for the report's JSON document; None without a profile."""
    named = profile(header, levels)
    if named is None:
        return None
    return {
        "tool": LLAMA_BENCHY,
        "name": named.name,
        "command": named.command,
        "pp": named.pp,
        "tg": named.tg,
        "depth": named.depth,
        "ignore_eos": bool(header.get("ignore_eos")),
        "levels": [figures(level).as_dict() for level in levels],
    }


def _tps(value: float | None) -> str:
    return MISSING if value is None else f"{value:.1f}"


def markdown_lines(header: t.Mapping[str, t.Any], levels: t.Sequence[t.Mapping[str, t.Any]]) -> list[str]:
    """The report's section "Compared with llama-benchy": the profile, as llama-benchy would name and run it, and
    each level's pp and tg in tokens per second; empty without a profile. Starts with an empty line."""
    named = profile(header, levels)
    if named is None:
        return []
    exact = "--exact-tg " if header.get("ignore_eos") else ""
    lines = [
        "",
        "## Compared with llama-benchy",
        "",
        f"Profile: {named.name}, as `{named.command} {exact}--no-cache` would name it ({LLAMA_BENCHY}, the tool of the",
        "DGX Spark community's figures); pp counts the prompt as the server does, chat template included.",
        "",
        "| Concurrency | pp t/s | tg t/s | |",
        "|---:|---:|---:|---|",
    ]
    for level in levels:
        shown = figures(level)
        note = "the same experiment" if shown.exact else "estimate: concurrency x the per-request rates"
        lines.append(f"| {shown.concurrency} | {_tps(shown.pp)} | {_tps(shown.tg)} | {note} |")
    lines += [
        "",
        "pp: prompt tokens / median TTFT; tg: 1 / median TPOT (tokens per second after the first): the median",
        "request's rates, llama-benchy's `pp_throughput` and `tg_throughput` at concurrency 1 (their median over its",
        "runs). At higher concurrency llama-benchy sends bursts of *concurrency* requests together; the figures above",
        "assume every stream keeps the level's pace.",
    ]
    return lines
