# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The ``vllm`` command: ``vllm --version`` and ``vllm serve [MODEL] [flags]``, parsed as vLLM parses them.

argparse with vLLM's FlexibleArgumentParser habits: ``--key value`` and ``--key=value``, underscores in a flag
name read as dashes (``--max_model_len``), ``--flag/--no-flag`` for vLLM's boolean options, human-readable
integers (``32k`` = 32000, ``32K`` = 32768). An unknown flag ends with ``vllm: error: unrecognized arguments: ...``
and exit status 2, as argparse ends.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence
from typing import Any

from . import __version__

BACKENDS = ("ray", "mp", "uni", "external_launcher")
KV_CACHE_DTYPES = ("auto", "fp8", "fp8_e4m3", "fp8_e5m2")
DTYPES = ("auto", "half", "float16", "bfloat16", "float", "float32")
LOG_LEVELS = ("critical", "error", "warning", "info", "debug", "trace")
_HUMAN = re.compile(r"(\d+(?:\.\d+)?)([kKmMgGtT])")


def version() -> str:
    """The installed distribution's version (the wheel's), else the package's own."""
    try:
        from importlib.metadata import PackageNotFoundError
        from importlib.metadata import version as dist_version

        try:
            return dist_version("vllm")
        except PackageNotFoundError:
            return __version__
    except ImportError:
        return __version__


def human_readable_int(value: str) -> int:
    """``25.6k`` -> 25600 (k, m, g, t: powers of 1000), ``32K`` -> 32768 (K, M, G, T: powers of 1024), ``-1``, ``4096``."""
    value = value.strip()
    match = _HUMAN.fullmatch(value)
    if match:
        number, suffix = match.groups()
        power = "kmgt".index(suffix.lower()) + 1
        if suffix.islower():
            return int(float(number) * 1000**power)
        if "." in number:
            raise ValueError(value)
        return int(number) * 1024**power
    return int(value)


class BooleanOptional(argparse.Action):
    """``--flag`` / ``--no-flag`` (argparse.BooleanOptionalAction, which Python 3.8 lacks)."""

    def __init__(self, option_strings: Sequence[str], dest: str, default: Any = None, help: str | None = None) -> None:  # noqa: A002
        strings = [*option_strings, *("--no-" + option[2:] for option in option_strings if option.startswith("--"))]
        super().__init__(strings, dest, nargs=0, default=default, help=help)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any, option_string: str | None = None) -> None:
        setattr(namespace, self.dest, not (option_string or "").startswith("--no-"))


def normalise(argv: Sequence[str]) -> list[str]:
    """vLLM's FlexibleArgumentParser reads ``--max_model_len`` as ``--max-model-len`` (values are left alone)."""
    out = []
    for arg in argv:
        if arg.startswith("--"):
            key, sep, value = arg.partition("=")
            arg = "--" + key[2:].replace("_", "-") + sep + value
        out.append(arg)
    return out


def serve_arguments(serve: argparse.ArgumentParser) -> None:
    add = serve.add_argument
    add("model_tag", nargs="?", help="the model: a Hugging Face repo id or a local folder")
    add("--model", help="the model (deprecated for serve: give it as the positional argument)")
    add("--tokenizer")
    add("--revision")
    add("--host", help="host to bind (default: all interfaces)")
    add("--port", type=int, default=8000)
    add("--uvicorn-log-level", choices=LOG_LEVELS, default="info")
    add("--disable-uvicorn-access-log", action="store_true")
    add("--api-key", help="required as 'Authorization: Bearer KEY' on /v1 (else $VLLM_API_KEY)")
    add("--served-model-name", nargs="+")
    add("--tensor-parallel-size", "-tp", type=int, default=1)
    add("--pipeline-parallel-size", "-pp", type=int, default=1)
    add("--distributed-executor-backend", choices=BACKENDS)
    add("--nnodes", type=int, default=1)
    add("--node-rank", type=int, default=0)
    add("--master-addr", default="127.0.0.1")
    add("--master-port", type=int, default=29501)
    add("--headless", action="store_true")
    add("--gpu-memory-utilization", type=float, default=0.9)
    add("--max-model-len", type=human_readable_int)
    add("--max-num-seqs", type=int)
    add("--max-num-batched-tokens", type=human_readable_int)
    add("--kv-cache-dtype", choices=KV_CACHE_DTYPES, default="auto")
    add("--dtype", choices=DTYPES, default="auto")
    add("--quantization", "-q")
    add("--load-format", default="auto")
    add("--download-dir")
    add("--seed", type=int)
    add("--swap-space", type=float)
    add("--generation-config", default="auto")
    add("--chat-template")
    add("--reasoning-parser")
    add("--tool-call-parser")
    add("--enable-auto-tool-choice", action="store_true")
    add("--disable-log-requests", action="store_true")
    add("--enable-log-requests", action="store_true")
    add("--disable-log-stats", action="store_true")
    add("--disable-custom-all-reduce", action="store_true")
    add("--attention-backend")
    add("--speculative-config")
    add("--compilation-config", "-O")
    add("--max-cudagraph-capture-size", type=int)
    add("--limit-mm-per-prompt")
    for flag in ("--trust-remote-code", "--enforce-eager", "--enable-prefix-caching", "--enable-chunked-prefill", "--async-scheduling"):
        add(flag, action=BooleanOptional)


def build_parser() -> tuple[argparse.ArgumentParser, argparse.ArgumentParser]:
    parser = argparse.ArgumentParser(prog="vllm", description="vLLM CLI (sparkops lab stand-in)", allow_abbrev=False)
    parser.add_argument("-v", "--version", action="version", version=version())
    commands = parser.add_subparsers(dest="subparser")
    serve = commands.add_parser(
        "serve",
        help="Launch a local OpenAI-compatible API server to serve LLM completions via HTTP.",
        description="Launch a local OpenAI-compatible API server to serve LLM completions via HTTP.",
        usage="vllm serve [model_tag] [options]",
        allow_abbrev=False,
    )
    serve_arguments(serve)
    return parser, serve


def main(argv: Sequence[str] | None = None) -> int:
    parser, serve = build_parser()
    args = parser.parse_args(normalise(sys.argv[1:] if argv is None else argv))
    if args.subparser != "serve":
        parser.print_help()
        return 0
    non_default = {key: value for key, value in vars(args).items() if key != "subparser" and value != serve.get_default(key)}
    from .serve import run  # the HTTP server and the backends load for serve only

    return run(args, non_default, version())
