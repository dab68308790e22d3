# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Read and check the header of a safetensors file without reading its tensor data.

Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.

A safetensors file is ``[8 bytes: u64 little-endian N][N bytes: UTF-8 JSON header][data]``. The header maps each
tensor name to ``{"dtype", "shape", "data_offsets": [begin, end]}`` (offsets relative to the start of the data)
and may hold a ``__metadata__`` map of strings. :func:`read_header` parses it and checks what the reference
implementation checks before it maps a file: the header length (below 100 MB), that the header is a JSON object
starting with ``{``, that the tensors cover the data contiguously from offset 0, that each tensor's byte length is
``prod(shape) * bits(dtype) / 8``, and that the file is exactly ``8 + N + end of the last tensor`` bytes long,
which is what a truncated or padded download breaks. It costs two small reads, whatever the file's size.
"""

from __future__ import annotations

import json
import math
import os
import struct
import typing as t
from dataclasses import dataclass

# The reference implementation refuses headers of 100 MB or more.
MAX_HEADER_LEN = 100_000_000

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


def _int_list(value: t.Any, what: str, name: str) -> list[int]:
    if not isinstance(value, list) or not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in value):
        raise SafetensorsHeaderError(f"tensor {name!r}: {what} is not a list of non-negative integers: {value!r}")
    return value


def _tensor(name: str, entry: t.Any) -> TensorInfo:
    if not isinstance(entry, dict):
        raise SafetensorsHeaderError(f"tensor {name!r}: the header entry is not an object")
    dtype = entry.get("dtype")
    if not isinstance(dtype, str):
        raise SafetensorsHeaderError(f"tensor {name!r}: no dtype")
    shape = _int_list(entry.get("shape"), "shape", name)
    offsets = _int_list(entry.get("data_offsets"), "data_offsets", name)
    if len(offsets) != 2 or offsets[0] > offsets[1]:
        raise SafetensorsHeaderError(f"tensor {name!r}: data_offsets {offsets} is not [begin, end] with begin <= end")
    tensor = TensorInfo(dtype=dtype, shape=tuple(shape), begin=offsets[0], end=offsets[1])
    bits = DTYPE_BITS.get(dtype)
    if bits is not None:
        total_bits = math.prod(shape) * bits
        if total_bits % 8 or total_bits // 8 != tensor.nbytes:
            raise SafetensorsHeaderError(f"tensor {name!r}: {tensor.nbytes} bytes of data for {dtype} {list(shape)}, which needs {total_bits / 8:g}")
    return tensor


def parse_header(header: bytes) -> tuple[dict[str, TensorInfo], dict[str, str]]:
    """Parse the JSON header (the N bytes after the length) into its tensors and its ``__metadata__``."""
    try:
        text = header.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SafetensorsHeaderError(f"the header is not UTF-8: {exc}") from None
    if not text.startswith("{"):
        raise SafetensorsHeaderError(f"the header does not start with '{{' but with {text[:16]!r}")
    try:
        document = json.loads(text)
    except ValueError as exc:
        raise SafetensorsHeaderError(f"the header is not valid JSON: {exc}") from None
    if not isinstance(document, dict):
        raise SafetensorsHeaderError("the header is not a JSON object")
    metadata = document.pop("__metadata__", None) or {}
    if not isinstance(metadata, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in metadata.items()):
        raise SafetensorsHeaderError("__metadata__ is not a map of strings to strings")
    tensors = {name: _tensor(name, entry) for name, entry in document.items()}
    expected = 0
    for name, tensor in sorted(tensors.items(), key=lambda item: (item[1].begin, item[1].end)):
        if tensor.begin != expected:
            where = "overlaps the previous tensor" if tensor.begin < expected else "leaves a gap after the previous tensor"
            raise SafetensorsHeaderError(f"tensor {name!r}: data_offsets [{tensor.begin}, {tensor.end}] {where} (expected begin {expected})")
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
