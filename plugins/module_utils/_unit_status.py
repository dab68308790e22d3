# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The state of a node's systemd units and their last warnings, read with systemctl and journalctl.

Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.

:func:`collect` finds the units whose names match the patterns (loaded units and unit files), reads their state
with one ``systemctl show`` (``--timestamp=unix``; a systemd that does not know it is asked again without it and its
default timestamps are parsed) and their last journal entries at priority warning or worse with one
``journalctl -o json``. Every command runs through the caller's ``run`` (argv in, rc, stdout and stderr out);
what fails is a note, never an exception.
"""

from __future__ import annotations

import fnmatch
import json
import re
import typing as t
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta, timezone

from ansible_collections.sparkops.inference.plugins.module_utils._run_command import Runner

DEFAULT_PATTERNS: tuple[str, ...] = ("sparkops-*",)
DEFAULT_JOURNAL_LINES = 10
MESSAGE_CHARS = 300
SHOW_PROPERTIES: tuple[str, ...] = (
    "Id",
    "LoadState",
    "ActiveState",
    "SubState",
    "UnitFileState",
    "ActiveEnterTimestamp",
    "StateChangeTimestamp",
    "NRestarts",
    "MainPID",
    "Result",
)
LIST_UNITS: tuple[str, ...] = ("list-units", "--all", "--plain", "--no-legend", "--no-pager")
LIST_UNIT_FILES: tuple[str, ...] = ("list-unit-files", "--plain", "--no-legend", "--no-pager")
UNIX_TIMESTAMPS = "--timestamp=unix"
# syslog priorities by number, as journalctl -p names them.
PRIORITIES: tuple[str, ...] = ("emerg", "alert", "crit", "err", "warning", "notice", "info", "debug")
STATUS_MARKS = ("●", "*", "○", "×")

# systemd's default timestamp: "Sat 2026-01-31 12:00:00 UTC", with microseconds in --timestamp=us, the zone an
# abbreviation (UTC, CET, ...) or an offset.
_DEFAULT_TIMESTAMP = re.compile(r"^(?:[A-Za-z]{3} )?(?P<date>\d{4}-\d{2}-\d{2}) (?P<time>\d{2}:\d{2}:\d{2})(?P<fraction>\.\d{1,9})?(?: (?P<zone>\S+))?$")
_OFFSET = re.compile(r"^(?:UTC|GMT)?(?P<sign>[+-])(?P<hours>\d{2}):?(?P<minutes>\d{2})$")
_UTC_ZONES = frozenset(("UTC", "GMT", "Z", "UCT", "Etc/UTC"))

# A naive datetime (the host's local time) as seconds since the epoch; tests pass their own.
Localizer = t.Callable[[datetime], float]


def _local_epoch(moment: datetime) -> float:
    return moment.timestamp()


@dataclass
class UnitState:
    """One unit as ``systemctl show`` describes it."""

    unit: str
    load_state: str | None = None
    active_state: str | None = None
    sub_state: str | None = None
    enabled: str | None = None
    since: str | None = None
    since_epoch: int | None = None
    restarts: int | None = None
    main_pid: int | None = None
    result: str | None = None

    def as_dict(self) -> dict[str, t.Any]:
        return asdict(self)


@dataclass
class HealthEvent:
    """One journal entry of a unit at priority warning or worse."""

    time: str | None
    time_epoch: float | None
    unit: str | None
    priority: str | None
    message: str

    def as_dict(self) -> dict[str, t.Any]:
        return asdict(self)


@dataclass
class UnitReport:
    """What :func:`collect` found: the units (by name), the health events (newest first) and what could not be read."""

    units: list[UnitState] = field(default_factory=list)
    health_events: list[HealthEvent] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, t.Any]:
        return {
            "units": [unit.as_dict() for unit in self.units],
            "health_events": [event.as_dict() for event in self.health_events],
            "notes": list(self.notes),
        }


def _oneline(*texts: str) -> str:
    for text in texts:
        stripped = " ".join(text.split())
        if stripped:
            return stripped[:300]
    return "no output"


def iso_utc(epoch: float) -> str:
    """Seconds since the epoch as ISO 8601 in UTC, to the second (``2026-01-31T12:00:00Z``)."""
    # datetime.UTC is Python 3.11+; modules also run on older Pythons.
    moment = datetime.fromtimestamp(int(epoch), timezone.utc)  # noqa: UP017
    return moment.isoformat().replace("+00:00", "Z")


# ---------------------------------------------------------------------------------------------------------------
# systemctl


def parse_unit_names(text: str) -> list[str]:
    """The unit names (first column) of ``systemctl list-units|list-unit-files --plain --no-legend``, in order.

    A leading status mark (``●``: systemctl prints one for failed or not-found units) is skipped.
    """
    names: list[str] = []
    for line in text.splitlines():
        fields = line.split()
        if fields and fields[0] in STATUS_MARKS:
            fields = fields[1:]
        if fields and "." in fields[0] and fields[0] not in names:
            names.append(fields[0])
    return names


def matching(names: t.Iterable[str], patterns: t.Sequence[str]) -> list[str]:
    """The names that match a pattern (shell globs over the whole name, as systemctl matches them), sorted.

    Templates (``name@.service``) are left out: they are not units that run.
    """
    return sorted({name for name in names if "@." not in name and any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns)})


def parse_show(text: str) -> list[dict[str, str]]:
    """The blocks of ``systemctl show`` output (one a unit, separated by blank lines), each a property dictionary."""
    blocks: list[dict[str, str]] = []
    current: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip():
            if current:
                blocks.append(current)
                current = {}
            continue
        key, sep, value = line.partition("=")
        if sep:
            current[key.strip()] = value.strip()
    if current:
        blocks.append(current)
    return blocks


def parse_timestamp(value: str | None, localize: Localizer = _local_epoch) -> float | None:
    """A systemd timestamp as seconds since the epoch; None when unset (empty, ``n/a``, ``0``) or not understood.

    Takes ``--timestamp=unix`` (``@1769860800``) and the default format (``Sat 2026-01-31 12:00:00 UTC``, with
    microseconds or a numeric offset too). A zone abbreviation other than UTC's is the host's local zone (systemd
    prints the zone of its own TZ), which ``localize`` converts: the module runs on that host.
    """
    if value is None:
        return None
    text = value.strip()
    if text in ("", "n/a", "0", "[not set]"):
        return None
    if text.startswith("@"):
        try:
            epoch = float(text[1:])
        except ValueError:
            return None
        return epoch if epoch > 0 else None
    match = _DEFAULT_TIMESTAMP.match(text)
    if not match:
        return None
    try:
        moment = datetime.strptime(f"{match['date']} {match['time']}", "%Y-%m-%d %H:%M:%S")
    except ValueError:
        return None
    fraction = float(match["fraction"]) if match["fraction"] else 0.0
    zone = match["zone"]
    if zone is None or zone in _UTC_ZONES:
        return moment.replace(tzinfo=timezone.utc).timestamp() + fraction  # noqa: UP017
    offset = _OFFSET.match(zone)
    if offset:
        delta = timedelta(hours=int(offset["hours"]), minutes=int(offset["minutes"]))
        zone_info = timezone(delta if offset["sign"] == "+" else -delta)
        return moment.replace(tzinfo=zone_info).timestamp() + fraction
    return localize(moment) + fraction


def _int(value: str | None) -> int | None:
    if value is None:
        return None
    try:
        return int(value.strip())
    except ValueError:
        return None


def _text(value: str | None) -> str | None:
    return value if value else None


def unit_state(unit: str, properties: t.Mapping[str, str], localize: Localizer = _local_epoch) -> UnitState:
    """The state of ``unit`` from its ``systemctl show`` properties.

    ``since`` is when the unit entered its current state: ``ActiveEnterTimestamp`` while active (as
    ``systemctl status`` says), else ``StateChangeTimestamp``.
    """
    active_state = _text(properties.get("ActiveState"))
    since = parse_timestamp(properties.get("ActiveEnterTimestamp"), localize) if active_state == "active" else None
    if since is None:
        since = parse_timestamp(properties.get("StateChangeTimestamp"), localize)
    if since is None:
        since = parse_timestamp(properties.get("ActiveEnterTimestamp"), localize)
    main_pid = _int(properties.get("MainPID"))
    return UnitState(
        unit=unit,
        load_state=_text(properties.get("LoadState")),
        active_state=active_state,
        sub_state=_text(properties.get("SubState")),
        enabled=_text(properties.get("UnitFileState")),
        since=None if since is None else iso_utc(since),
        since_epoch=None if since is None else int(since),
        restarts=_int(properties.get("NRestarts")),
        main_pid=main_pid if main_pid else None,
        result=_text(properties.get("Result")),
    )


def show_args(units: t.Sequence[str], unix_timestamps: bool = True) -> list[str]:
    """The ``systemctl show`` arguments (without the command) for ``units``."""
    return ["show", "--no-pager", "-p", ",".join(SHOW_PROPERTIES), *([UNIX_TIMESTAMPS] if unix_timestamps else []), *units]


def list_units(run: Runner, systemctl: str, patterns: t.Sequence[str], notes: list[str]) -> list[str]:
    """The loaded units and unit files that match ``patterns``, sorted; a listing that fails is a note."""
    names: list[str] = []
    for args in (LIST_UNITS, LIST_UNIT_FILES):
        rc, out, err = run([systemctl, *args, *patterns])
        # Some systemd versions exit 1 when the filter leaves nothing to list; that is an empty list, not a failure.
        if rc != 0 and (out.strip() or err.strip()):
            notes.append(f"systemctl {args[0]} failed (rc {rc}): {_oneline(err, out)}")
            continue
        names += parse_unit_names(out)
    return matching(names, patterns)


def show_units(run: Runner, systemctl: str, units: t.Sequence[str], notes: list[str], localize: Localizer = _local_epoch) -> list[UnitState]:
    """Each unit's state from one ``systemctl show``; asked again without ``--timestamp=unix`` when it is refused."""
    if not units:
        return []
    rc, out, err = run([systemctl, *show_args(units)])
    if rc != 0:
        # systemd before v251 does not know --timestamp=unix (before v247, --timestamp at all).
        rc, out, err = run([systemctl, *show_args(units, unix_timestamps=False)])
    if rc != 0:
        notes.append(f"systemctl show failed (rc {rc}): {_oneline(err, out)}")
        return [UnitState(unit=unit) for unit in units]
    blocks = parse_show(out)
    if len(blocks) == len(units):
        by_unit = dict(zip(units, blocks, strict=True))
    else:
        by_id = {block.get("Id", ""): block for block in blocks}
        by_unit = {unit: by_id.get(unit, {}) for unit in units}
        missing = [unit for unit in units if not by_unit[unit]]
        if missing:
            notes.append(f"systemctl show said nothing of {', '.join(missing)}")
    return [unit_state(unit, by_unit[unit], localize) for unit in units]


