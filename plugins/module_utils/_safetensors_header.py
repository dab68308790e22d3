# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Read and check the header of a safetensors file without reading its tensor data.

Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.

A safetensors file is ``[8 bytes: u64 little-endian N][N bytes: UTF-8 JSON header][data]``. The header maps each
tensor name to ``{"dtype", "shape", "data_offsets": [begin, end]}`` (offsets relative to the start of the data)
and may hold a ``__metadata__`` map of strings. :func:`read_header` parses it and checks what the reference
implementation checks before it maps a file: the header length (below 64 MiB: see below), that the header is a JSON object
starting with ``{``, that the tensors cover the data contiguously from offset 0, that each tensor's byte length is
``prod(shape) * bits(dtype) / 8``, and that the file is exactly ``8 + N + end of the last tensor`` bytes long,
which is what a truncated or padded download breaks. It costs two small reads, whatever the file's size.

A header is untrusted input (issue 15): its cost is bounded and every way it can be hostile is a
:class:`SafetensorsHeaderError`, never another exception. The header may hold at most :data:`MAX_HEADER_LEN` bytes
(refused before it is read) and :data:`MAX_TENSORS` tensors; every shape dimension, offset, element count and bit
count must fit in 64 bits, as in the reference implementation (which reads them as ``usize`` and multiplies with
``checked_mul``), so no big-integer arithmetic is done (the product of the shape stops as soon as it passes 64 bits);
a number is parsed at a bounded cost (:func:`_int_parser`); a header nested too deeply for Python's JSON parser is
refused; and messages quote names and values cut short (:func:`bounded_repr`).
"""

from __future__ import annotations

import gc
import json
import os
import reprlib
import struct
import sys
import typing as t
from dataclasses import dataclass

# The reference implementation, the safetensors crate (github.com/huggingface/safetensors, safetensors/src/tensor.rs at
# commit 24b0b28 of main, 2026-05-12, crate version 0.8.0-dev.0; the same checks in tags v0.7.0 and v0.8.0-rc.0),
# refuses a header of more than ``const MAX_HEADER_SIZE: usize = 100_000_000`` bytes (line 10; checked in
# ``SafeTensors::read_metadata``, lines 402-404, before the header is read) and, in ``Metadata::validate`` (lines
# 627-663), requires the tensors sorted by offset to cover the data from 0 without gap or overlap (``InvalidOffset``),
# multiplies the shape and then the bits of the dtype with ``usize::checked_mul`` (``ValidationOverflow`` past 64 bits)
# and requires ``end - begin`` to be that size. Shapes and offsets are ``usize`` (``struct TensorInfo``, line 799), so a
# number past 2**64 - 1 does not parse; serde_json, which parses the header, stops at 128 levels of nesting.
UPSTREAM_MAX_HEADER_LEN = 100_000_000
# Our caps are tighter than the reference's 100 MB, to bound what one header costs to parse and check, and still far
# above any real checkpoint: a 100B-class model's shard header is a few hundred kB listing a few thousand tensors (5 GB
# shards, ~130 bytes of header per tensor). The densest real layout we can count is an NVFP4 checkpoint of a
# 512-expert MoE saved as one file (transformers 5 saves 50 GB shards by default): Qwen3-Next-80B-A3B has
# 48 layers x 512 experts x 3 projections x 4 tensors (weight, two scales, input scale) = 295k tensors, a ~38 MB header.
# A header of MAX_HEADER_LEN bytes or more, or listing more than MAX_TENSORS tensors, is reported as corrupt. At the
# caps, the worst header we could build costs ~7 s of CPU and ~650 MB while it is checked (a 2-vCPU VM; a header of
# MAX_TENSORS tensors the same); the review's 2.6 MB header of huge dims, which cost 105 s, is refused in milliseconds.
MAX_HEADER_LEN = 64 << 20  # 67,108,864 bytes
MAX_TENSORS = 1 << 19  # 524,288 tensors
# A tensor's entry is one JSON object holding two arrays: a header may hold at most this many ``{`` and ``[`` (counted
# before it is parsed, strings included: the rest leaves room for brackets in names and ``__metadata__`` strings), so
# that parsing never builds millions of empty objects or arrays (a 64 MiB header of ``[],`` is 22M lists, 1.7 GB).
MAX_CONTAINERS = 4 * MAX_TENSORS
# Every shape dimension, offset, element count and bit count is a usize of the reference (64 bits): past it the file
# cannot be loaded, and checking a header never does big-integer arithmetic.
MAX_U64 = 2**64 - 1
MAX_DIGITS = len(str(MAX_U64))  # 20

# Bits per element of every dtype safetensors 0.8 knows. A tensor of another dtype is not size-checked.
DTYPE_BITS: dict[str, int] = {
    "BOOL": 8,
    "F4": 4,
    "F6_E2M3": 6,
    "F6_E3M2": 6,
    "U8": 8,
    "I8": 8,
    "F8_E5M2": 8,
    "F8_E4M3": 8,
    "F8_E8M0": 8,
    "F8_E4M3FNUZ": 8,
    "F8_E5M2FNUZ": 8,
    "I16": 16,
    "U16": 16,
    "F16": 16,
    "BF16": 16,
    "I32": 32,
    "U32": 32,
    "F32": 32,
    "C64": 64,
    "F64": 64,
    "I64": 64,
    "U64": 64,
}


class SafetensorsHeaderError(ValueError):
    """The file is not a valid, complete safetensors file; the message says why (without the file name)."""


@dataclass(frozen=True)
class TensorInfo:
    """One tensor of a safetensors header."""

    dtype: str
    shape: tuple[int, ...]
    begin: int
    end: int

    @property
    def nbytes(self) -> int:
        return self.end - self.begin


@dataclass(frozen=True)
class SafetensorsHeader:
    """The parsed header of a safetensors file whose size matches it."""

    header_len: int
    tensors: dict[str, TensorInfo]
    metadata: dict[str, str]
    file_size: int

    @property
    def data_bytes(self) -> int:
        """The length of the data section: the end of the last tensor (the tensors are contiguous from 0)."""
        return max((tensor.end for tensor in self.tensors.values()), default=0)


_REPR = reprlib.Repr()
_REPR.maxlevel = 3
_REPR.maxlist = _REPR.maxtuple = 16
_REPR.maxdict = 8
_REPR.maxstring = 200
_REPR.maxlong = 2 * MAX_DIGITS
_REPR.maxother = 200


def bounded_repr(value: t.Any) -> str:
    """``repr(value)`` for a message, cut short: at most 3 levels, 16 items and 200 characters of a string.

    A short value of JSON (a name, a list of a few numbers) reads as ``repr`` writes it; a hostile one (a name of
    megabytes, a list nested thousands of levels deep, which plain ``repr`` cannot even print) stays a short line.
    """
    return _REPR.repr(value)


def _parse_int(text: str) -> int:
    """``int(text)`` for the JSON parser, refusing a number that no 64-bit size or offset has the digits for."""
    digits = len(text.lstrip("-"))
    if digits > MAX_DIGITS:
        raise SafetensorsHeaderError(f"the header holds a {digits}-digit number ({text[:24]}...), more than 64 bits hold")
    return int(text)


def _int_parser() -> t.Callable[[str], int] | None:
    """How the JSON parser reads a number: as it does (None) where Python refuses a number of more than 4300 digits,
    else with :func:`_parse_int`.

    Reading a number of n digits costs n**2: Python 3.11 (and the security releases 3.8.14, 3.9.14 and 3.10.7) refuses
    more than 4300 (``sys.int_info.default_max_str_digits``), which bounds it. Where that limit is missing, lifted
    (0) or raised, :func:`_parse_int` refuses more than 20 digits; it is not used everywhere because a Python call per
    number makes a header of numbers several times slower to parse."""
    get_limit = getattr(sys, "get_int_max_str_digits", None)
    limit = get_limit() if get_limit is not None else 0
    return None if 0 < limit <= 4300 else _parse_int


def _int_list(value: t.Any, what: str, name: str) -> list[int]:
    # set, map, min and max loop in C: a shape of millions of dims is checked in a fraction of a second.
    if isinstance(value, list) and set(map(type, value)) <= {int} and (not value or (min(value) >= 0 and max(value) <= MAX_U64)):
        return value
    if not isinstance(value, list) or not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in value):
        raise SafetensorsHeaderError(f"tensor {bounded_repr(name)}: {what} is not a list of non-negative integers: {bounded_repr(value)}")
    if any(v > MAX_U64 for v in value):
        raise SafetensorsHeaderError(
            f"tensor {bounded_repr(name)}: {what} holds {bounded_repr(max(value))}, more than 64 bits hold (the reference reads it as a usize)"
        )
    return value


def _elements(shape: list[int]) -> int | None:
    """The product of ``shape``, or None when it passes 64 bits on the way, as the reference's ``checked_mul`` fold does.

    Dims of 1 change nothing (skipped by a loop in C), a 0 ends it (nothing overflows after it) and 65 dims of 2 or more
    overflow: whatever the rank, it multiplies at most 65 numbers below 2**64."""
    count = 1
    for dim in filter((1).__ne__, shape):
        count *= dim
        if count > MAX_U64:
            return None
        if not count:
            return 0
    return count


def _tensor(name: str, entry: t.Any) -> TensorInfo:
    if not isinstance(entry, dict):
        raise SafetensorsHeaderError(f"tensor {bounded_repr(name)}: the header entry is not an object")
    dtype = entry.get("dtype")
    if not isinstance(dtype, str):
        raise SafetensorsHeaderError(f"tensor {bounded_repr(name)}: no dtype")
    shape = _int_list(entry.get("shape"), "shape", name)
    offsets = _int_list(entry.get("data_offsets"), "data_offsets", name)
    if len(offsets) != 2 or offsets[0] > offsets[1]:
        raise SafetensorsHeaderError(f"tensor {bounded_repr(name)}: data_offsets {bounded_repr(offsets)} is not [begin, end] with begin <= end")
    tensor = TensorInfo(dtype=dtype, shape=tuple(shape), begin=offsets[0], end=offsets[1])
    bits = DTYPE_BITS.get(dtype)
    if bits is not None:
        elements = _elements(shape)
        total_bits = None if elements is None else elements * bits
        if total_bits is None or total_bits > MAX_U64:
            raise SafetensorsHeaderError(
                f"tensor {bounded_repr(name)}: {dtype} {bounded_repr(shape)} is more than 2**64 bits of data (the reference refuses it: ValidationOverflow)"
            )
        if total_bits % 8 or total_bits // 8 != tensor.nbytes:
            raise SafetensorsHeaderError(
                f"tensor {bounded_repr(name)}: {tensor.nbytes} bytes of data for {dtype} {bounded_repr(shape)}, which needs {total_bits / 8:g}"
            )
    return tensor


def parse_header(header: bytes) -> tuple[dict[str, TensorInfo], dict[str, str]]:
    """Parse the JSON header (the N bytes after the length) into its tensors and its ``__metadata__``."""
    try:
        text = header.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SafetensorsHeaderError(f"the header is not UTF-8: {exc}") from None
    if not text.startswith("{"):
        raise SafetensorsHeaderError(f"the header does not start with '{{' but with {text[:16]!r}")
    containers = header.count(b"{") + header.count(b"[")
    if containers > MAX_CONTAINERS:
        raise SafetensorsHeaderError(
            f"the header holds {containers} '{{' and '[', more than {MAX_CONTAINERS}: {MAX_TENSORS} tensors need 3 each, no real checkpoint file comes near"
        )
    nested_too_deep = False
    collecting = gc.isenabled()
    # The parse makes no reference cycles, and the collector would walk every list it makes again and again: a 64 MiB
    # header of empty lists parses 4x faster without it.
    gc.disable()
    try:
        document = json.loads(text, parse_int=_int_parser())
    except SafetensorsHeaderError:
        raise
    except RecursionError:
        nested_too_deep = True
    except ValueError as exc:
        raise SafetensorsHeaderError(f"the header is not valid JSON: {exc}") from None
    finally:
        if collecting:
            gc.enable()
    if nested_too_deep:
        # A tensor entry is 3 levels deep; Python's parser gives up some 1000 levels down (the reference's, at 128).
        raise SafetensorsHeaderError("the header is nested too deeply for a JSON parser (a safetensors header is 3 levels deep)")
    if not isinstance(document, dict):
        raise SafetensorsHeaderError("the header is not a JSON object")
    metadata = document.pop("__metadata__", None) or {}
    if not isinstance(metadata, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in metadata.items()):
        raise SafetensorsHeaderError("__metadata__ is not a map of strings to strings")
    if len(document) > MAX_TENSORS:
        raise SafetensorsHeaderError(f"the header lists {len(document)} tensors, more than {MAX_TENSORS}: no real checkpoint file comes near")
    tensors = {name: _tensor(name, entry) for name, entry in document.items()}
    expected = 0
    for name, tensor in sorted(tensors.items(), key=lambda item: (item[1].begin, item[1].end)):
        if tensor.begin != expected:
            where = "overlaps the previous tensor" if tensor.begin < expected else "leaves a gap after the previous tensor"
            raise SafetensorsHeaderError(f"tensor {bounded_repr(name)}: data_offsets [{tensor.begin}, {tensor.end}] {where} (expected begin {expected})")
        expected = tensor.end
    return tensors, metadata


def read_header(path: str | os.PathLike[str]) -> SafetensorsHeader:
    """Read and check the header of the safetensors file at ``path`` (following symlinks).

    Raises :class:`SafetensorsHeaderError` when the header is invalid or the file's size does not match it, and
    ``OSError`` when the file cannot be read.
    """
    with open(path, "rb") as f:
        file_size = os.fstat(f.fileno()).st_size
        prefix = f.read(8)
        if len(prefix) < 8:
            raise SafetensorsHeaderError(f"{file_size} bytes, too short for the 8-byte header length")
        (header_len,) = struct.unpack("<Q", prefix)
        if header_len == 0 or header_len >= MAX_HEADER_LEN:
            # Refused before a byte of it is read: no real checkpoint's header comes near (see MAX_HEADER_LEN).
            raise SafetensorsHeaderError(f"header length {header_len} is out of range (1 to {MAX_HEADER_LEN - 1})")
        if 8 + header_len > file_size:
            raise SafetensorsHeaderError(f"truncated in the header: {file_size} bytes, the header alone needs {8 + header_len}")
        header = f.read(header_len)
    tensors, metadata = parse_header(header)
    info = SafetensorsHeader(header_len=header_len, tensors=tensors, metadata=metadata, file_size=file_size)
    expected = 8 + header_len + info.data_bytes
    if file_size != expected:
        how = "truncated" if file_size < expected else "has trailing bytes"
        raise SafetensorsHeaderError(f"{how}: {file_size} bytes, the header says {expected} (8 + {header_len} + {info.data_bytes})")
    return info
