"""GTIDs of both flavours: the transactions delivered so far (the offset's ``gtids``), what a server
holds, and how the two compare.

MySQL: a GTID is ``uuid:n``; a set is intervals per source uuid (``gtid_executed``: ``uuid:1-12:15``),
and any transaction can be asked about. MariaDB: a GTID is ``domain-server-seq``, and within a domain
sequence numbers only grow (``gtid_strict_mode``), so a position is the last GTID per domain
(``gtid_binlog_pos``: ``0-1-12,1-2-7``): every transaction of the domain up to it. A server's
``gtid_binlog_state`` keeps the last sequence number per (domain, server).

The *source* of a GTID is what ``gtid.source.includes`` / ``excludes`` match (Debezium's): MySQL's
uuid, MariaDB's ``domain-server``.
"""
from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

Interval = tuple[int, int]  # closed: first and last transaction number
Wanted = Callable[[str], bool]  # a GTID source -> whether its transactions are captured

_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_MARIADB_GTID = re.compile(r"(\d+)-(\d+)-(\d+)")


def is_mariadb_text(text: str) -> bool:
    """A MariaDB position (``0-1-5``) rather than a MySQL set (``uuid:1-5``)."""
    return ":" not in text and bool(text.strip())


def source_of(gtid: str) -> str:
    """The source ``gtid.source.includes`` matches: MySQL's uuid, MariaDB's ``domain-server``."""
    if ":" in gtid:
        return gtid.split(":", 1)[0].lower()
    return gtid.rsplit("-", 1)[0]


@dataclass
class MySqlGtids:
    """A MySQL GTID set: source uuid -> sorted, disjoint, non-adjacent closed intervals."""

    ranges: dict[str, list[Interval]] = field(default_factory=dict)

    @classmethod
    def parse(cls, text: str | None) -> MySqlGtids:
        """``uuid:1-5:7,uuid2:3`` (newlines and spaces as MySQL prints them are fine); ValueError when it is
        not a GTID set."""
        gtids = cls()
        for part in (text or "").replace("\n", "").split(","):
            part = part.strip()
            if not part:
                continue
            uuid, *intervals = part.split(":")
            uuid = uuid.strip().lower()
            if not _UUID.fullmatch(uuid) or not intervals:
                raise ValueError(f"{part!r} is not a MySQL GTID set entry (uuid:first-last)")
            for interval in intervals:
                first, _, last = interval.strip().partition("-")
                if not first.isdigit() or (last and not last.isdigit()):
                    raise ValueError(f"{part!r}: {interval!r} is not a transaction number or range (a tagged GTID "
                                     "of MySQL 8.4 is not supported)")
                gtids._add(uuid, (int(first), int(last or first)))
        return gtids

    def _add(self, uuid: str, interval: Interval) -> None:
        merged: list[Interval] = []
        first, last = interval
        for a, b in self.ranges.get(uuid, []):
            if b + 1 < first or last + 1 < a:  # apart, not even adjacent
                merged.append((a, b))
            else:
                first, last = min(a, first), max(b, last)
        merged.append((first, last))
        self.ranges[uuid] = sorted(merged)

    def add(self, gtid: str) -> None:
        """One transaction, ``uuid:n``; one already in the set changes nothing."""
        uuid, _, number = gtid.rpartition(":")
        self._add(uuid.lower(), (int(number), int(number)))

    def contains(self, other: MySqlGtids) -> bool:
        """Every transaction of ``other`` is in this set."""
        return not other.minus(self)

    def union(self, other: MySqlGtids) -> MySqlGtids:
        out = MySqlGtids({uuid: list(intervals) for uuid, intervals in self.ranges.items()})
        for uuid, intervals in other.ranges.items():
            for interval in intervals:
                out._add(uuid, interval)
        return out

    def minus(self, other: MySqlGtids) -> MySqlGtids:
        """The transactions of this set that ``other`` lacks."""
        out = MySqlGtids()
        for uuid, intervals in self.ranges.items():
            left = list(intervals)
            for a, b in other.ranges.get(uuid, []):
                cut: list[Interval] = []
                for first, last in left:
                    if last < a or b < first:
                        cut.append((first, last))
                        continue
                    if first < a:
                        cut.append((first, a - 1))
                    if b < last:
                        cut.append((b + 1, last))
                left = cut
            if left:
                out.ranges[uuid] = left
        return out

    def only(self, keep: Wanted) -> MySqlGtids:
        """The transactions of the sources ``keep`` accepts."""
        return MySqlGtids({uuid: list(i) for uuid, i in self.ranges.items() if keep(uuid)})

    def __bool__(self) -> bool:
        return bool(self.ranges)

    def __str__(self) -> str:
        return ",".join(f"{uuid}:" + ":".join(str(a) if a == b else f"{a}-{b}" for a, b in self.ranges[uuid])
                        for uuid in sorted(self.ranges))