# ---------------------------------------------------------------------------------------------------------------
# journalctl


def journal_args(units: t.Sequence[str], lines: int) -> list[str]:
    """The ``journalctl`` arguments (without the command): the last ``lines`` entries of ``units`` at warning or worse."""
    args = ["--no-pager", "--quiet", "-o", "json", "-p", "warning", "-n", str(lines)]
    for unit in units:
        args += ["-u", unit]
    return args


def _message(value: t.Any) -> str:
    """MESSAGE as text (journalctl gives a list of byte values for one that is not UTF-8), cut to MESSAGE_CHARS."""
    if isinstance(value, list) and all(isinstance(item, int) and not isinstance(item, bool) for item in value):
        text = bytes(item & 0xFF for item in value).decode("utf-8", "replace")
    elif value is None:
        text = ""
    else:
        text = str(value)
    text = text.rstrip()
    if len(text) > MESSAGE_CHARS:
        text = text[: MESSAGE_CHARS - 1] + "…"
    return text


def _priority(value: t.Any) -> str | None:
    try:
        number = int(value)
    except (TypeError, ValueError):
        return None
    return PRIORITIES[number] if 0 <= number < len(PRIORITIES) else None


def _event_unit(entry: t.Mapping[str, t.Any], units: t.Collection[str]) -> str | None:
    """The unit an entry is about: its own (a unit's output), or the one systemd logs about (``UNIT``)."""
    candidates = [entry.get(key) for key in ("_SYSTEMD_UNIT", "UNIT", "USER_UNIT", "_SYSTEMD_USER_UNIT")]
    for candidate in candidates:
        if isinstance(candidate, str) and candidate in units:
            return candidate
    for candidate in (*candidates, entry.get("SYSLOG_IDENTIFIER")):
        if isinstance(candidate, str) and candidate:
            return candidate
    return None


