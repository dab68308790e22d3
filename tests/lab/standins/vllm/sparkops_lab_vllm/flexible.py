# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What vLLM 0.30.0's FlexibleArgumentParser (``vllm/utils/argparse_utils.py``) does to argv before argparse.

* ``vllm serve ... --model M ...`` is moved to ``vllm serve M ...`` with a warning (line 268-301); a
  ``--served-model-name`` without a positional model is a ValueError (line 303-314);
* underscores in an option name read as dashes, up to the first ``.`` (line 319-336);
* ``-O3``, ``-O=3`` and ``-O 3`` are ``--optimization-level 3`` (line 337-347);
* ``--json-arg.key value`` and ``--json-arg.key+ a,b`` are gathered into ``--json-arg '{"key": ...}'``
  (line 390-440).

It keeps argparse's ``allow_abbrev=True`` (no ``allow_abbrev`` anywhere in vLLM), so a unique prefix of a flag is
that flag. Integers with suffixes: ``human_readable_int`` (line 29-72), ``human_readable_int_or_auto`` (75-91).
"""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Sequence
from typing import Any

from .logs import log

_HUMAN = re.compile(r"(\d+(?:\.\d+)?)([kKmMgGtT])")
_MODEL = re.compile(r"^--model(=.+|$)")
_SERVED = re.compile(r"^--served[-_]model[-_]name(=.+|$)")
_CONFIG = re.compile(r"^--config(=.+|$)")
_NAME = re.compile(r"(?<=--)[^\.]*")


def human_readable_int(value: str) -> int:
    """``25.6k`` -> 25600 (k, m, g, t: powers of 1000), ``32K`` -> 32768 (K, M, G, T: powers of 1024), ``4096``."""
    value = value.strip()
    match = _HUMAN.fullmatch(value)
    if match:
        number, suffix = match.groups()
        power = "kmgt".index(suffix.lower()) + 1
        if suffix.islower():
            return int(float(number) * 1000**power)
        if "." in number:
            raise argparse.ArgumentTypeError(
                f"Decimals are not allowed with binary suffixes like {suffix}. Did you mean to use {number}{suffix.lower()} instead?"
            )
        return int(number) * 1024**power
    return int(value)


def human_readable_int_or_auto(value: str) -> int:
    """As human_readable_int, and ``-1`` or ``auto`` for -1 (automatic)."""
    value = value.strip()
    if value == "-1" or value.lower() == "auto":
        return -1
    return human_readable_int(value)


class BooleanOptional(argparse.Action):
    """``--flag`` / ``--no-flag`` (argparse.BooleanOptionalAction, which Python 3.8 lacks)."""

    def __init__(self, option_strings: Sequence[str], dest: str, default: Any = None, help: str | None = None) -> None:  # noqa: A002
        strings = [*option_strings, *("--no-" + option[2:] for option in option_strings if option.startswith("--"))]
        super().__init__(strings, dest, nargs=0, default=default, help=help)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any, option_string: str | None = None) -> None:
        setattr(namespace, self.dest, not (option_string or "").startswith("--no-"))


MODEL_WARNING = (
    "With `vllm serve`, you should provide the model as a positional argument or in a config file instead of via the `--model` "
    "option. The `--model` option will be removed in a future version."
)


def move_model_first(args: list[str], warnings: list[str]) -> list[str]:
    """``vllm serve ... --model M ...``: M becomes the positional model, with vLLM's warning (logged by the caller)."""
    index = next((n for n, arg in enumerate(args) if _MODEL.match(arg)), None)
    if index is not None:
        warnings.append(MODEL_WARNING)
        if args[index] == "--model" and index + 1 < len(args):
            tag, rest = args[index + 1], index + 2
        else:
            tag, rest = args[index][len("--model=") :], index + 1
        args = ["serve", tag, *args[1:index], *args[rest:]]
    if len(args) > 1 and args[1].startswith("-") and not any(_CONFIG.match(a) for a in args) and any(_SERVED.match(a) for a in args):
        raise ValueError("`model` should be provided as the first positional argument when using `vllm serve`. i.e. `vllm serve <model> --<arg> <value>`.")
    return args


def log_warnings(warnings: list[str]) -> None:
    """argparse_utils.py:276, logged before run_server decorates the logs (no process prefix)."""
    for warning in warnings:
        log("WARNING", "argparse_utils.py:276", warning, process="")


def dashes(args: list[str]) -> list[str]:
    """Underscores to dashes in option names (up to the first dot); ``-O`` forms to ``--optimization-level``."""
    out: list[str] = []
    for n, arg in enumerate(args):
        if arg.startswith("--"):
            key, sep, value = arg.partition("=")
            out.append(_NAME.sub(lambda match: match.group(0).replace("_", "-"), key, count=1) + sep + value)
        elif arg.startswith("-O") and arg != "-O":
            out += ["--optimization-level", arg[3:] if arg[2] == "=" else arg[2:]]
        elif arg == "-O" and n + 1 < len(args) and args[n + 1] in {"0", "1", "2", "3"}:
            out.append("--optimization-level")
        else:
            out.append(arg)
    return out


def json_value(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        try:
            return human_readable_int(text)
        except (ValueError, argparse.ArgumentTypeError):
            return text


def dotted(args: list[str]) -> list[str]:
    """``--name.key value`` / ``--name.key=value`` / ``--name.key+ a,b``: merged into ``--name '<json>'`` at the end."""
    out: list[str] = []
    merged: dict[str, dict[str, Any]] = {}
    skip = False
    for n, arg in enumerate(args):
        if skip:
            skip = False
            continue
        name, sep, value = arg.partition("=")
        if not (arg.startswith("-") and "." in name):
            out.append(arg)
            continue
        if not sep:
            value, skip = (args[n + 1] if n + 1 < len(args) else ""), True
        item: Any = json.dumps(value.split(",")) if name.endswith("+") else value
        key, *keys = name.rstrip("+").split(".")
        node = merged.setdefault(key, {})
        for part in keys[:-1]:
            node = node.setdefault(part, {})
        parsed = json_value(item)
        if name.endswith("+") and isinstance(node.get(keys[-1]), list):
            node[keys[-1]] += parsed
        else:
            node[keys[-1]] = parsed
    for key, tree in merged.items():
        out += [key, json.dumps(tree)]
    return out


def preprocess(argv: Sequence[str], warnings: list[str]) -> list[str]:
    """argv as FlexibleArgumentParser.parse_args hands it to argparse (its warnings appended to ``warnings``)."""
    args = list(argv)
    if args[:1] == ["serve"]:
        args = move_model_first(args, warnings)
    return dotted(dashes(args))
