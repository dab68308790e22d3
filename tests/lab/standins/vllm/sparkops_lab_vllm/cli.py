# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The ``vllm`` command: ``vllm --version`` and ``vllm serve [MODEL] [flags]``, parsed as vLLM 0.30.0 parses them.

The flags are the subset of 0.30.0's ``vllm serve`` the lab needs, with 0.30.0's types, defaults and aliases
(``entrypoints/launchers/cli_args.py:256-434`` FrontendArgs and make_arg_parser, ``engine/arg_utils.py:870-1760``
and ``:3012`` EngineArgs.add_cli_args), in 0.30.0's order (``non-default args`` lists them in it). A flag 0.30.0
does not have (``--swap-space``, ``--disable-log-requests``: removed before 0.30.0) ends as argparse ends:
``vllm: error: unrecognized arguments: ...``, exit 2.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from . import __version__
from .checks import validate_chat_template
from .flexible import BooleanOptional, human_readable_int, human_readable_int_or_auto, log_warnings, preprocess
from .logs import Fatal, print_fatal

# config/cache.py:39-58 CacheDType, config/model.py:100 ModelDType, cli_args.py:277-279: sorted, as
# engine/arg_utils.py:197-211 literal_to_kwargs sorts a Literal's options into argparse choices.
KV_CACHE_DTYPES = tuple(
    sorted(
        (
            "auto", "float16", "bfloat16", "fp8", "fp8_e4m3", "fp8_e5m2", "fp8_inc", "fp8_ds_mla", "nvfp4_ds_mla", "turboquant_k8v4",
            "turboquant_4bit_nc", "turboquant_k3v4_nc", "turboquant_3bit_nc", "int4_per_token_head", "int8_per_token_head",
            "fp8_per_token_head", "nvfp4", "nvfp4_4over6",
        )
    )
)  # fmt: skip
DTYPES = tuple(sorted(("auto", "half", "float16", "bfloat16", "float", "float32")))
LOG_LEVELS = tuple(sorted(("critical", "error", "warning", "info", "debug", "trace")))


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


def frontend_arguments(add: Any) -> None:
    """cli_args.py:397-430 and FrontendArgs (:66-346): the flags of the API server."""
    add("model_tag", nargs="?", help="The model tag to serve (optional if specified in config)")
    add("--headless", action="store_true", default=False)
    add("--chat-template")
    add("--enable-auto-tool-choice", action=BooleanOptional, default=False)
    add("--tool-call-parser")
    add("--host")
    add("--port", type=int, default=8000)
    add("--uvicorn-log-level", choices=LOG_LEVELS, default="info")
    add("--disable-uvicorn-access-log", action=BooleanOptional, default=False)
    add("--api-key", nargs="+")  # list[str] | None: collection_to_kwargs gives nargs="+"


def engine_arguments(add: Any) -> None:
    """engine/arg_utils.py EngineArgs.add_cli_args: the flags of the engine, in its groups' order."""
    add("--model", default="Qwen/Qwen3-0.6B")  # :877, ModelConfig.model's default
    add("--tokenizer")
    add("--trust-remote-code", action=BooleanOptional, default=False)
    add("--dtype", choices=DTYPES, default="auto")
    add("--seed", type=int, default=0)
    add("--revision")
    add("--max-model-len", type=human_readable_int_or_auto)
    add("--quantization", "-q")
    add("--enforce-eager", action=BooleanOptional, default=False)
    add("--served-model-name", nargs="+")
    add("--generation-config", default="auto")
    add("--load-format", default="auto")  # :979
    add("--download-dir")
    add("--attention-backend")  # :1008
    add("--reasoning-parser", default="")  # :1037
    add("--distributed-executor-backend")  # :1053, str among its types: a metavar, no choices
    add("--pipeline-parallel-size", "-pp", type=int, default=1)
    add("--master-addr", default="127.0.0.1")
    add("--master-port", type=int, default=29501)
    add("--nnodes", "-n", type=int, default=1)
    add("--node-rank", "-r", type=int, default=0)
    add("--tensor-parallel-size", "-tp", type=int, default=1)  # :1095
    add("--disable-custom-all-reduce", action=BooleanOptional, default=False)  # :1248
    add("--gpu-memory-utilization", type=float, default=0.92)  # :1270, config/cache.py:103
    add("--kv-cache-dtype", choices=KV_CACHE_DTYPES, default="auto")
    add("--enable-prefix-caching", action=BooleanOptional, default=None)  # :1280
    add("--limit-mm-per-prompt")  # :1370
    add("--max-num-batched-tokens", type=human_readable_int)  # :1581
    add("--max-num-seqs", type=int)  # :1595
    add("--enable-chunked-prefill", action=BooleanOptional, default=None)  # :1618
    add("--async-scheduling", action=BooleanOptional, default=None)  # :1644
    add("--max-cudagraph-capture-size", type=int)  # :1660
    add("--speculative-config", "-sc")  # :1698
    add("--compilation-config", "-cc")  # :1723
    add("--optimization-level")  # :1739
    add("--disable-log-stats", action="store_true")  # :1748
    add("--enable-log-requests", action=BooleanOptional, default=False)  # :3012


def build_parser() -> tuple[argparse.ArgumentParser, argparse.ArgumentParser]:
    """cli/main.py:84-100: ``vllm`` with ``-v/--version`` and its subcommands (here ``serve`` only)."""
    parser = argparse.ArgumentParser(prog="vllm", description="vLLM CLI")
    parser.add_argument("-v", "--version", action="version", version=version())
    commands = parser.add_subparsers(required=False, dest="subparser")
    serve = commands.add_parser(
        "serve",
        help="Launch a local OpenAI-compatible API server to serve LLM completions via HTTP.",
        description="Launch a local OpenAI-compatible API server to serve LLM completions via HTTP.",
        usage="vllm serve [model_tag] [options]",
    )
    frontend_arguments(serve.add_argument)
    engine_arguments(serve.add_argument)
    return parser, serve


def non_default(args: argparse.Namespace, serve: argparse.ArgumentParser) -> dict[str, Any]:
    """api_utils.py:208-218 and :271-281: the values unlike a bare parse's, the secrets as ``***``."""
    defaults = vars(serve.parse_args([]))
    return {key: "***" if key == "api_key" else getattr(args, key) for key, default in defaults.items() if getattr(args, key) != default}


def main(argv: Sequence[str] | None = None) -> int:
    parser, serve = build_parser()
    warnings: list[str] = []
    try:
        args = parser.parse_args(preprocess(sys.argv[1:] if argv is None else argv, warnings))
        if args.subparser == "serve":  # cli/main.py:102-103: ServeSubcommand.validate, cli_args.py:437-449
            validate_chat_template(args.chat_template)
            if args.enable_auto_tool_choice and not args.tool_call_parser:
                raise Fatal("TypeError", "Error: --enable-auto-tool-choice requires --tool-call-parser")
    except ValueError as exc:  # flexible.move_model_first
        log_warnings(warnings)
        print_fatal(Fatal("ValueError", str(exc)))
        return 1
    except Fatal as error:
        log_warnings(warnings)
        print_fatal(error)
        return 1
    if args.subparser != "serve":
        parser.print_help()
        return 0
    if args.model_tag is not None:  # entrypoints/cli/serve.py:54-55
        args.model = args.model_tag
    from .serve import run  # the HTTP server and the executors load for serve only

    return run(args, non_default(args, serve), version(), warnings)
