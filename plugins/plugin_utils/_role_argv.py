# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A role's variables as the words of a command line: the checks the ``ray_start_argv`` and ``vllm_serve_argv``
filters share (_ray_start_argv, _vllm_serve_argv).

Each check raises the caller's error class (``error``), so that each filter keeps its own error and messages.

Note that this plugin util is **PRIVATE** to the collection. It can have breaking changes at any time.
"""

from __future__ import annotations

import typing as t
from collections.abc import Iterable, Mapping


def check_names(variables: t.Any, prefix: str, names: t.Sequence[str], error: type[ValueError]) -> None:
    """Refuse ``variables`` unless it is a mapping of exactly ``prefix`` + each of ``names``, saying which are unknown
    and which are missing."""
    if not isinstance(variables, Mapping):
        raise error(f"the role's variables must be a dict of {prefix}* names to values, got {variables!r}")
    unknown = sorted(str(key) for key in variables if not str(key).startswith(prefix) or str(key)[len(prefix) :] not in names)
    missing = [prefix + field for field in names if prefix + field not in variables]
    if unknown or missing:
        said = ([f"unknown variable(s) {', '.join(unknown)}"] if unknown else []) + ([f"missing {', '.join(missing)}"] if missing else [])
        raise error(f"{'; '.join(said)} (the variables are {', '.join(prefix + field for field in names)})")


def argument_text(value: t.Any, name: str, error: type[ValueError]) -> str:
    """``value`` as one argument: a string as it is, a number as its text; anything else is refused, naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise error(f"{name} must be a string or a number, got {value!r}")
    return str(value)


def argument_list(value: t.Any, name: str, error: type[ValueError]) -> tuple[str, ...]:
    """``value`` (a list of strings or numbers) as arguments, in order; anything else is refused, naming ``name``."""
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Iterable):
        raise error(f"{name} must be a list of arguments, got {value!r}")
    return tuple(argument_text(item, f"{name}[{index}]", error) for index, item in enumerate(value))
