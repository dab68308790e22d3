# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Values written into systemd unit files (and the comments of environment files), so that systemd reads back
exactly the value and nothing else.

Note that this plugin util is **PRIVATE** to the collection. It can have breaking changes at any time.

How systemd reads a unit file (systemd.syntax(7); systemd.service(5), "Command lines"; systemd.unit(5),
"Specifiers"; in systemd 252's source: ``src/shared/conf-parser.c`` ``config_parse()``, ``src/basic/fileio.c``
``read_line_full()``, ``src/core/load-fragment.c`` ``config_parse_exec()``, ``src/basic/extract-word.c``
``extract_first_word()``, ``src/basic/escape.c`` ``cunescape_one()``, ``src/basic/env-util.c``
``replace_env_argv()``), and what each rule means for a value:

- A line ends at a newline, a carriage return or a NUL: a value holding one would end its directive there and start
  another (``...\\nExecStartPre=/bin/sh -c id``, which root runs before the service). Such values, and every other
  control character (C0, DEL, C1, U+2028 and U+2029), are refused, naming the variable: :func:`one_line`.
- A line ending with an odd number of backslashes continues on the next line (comment lines of older systemd and of
  environment files too): a value ending with a backslash is refused (:func:`unit_value`).
- ``%`` starts a specifier (``%h``, ``%n``, ...) in most values, Exec lines included, quoted or not, before the
  words are split: written ``%%`` (:func:`unit_value`, :func:`exec_word`).
- Exec lines (and ``Environment=``) are split into words with ``EXTRACT_UNQUOTE|EXTRACT_CUNESCAPE``: single and double
  quotes group a word, a backslash starts a C escape inside quotes as well as outside (``'a\\nb'`` holds a newline,
  ``'\\\\'`` one backslash), and a bare ``;`` word separates two commands. A word that is not made of the characters
  ``shlex.quote`` leaves bare is written in single quotes with ``\\`` as ``\\\\`` and ``'`` as ``\\'``
  (:func:`exec_word`); the bare ones are written as they are, so ordinary values render as before.
- When an Exec command starts, ``$$`` becomes ``$``, ``${NAME}`` (anywhere) and a ``$NAME`` word become the
  environment's values: every ``$`` of an Exec word is written ``$$``. ``Environment=`` does not expand them
  (``expand_variables=False``).
- ``IPAddressAllow=`` takes addresses and prefixes separated by spaces: :func:`ip_address_allow` makes each address
  of a node a ``/32`` (``/128``) and refuses anything else, so no value can add a keyword such as ``any``.