def parse_journal(text: str, units: t.Collection[str] = ()) -> list[HealthEvent]:
    """The entries of ``journalctl -o json`` output (one JSON object a line), newest first; other lines are skipped."""
    events: list[HealthEvent] = []
    for line in text.splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if not isinstance(entry, dict):
            continue
        micros = _int(str(entry.get("__REALTIME_TIMESTAMP", "")))
        epoch = None if micros is None else micros / 1_000_000
        events.append(
            HealthEvent(
                time=None if epoch is None else iso_utc(epoch),
                time_epoch=epoch,
                unit=_event_unit(entry, units),
                priority=_priority(entry.get("PRIORITY")),
                message=_message(entry.get("MESSAGE")),
            )
        )
    # journalctl prints oldest first; a stable sort keeps its order for entries of the same microsecond.
    events.reverse()
    events.sort(key=lambda event: -(event.time_epoch or 0.0))
    return events


def health_events(run: Runner, journalctl: str, units: t.Sequence[str], lines: int, notes: list[str]) -> list[HealthEvent]:
    """The last ``lines`` journal entries of ``units`` at priority warning or worse, newest first."""
    if not units or lines <= 0:
        return []
    rc, out, err = run([journalctl, *journal_args(units, lines)])
    if rc != 0:
        notes.append(f"journalctl failed (rc {rc}): {_oneline(err, out)}")
        return []
    return parse_journal(out, units)


def collect(
    run: Runner,
    systemctl: str | None,
    journalctl: str | None,
    patterns: t.Sequence[str] = DEFAULT_PATTERNS,
    journal_lines: int = DEFAULT_JOURNAL_LINES,
    localize: Localizer = _local_epoch,
) -> UnitReport:
    """The units that match ``patterns``, their state and their last health events; what fails is a note."""
    report = UnitReport()
    if systemctl is None:
        report.notes.append("systemctl not found: no systemd units reported")
        return report
    names = list_units(run, systemctl, patterns, report.notes)
    report.units = show_units(run, systemctl, names, report.notes, localize)
    if journal_lines > 0 and names:
        if journalctl is None:
            report.notes.append("journalctl not found: no health events reported")
        else:
            report.health_events = health_events(run, journalctl, names, journal_lines, report.notes)
    return report