@dataclass
class MariaDbGtids:
    """MariaDB GTIDs: the last sequence number per (domain, server), as ``gtid_binlog_state`` lists them; an
    offset's position (``gtid_binlog_pos``) is the same with one entry per domain."""

    last: dict[tuple[int, int], int] = field(default_factory=dict)

    @classmethod
    def parse(cls, text: str | None) -> MariaDbGtids:
        """``0-1-12,1-2-7`` (also ``[0-1-12]`` as a Gtid_list event shows it); ValueError when it is not."""
        gtids = cls()
        for part in (text or "").strip().strip("[]").replace("\n", "").split(","):
            part = part.strip()
            if not part:
                continue
            match = _MARIADB_GTID.fullmatch(part)
            if match is None:
                raise ValueError(f"{part!r} is not a MariaDB GTID (domain-server-sequence)")
            gtids.add(part)
        return gtids

    def add(self, gtid: str) -> None:
        domain, server, seq = (int(x) for x in gtid.split("-"))
        if seq > self.last.get((domain, server), -1):
            self.last[(domain, server)] = seq

    def domains(self) -> dict[int, tuple[int, int]]:
        """domain -> (server, seq) of its last GTID: the position a replica connects with."""
        out: dict[int, tuple[int, int]] = {}
        for (domain, server), seq in self.last.items():
            if domain not in out or seq > out[domain][1]:
                out[domain] = (server, seq)
        return out

    def holds(self, gtid: tuple[int, int, int]) -> bool:
        """Whether this binlog state reaches that GTID of its (domain, server)."""
        domain, server, seq = gtid
        return self.last.get((domain, server), -1) >= seq

    def contains(self, other: MariaDbGtids) -> bool:
        """Every transaction of ``other`` is in this position: per domain, this one is as far or further."""
        mine = self.domains()
        return all(domain in mine and mine[domain][1] >= seq for domain, (_, seq) in other.domains().items())

    def union(self, other: MariaDbGtids) -> MariaDbGtids:
        out = MariaDbGtids(dict(self.last))
        for (domain, server), seq in other.last.items():
            out.add(f"{domain}-{server}-{seq}")
        return out

    def __bool__(self) -> bool:
        return bool(self.last)

    def __str__(self) -> str:
        """The position: one GTID per domain (MariaDB's ``slave_connect_state`` takes no more)."""
        return ",".join(f"{d}-{s}-{n}" for d, (s, n) in sorted(self.domains().items()))


GtidSet = MySqlGtids | MariaDbGtids


def parse_gtids(text: str | None, mariadb: bool | None = None) -> GtidSet:
    """The GTIDs of an offset or a server; ``mariadb`` None: the flavour the text is written in."""
    if mariadb is None:
        mariadb = is_mariadb_text(text or "")
    return MariaDbGtids.parse(text) if mariadb else MySqlGtids.parse(text)


def covers(desired: str, recorded: str) -> bool:
    """Whether the GTIDs ``desired`` include every transaction of ``recorded`` (both one flavour's)."""
    mine, theirs = parse_gtids(desired), parse_gtids(recorded)
    if isinstance(mine, MySqlGtids) and isinstance(theirs, MySqlGtids):
        return mine.contains(theirs)
    if isinstance(mine, MariaDbGtids) and isinstance(theirs, MariaDbGtids):
        return mine.contains(theirs)
    return False


class DeliveredGtids:
    """The transactions read whole so far (from the stored offset's set on): the offset's ``gtids``."""

    def __init__(self, mariadb: bool, initial: str | None) -> None:
        self.mariadb = mariadb
        self._gtids: GtidSet = parse_gtids(initial, mariadb)

    def add(self, gtid: str) -> None:
        self._gtids.add(gtid)

    def __str__(self) -> str:
        return str(self._gtids)

    def text(self) -> str | None:
        return str(self) or None