"""

from __future__ import annotations

import ipaddress
import re
import typing as t
from collections.abc import Iterable, Mapping

from ansible.module_utils.parsing.convert_bool import boolean

# The characters shlex.quote leaves bare (Ansible's ``quote`` filter), none of which systemd treats specially in a
# word, but % (a specifier, doubled below).
_BARE = re.compile(r"[A-Za-z0-9_@%+=:,./-]+")
# NUL, every C0 control character (line feed, carriage return, tab, ...), DEL, the C1 controls (NEL U+0085 among them)
# and Unicode's line and paragraph separators.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")
_LINE_BREAKS = "\n\r\x0b\x0c\x85\u2028\u2029"
# IPAddressAllow: networks at least this long (as the inventory contract's fabric subnet: a shorter one admits
# practically everyone).
MIN_PREFIX = {4: 8, 6: 32}


class SystemdUnitError(ValueError):
    """A value that cannot go into a unit file as it is; the message names its variable and shows the value."""


def flag(value: t.Any, option: str) -> bool:
    """A boolean option as Ansible writes them (``"false"``, ``"yes"``, ``1``...); anything else is refused, naming it."""
    try:
        return boolean(value, strict=True)
    except TypeError:
        raise SystemdUnitError(f"{option} must be a boolean, got {value!r}") from None


def _text(value: t.Any, name: str) -> str:
    if value is None or isinstance(value, (Mapping, list, tuple, set, bytes)):
        raise SystemdUnitError(f"{name} must be a string or a number, got {value!r}")
    return str(value)


def one_line(value: t.Any, name: str) -> str:
    """``value`` as text; refused, naming ``name``, when it holds a NUL, a line break or another control character."""
    text = _text(value, name)
    found = _CONTROL.search(text)
    if found is None:
        return text
    char = found.group()
    if char == "\x00":
        what = "a NUL character"
    elif char in _LINE_BREAKS:
        what = "a line break (systemd would read what follows as a directive of its own)"
    else:
        what = f"a control character (U+{ord(char):04X})"
    raise SystemdUnitError(f"{name} must be one line without control characters for a systemd unit: it holds {what}, got {text!r}")


def unit_value(value: t.Any, name: str, *, specifiers: bool = True) -> str:
    """``value`` for a directive's value or a comment of a unit file: one line (:func:`one_line`), not ending with a
    backslash (the line would go on with the next one), ``%`` written ``%%`` when ``specifiers`` (a comment, or a
    file that is not a unit, has none; the checks stay)."""
    text = one_line(value, name)
    if text.endswith("\\"):
        raise SystemdUnitError(f"{name} must not end with a backslash for a systemd unit (the line would go on with the next one), got {text!r}")
    return text.replace("%", "%%") if specifiers else text


def exec_word(value: t.Any, name: str, *, expand_variables: bool = True) -> str:
    """One word of an Exec line (or, with ``expand_variables=False``, of ``Environment=``), written so that systemd
    reads back exactly ``value`` as one argument (see the module's docstring)."""
    text = one_line(value, name)
    if _BARE.fullmatch(text):
        return text.replace("%", "%%")
    escaped = text.replace("\\", "\\\\").replace("'", "\\'").replace("%", "%%")
    if expand_variables:
        escaped = escaped.replace("$", "$$")
    return f"'{escaped}'"


def _flatten(value: t.Any) -> list[str]:
    if isinstance(value, (str, int, float)):
        return [str(value)]
    if isinstance(value, Mapping):
        return [text for item in value.values() for text in _flatten(item)]
    if isinstance(value, Iterable) and not isinstance(value, (bytes, str)):
        return [text for item in value for text in _flatten(item)]
    return []


def _blame(word: str, name: str, sources: Mapping[str, t.Any] | None) -> str:
    """The first variable of ``sources`` (variable name to its value or values) one of whose values that
    :func:`one_line` refuses is part of ``word``; else ``name``."""
    for source, values in (sources or {}).items():
        for text in _flatten(values):
            if text and text in word and _CONTROL.search(text):
                return str(source)
    return name


def _words(argv: t.Any, name: str) -> list[t.Any]:
    if isinstance(argv, (str, int, float)):
        return [argv]
    if isinstance(argv, (Mapping, bytes)) or not isinstance(argv, Iterable):
        raise SystemdUnitError(f"{name} must be a list of arguments, got {argv!r}")
    return list(argv)


def exec_args(
    argv: t.Any,
    name: str,
    *,
    sources: Mapping[str, t.Any] | None = None,
    command: bool = False,
    expand_variables: bool = True,
) -> str:
    """``argv`` (a list; a string or number is one word) as the words of an Exec line, separated by spaces.

    A word that cannot be written names the first variable of ``sources`` (variable name to the value or values it
    put in ``argv``) whose value it holds, else ``name``. With ``command``, the first word is the program and must be
    an absolute path (a leading ``-``, ``@``, ``:``, ``+`` or ``!`` would be read as a prefix)."""
    words = _words(argv, name)
    if command and (not words or not _text(words[0], name).startswith("/")):
        raise SystemdUnitError(f"{name} must start with the absolute path of a program, got {words[:1]!r}")
    written: list[str] = []
    for word in words:
        if isinstance(word, (Mapping, list, tuple, set)) or word is None:
            raise SystemdUnitError(f"every argument of {name} must be a string or a number, got {word!r}")
        label = _blame(str(word), name, sources) if _CONTROL.search(str(word)) else name
        written.append(exec_word(word, label, expand_variables=expand_variables))
    return " ".join(written)


def _entries(addresses: t.Any, name: str) -> list[tuple[str, t.Any]]:
    if isinstance(addresses, Mapping):
        return [(f"{name} of {label}", value) for label, value in addresses.items()]
    if isinstance(addresses, (str, bytes)) or not isinstance(addresses, Iterable):
        raise SystemdUnitError(f"{name} must be a list of IP addresses, got {addresses!r}")
    return [(name, value) for value in addresses]


def ip_address_allow(addresses: t.Any, name: str, *, networks: bool = False) -> list[str]:
    """``addresses`` (a list, or a mapping of a label such as a host name to an address) as ``IPAddressAllow=``
    entries, in order, each once: an address as ``/32`` (IPv4) or ``/128`` (IPv6); with ``networks``, also a network
    written with its prefix, host bits clear, at least ``/8`` (IPv4) or ``/32`` (IPv6) long. Anything else (a
    keyword such as ``any``, a host name, a line break) is refused, naming ``name`` (and the label)."""
    allowed: list[str] = []
    for label, value in _entries(addresses, name):
        text = one_line(value, label).strip()
        kind = "an IP address or network" if networks else "an IP address"
        try:
            if "/" in text and networks:
                network: ipaddress.IPv4Network | ipaddress.IPv6Network = ipaddress.ip_network(text, strict=True)
            else:
                address = ipaddress.ip_address(text)
                network = ipaddress.ip_network(address)
        except ValueError:
            raise SystemdUnitError(f"{label} must be {kind}, got {text!r}") from None
        if network.network_address.is_unspecified:
            raise SystemdUnitError(f"{label} must not be the unspecified address ({text}): it would admit everyone")
        if network.prefixlen < MIN_PREFIX[network.version]:
            raise SystemdUnitError(
                f"{label} {text} is wider than /{MIN_PREFIX[network.version]}: it would admit practically everyone; name the clients' addresses"
            )
        entry = str(network) if "/" in text else f"{network.network_address}/{network.max_prefixlen}"
        if entry not in allowed:
            allowed.append(entry)
    return allowed
