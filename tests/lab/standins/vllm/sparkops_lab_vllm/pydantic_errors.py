# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The ValidationError pydantic raises for vLLM's config classes (pydantic dataclasses, ``config/utils.py:51-80``).

A ValueError raised in a config's ``__post_init__`` comes out as ``1 validation error for <Class>`` and
``  Value error, <message> [type=value_error, ...]``; a field constraint (``Field(ge=1)``) names the field. vLLM
0.30.0 requires ``pydantic>=2.12.0`` (its METADATA); the documentation link carries pydantic's minor version,
taken here as 2.12 (guessed: the node may hold a later one). pydantic shortens long ``input_value`` reprs; the
stand-in writes ``{...}`` for the config's arguments (guessed).
"""

from __future__ import annotations

from .logs import Fatal

KIND = "pydantic_core._pydantic_core.ValidationError"
DOCS = "https://errors.pydantic.dev/2.12/v/"


def value_error(config: str, message: str, first_key: str, first_value: object) -> Fatal:
    """A ValueError of ``<config>.__post_init__``."""
    return Fatal(
        KIND,
        f"1 validation error for {config}\n  Value error, {message} [type=value_error, input_value=ArgsKwargs((), "
        f"{{{first_key!r}: {first_value!r}, ...}}), input_type=ArgsKwargs]\n    For further information visit {DOCS}value_error",
    )


def field_error(config: str, field: str, text: str, kind: str, value: object) -> Fatal:
    """A field constraint of ``<config>`` (``Field(gt=0, le=1)``, ``Field(ge=1)``)."""
    return Fatal(
        KIND,
        f"1 validation error for {config}\n{field}\n  Input should be {text} [type={kind}, input_value={value!r}, "
        f"input_type={type(value).__name__}]\n    For further information visit {DOCS}{kind}",
    )
