"""Where cdc knowingly differs from Debezium's recorded output, and why.

Each entry is a place where Debezium's value is a defect no consumer should rely on; every one is
listed in docs/debezium-differences.md (with the option that restores Debezium's behaviour where
there is one). The comparison rewrites Debezium's normalised records with cdc's value at that
place, so the rest of each record is still compared field for field. ``IGNORED`` marks a place
compared elsewhere (its reason says where), blanked on both sides.

A path is dotted: ``*`` matches every name (or element) at its level, ``fields[name]`` the
struct field of that name in a schema's field list.
"""
from __future__ import annotations

import base64
import copy
import fnmatch
import re
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

Record = dict[str, Any]
IGNORED = "<differs from Debezium: see deviations.py>"


@dataclass(frozen=True)
class Deviation:
    workloads: str  # fnmatch pattern of workload names
    path: str
    ours: Callable[[Any, Record], Any] | str  # cdc's value from Debezium's value and record, or IGNORED
    reason: str
    where: Callable[[Record], bool] = lambda record: True


def _after_id(record: Record) -> Any:
    value = record.get("value") or {}
    payload = value.get("payload") or {}
    row = payload.get("after") or payload.get("before") or {}
    return row.get("id")


def by_id(values: dict[Any, Any]) -> Callable[[Any, Record], Any]:
    """cdc's value given per row id (where Debezium's value has lost it)."""
    return lambda theirs, record: values.get(_after_id(record), theirs)


def _shortest_float32(theirs: Any, record: Record) -> Any:
    if not isinstance(theirs, float):
        return theirs
    try:
        single = struct.unpack("<f", struct.pack("<f", theirs))[0]
    except OverflowError:  # Java's Float.MAX_VALUE printed with more digits than it has
        return theirs
    for digits in range(1, 10):
        candidate = float(f"{single:.{digits}g}")
        try:
            if struct.unpack("<f", struct.pack("<f", candidate))[0] == single:
                return candidate
        except OverflowError:  # rounded past Float.MAX_VALUE: more digits
            continue
    return theirs


def _negative_scale(theirs: Any, record: Record) -> Any:
    """Debezium reads numeric(5,-2)'s scale -2 as 2046, so its unscaled value is 10^2048 too big."""
    if not isinstance(theirs, str):
        return theirs
    unscaled = int.from_bytes(base64.b64decode(theirs), "big", signed=True) // 10 ** 2048
    length = (unscaled + (unscaled < 0)).bit_length() // 8 + 1
    return base64.b64encode(unscaled.to_bytes(length, "big", signed=True)).decode()


_SQL_ESCAPES = {"0": "\0", "b": "\b", "n": "\n", "r": "\r", "t": "\t", "Z": "\x1a", "%": "\\%", "_": "\\_"}


def _sql_unescaped(theirs: Any, record: Record) -> Any:
    """A comment as the server stores it: Debezium quotes the literal's text as written, its escapes
    (\\ \" '') left in."""
    if not isinstance(theirs, str):
        return theirs
    out, i = [], 0
    while i < len(theirs):
        c = theirs[i]
        if c == "\\" and i + 1 < len(theirs):
            out.append(_SQL_ESCAPES.get(theirs[i + 1], theirs[i + 1]))
            i += 2
        elif c in "'\"" and theirs[i + 1:i + 2] == c:
            out.append(c)
            i += 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _op(record: Record) -> str | None:
    value = record.get("value") or {}
    return (value.get("payload") or {}).get("op")


DEVIATIONS: list[Deviation] = [
    *[Deviation("mariadb_comments*", path, _sql_unescaped,
                "a column or table comment: the text the server stores (Debezium leaves the literal's escapes in)")
      for path in ("value.payload.tableChanges[*].table.columns[*].comment",
                   "value.payload.tableChanges[*].table.comment",
                   "value.schema.fields[*].fields[*].doc", "key.schema.fields[*].doc")],
    *[Deviation(workload, f"value.payload.after.{column}", by_id({6: value}),
                "a DATETIME of year 0 read by the snapshot: year 0 (adjusted: 2000, as a DATE of year 0 is); "
                "Debezium's JDBC driver reads it as year 1", where=lambda r: _op(r) == "r")
      for workload, values in (("mariadb_time_adjust", {"dt0": 946684800000, "dt3": 962359200250,
                                                        "dt6": 978307199999999}),
                               ("mariadb_time_adjust_off", {"dt0": -62167219200000, "dt3": -62151544799750,
                                                            "dt6": -62135596800000001}))
      for column, value in values.items()],
    Deviation("pg_numeric_edges", "value.schema.fields[*].fields[n_5_neg].parameters.scale", lambda t, r: "-2",
              "numeric(5,-2): PostgreSQL 15's negative scale, which Debezium reads as 2046"),
    Deviation("pg_numeric_edges", "value.payload.*.n_5_neg", _negative_scale,
              "numeric(5,-2): the value at scale -2 (Debezium's is 10^2048 times too large)"),
    Deviation("pg_numeric_edges", "value.payload.*.f4", _shortest_float32,
              "float4: the shortest decimal that reads back as the same float, as Java 19+ prints it "
              "(Debezium on Java 17 prints more digits, a different double)"),
    Deviation("mariadb_numeric", "value.payload.*.f", _shortest_float32,
              "FLOAT: the shortest decimal that reads back as the same float (Java 19+), as for PostgreSQL's float4"),
    Deviation("mariadb_temporal", "value.payload.*.y", lambda theirs, record: 0 if theirs == 1900 else theirs,
              "YEAR 0000: 0 (Debezium writes 1900, which YEAR cannot hold)"),
    Deviation("mariadb_special", "value.payload.*.u",
              lambda theirs, record: {"0000123e-4567-e89b-12d3-a45642665544":
                                      "123e4567-e89b-12d3-a456-426655440000"}.get(theirs, theirs),
              "a UUID ending in zero bytes: the binlog drops them and Debezium pads on the wrong side"),
    Deviation("mariadb_schema_evolution", "value.payload.*.b", lambda theirs, record: None,
              "a NULL in a column whose DEFAULT was set after the row was written: the binlog says NULL, "
              "Debezium writes the new default", where=lambda r: r.get("topic") == "dbz.lab.evo" and _op(r) == "u"),
    Deviation("mariadb_schema_evolution", "value.payload.source.row", lambda theirs, record: 0,
              "the row number of a DDL event: 0 (Debezium repeats the row of the rows event before it)",
              where=lambda r: r.get("topic") == "dbz"),
    Deviation("pg_special_types", "value.payload.after.nm", by_id({1: "a_name", 2: ""}),
              "the name type: its text (Debezium writes null)"),
    Deviation("pg_arrays", "value.schema.fields[*].fields[a_2d].items",
              lambda t, r: {"type": "array", "items": t, "optional": True},
              "int[][]: an array of arrays (Debezium: one level whose elements are null)"),
    Deviation("pg_arrays", "value.payload.after.a_2d", by_id({1: [[1, 2], [3, 4]], 2: [[1, None], [None, 4]], 3: [],
                                                          5: [[5]]}),
              "int[][]: the values (Debezium writes null for each inner array)"),
    Deviation("pg_arrays", "value.payload.after.a_date", by_id({5: [-2147472692]}),
              "date 'infinity' inside an array: the same value as a date column gets (Debezium: another)"),
    Deviation("pg_array_edges", "value.payload.after.nums", by_id({1: [{"scale": 1, "value": "Dw=="}, None]}),
              "NaN inside a numeric[]: that element null, as in a numeric column (Debezium: the whole array null)"),
    Deviation("pg_array_edges", "value.payload.after.n2", by_id({1: ["fQ==", None]}),
              "NaN inside a numeric(6,2)[]: that element null (Debezium: the whole array null)"),
    Deviation("pg_array_edges", "value.payload.after.ds", by_id({1: [19723, -735160]}),
              "a BC date inside a date[]: the date (Debezium drops the era: 0044-03-15 AD)"),
    Deviation("pg_array_edges", "value.payload.after.ts", by_id({1: [1704067200000000, -63517788000000000]}),
              "a BC timestamp inside a timestamp[]: the instant, proleptic Gregorian as for a timestamp column "
              "(Debezium: the Julian calendar, two days off)"),
    Deviation("pg_array_edges", "value.payload.after.tz", by_id({1: ["2024-01-01T00:00:00.000000Z",
                                                                   "-0043-03-15T10:00:00.000000Z"]}),
              "a BC timestamptz inside a timestamptz[]: ISO year -0043 (Debezium drops the era: 0044)"),
    Deviation("pg_temporal_edges", "value.payload.after.ts", by_id({5: 9223372036854775807}),
              "a timestamp past the int64 microsecond range (294276 AD): saturated at the largest int64, as "
              "Debezium does for intervals (its timestamp overflows into a negative number)"),
    Deviation("pg_defaults*", "value.schema.fields[*].fields[lit_q].default", lambda theirs, record: "it's",
              "a text default with a doubled quote ('it''s'): the literal (Debezium's pattern stops at the "
              "first quote inside it: 'it')"),
    Deviation("pg_defaults*", "value.payload.before.lit_q", lambda theirs, record: "it's",
              "(the same default, in a delete's before-image under REPLICA IDENTITY DEFAULT)"),
    Deviation("pg_types_more*", "key", IGNORED,
              "a row written before RENAME TABLE, read after it: Debezium finds no table of the old name and "
              "builds it from the relation message alone (no key, every column optional); cdc keeps the "
              "table's key and nullability from the catalog, and the old name (topic, source.table) as Debezium",
              where=lambda r: r.get("topic") == "dbz.public.ren"),
    Deviation("pg_types_more*", "value.schema", IGNORED, "(the same event's schema)",
              where=lambda r: r.get("topic") == "dbz.public.ren"),
    *(Deviation(workload, "key.payload.id", lambda theirs, record: 1,
                "a key column left out of the rows (column.include.list / column.exclude.list): the snapshot's "
                "key holds the row's key value (Debezium writes 0, the int's zero)",
                where=lambda r: r.get("topic", "").endswith(".notes") and _op(r) == "r")
      for workload in ("pg_column_include", "pg_column_exclude_key", "mariadb_column_names")),
    *(Deviation(workload, "key.schema.fields[id].optional", lambda theirs, record: False,
                "(the same key in the stream: its field required, as in the snapshot; Debezium's PostgreSQL "
                "connector declares it optional there)", where=lambda r: r.get("topic") == "dbz.public.notes")
      for workload in ("pg_column_include", "pg_column_exclude_key")),
    Deviation("mariadb_column_masks", "value.payload.after.tz", lambda theirs, record: "2024-01-02T03:04:05.000000Z",
              "a TIMESTAMP(6) read by the snapshot: its six fraction digits, as the stream writes them (Debezium's "
              "snapshot drops zero digits: 03:04:05Z)",
              where=lambda r: _op(r) == "r" and r.get("topic") == "dbz.lab.typed"),
    Deviation("mariadb_initial_statements", "value.payload.after.ts", by_id({1: "2024-02-29T12:00:00Z"}),
              "a TIMESTAMP read by the snapshot after database.initial.statements set the session time_zone to "
              "+05:00: the instant stored, as the binlog gives it (Debezium reads the zone's local time as UTC, "
              "17:00Z); cdc sets time_zone back to +00:00 after the statements",
              where=lambda r: _op(r) == "r"),
    Deviation("mariadb_custom_converter", "value.payload.after.u", by_id({3: True}),
              "TINYINT(1) UNSIGNED 255 through TinyIntOneToBooleanConverter in the stream: true, as in the snapshot "
              "(Debezium's stream reads the binlog's byte as signed, -1, and writes false)"),
    *(Deviation("pg_snapshot_order*", f"value.payload.source.{name}", IGNORED,
                "the first change streamed after a snapshot can sit at the snapshot's own LSN and xmin when nothing "
                "was written in between; Debezium's start writes WAL of its own, so its LSNs differ there",
                where=lambda r: _op(r) == "c") for name in ("lsn", "txId", "sequence")),
    Deviation("mariadb_add_if_not_exists", "value.payload.tableChanges", IGNORED,
              "ADD COLUMN IF NOT EXISTS of a column that exists: the table as the server keeps it, column a still "
              "an INT (Debezium replaces it with the new definition); the row after it checks the same",
              where=lambda r: r.get("topic") == "dbz"),
    Deviation("mariadb_add_if_not_exists", "value.schema.fields[*].fields[a].type", lambda theirs, record: "int32",
              "(the same) a is an INT: int32 (Debezium: string, the definition the server did not apply)"),
    Deviation("mariadb_add_if_not_exists", "value.payload.after.a", by_id({1: 5}),
              "(the same) the row's value of a, 5 (Debezium decodes the INT as VARCHAR: null)"),
    Deviation("pg_schema_evolution", "key", IGNORED,
              "after RENAME COLUMN Debezium builds the table from the relation message alone: no key, every "
              "column optional, no defaults; cdc keeps the key (tests/integration/test_pg_stream.py)",
              where=lambda r: _op(r) == "u" and r.get("topic") == "dbz.public.evo"
              and ((r.get("value") or {}).get("payload") or {}).get("after", {}).get("bb") == 6),
    Deviation("pg_schema_evolution", "value.schema", IGNORED, "(the same event's schema)",
              where=lambda r: _op(r) == "u" and r.get("topic") == "dbz.public.evo"
              and ((r.get("value") or {}).get("payload") or {}).get("after", {}).get("bb") == 6),
]


def _transaction_ids(records: list[Record]) -> None:
    """PostgreSQL: Debezium's ids are 'txid:LSN' with each event's own LSN (BEGIN, the events and END
    of one transaction differ); cdc's one per transaction (transaction.id.mode=transaction). Both
    are reduced to the transaction id; the 'debezium' mode is compared whole in its own case."""
    for record in records:
        value = record.get("value") or {}
        payload = value.get("payload") or {}
        block = payload.get("transaction")
        if isinstance(block, dict) and isinstance(block.get("id"), str):
            block["id"] = block["id"].split(":")[0]
        if payload.get("status") in ("BEGIN", "END"):
            payload["id"] = payload["id"].split(":")[0]
            key = record.get("key") or {}
            if isinstance(key.get("payload"), dict):
                key["payload"]["id"] = key["payload"]["id"].split(":")[0]


def _no_begin_without_end(records: list[Record]) -> None:
    """MariaDB: Debezium opens a transaction (BEGIN) at a DDL statement's GTID and never ends it;
    cdc emits no BEGIN for a DDL (it has no data events)."""
    ended = {((r.get("value") or {}).get("payload") or {}).get("id") for r in records
             if ((r.get("value") or {}).get("payload") or {}).get("status") == "END"}
    records[:] = [r for r in records if not (((r.get("value") or {}).get("payload") or {}).get("status") == "BEGIN"
                                             and r["value"]["payload"]["id"] not in ended)]


def _close_xa_groups(records: list[Record]) -> None:
    """MariaDB XA: Debezium opens a transaction (BEGIN) at every GTID and ends it only at an XID or
    COMMIT, so a prepared XA group (rows, XA END, XA PREPARE) is never ended, nor is the group of
    its later XA COMMIT/ROLLBACK (no rows). cdc ends the prepared group after its rows and emits no
    BEGIN for a group without rows: Debezium's BEGIN without rows goes, and one with rows gets the
    END cdc writes (event counts from its events, data_collections in Java's HashMap order)."""
    from cdc.core.transactions import java_hashmap_order

    def payload(r: Record) -> dict[str, Any]:
        return (r.get("value") or {}).get("payload") or {}

    template = next((r for r in records if payload(r).get("status") == "END"), None)
    ended = {payload(r).get("id") for r in records if payload(r).get("status") == "END"}
    out: list[Record] = []
    open_id: str | None = None
    counts: dict[str, int] = {}

    def close() -> None:
        if open_id is None or open_id in ended:
            return
        if not counts:  # a BEGIN with nothing after it
            out[:] = [r for r in out if not (payload(r).get("status") == "BEGIN" and payload(r).get("id") == open_id)]
            return
        if template is None:
            return
        end = copy.deepcopy(template)
        end["key"]["payload"]["id"] = open_id
        end["value"]["payload"].update(id=open_id, event_count=sum(counts.values()), data_collections=[
            {"data_collection": name, "event_count": counts[name]} for name in java_hashmap_order(list(counts))])
        out.append(end)

    for record in records:
        body = payload(record)
        block = body.get("transaction")
        if body.get("status") == "BEGIN" or (record.get("value") is not None and open_id is not None
                                              and not (isinstance(block, dict) and block.get("id") == open_id)):
            close()
            open_id, counts = (body.get("id"), {}) if body.get("status") == "BEGIN" else (None, {})
        if isinstance(block, dict) and block.get("id") == open_id:
            collection = f"{body['source']['db']}.{body['source']['table']}"
            counts[collection] = counts.get(collection, 0) + 1
        out.append(record)
    close()
    records[:] = out


def _message_collections(records: list[Record]) -> None:
    """PostgreSQL: Debezium counts each transactional message under its own data collection, named
    after the message id's class and its identity hash (``...LogicalDecodingMessageId@7c384b4a``);
    cdc counts a transaction's messages together under the class name (data_collection_order 1, 2...)."""
    from cdc.core.transactions import java_hashmap_order
    from cdc.sources.postgres.stream import MESSAGE_DATA_COLLECTION

    seen: dict[str, int] = {}
    for record in records:
        payload = (record.get("value") or {}).get("payload") or {}
        block = payload.get("transaction")
        if payload.get("op") == "m" and isinstance(block, dict):
            seen[block["id"]] = seen.get(block["id"], 0) + 1
            block["data_collection_order"] = seen[block["id"]]
        collections = payload.get("data_collections")
        if payload.get("status") == "END" and collections:
            counts: dict[str, int] = {}
            for entry in collections:
                name = entry["data_collection"].split("@")[0] if "LogicalDecodingMessageId@" in \
                    entry["data_collection"] else entry["data_collection"]
                counts[name] = counts.get(name, 0) + entry["event_count"]
            if MESSAGE_DATA_COLLECTION in counts:
                payload["data_collections"] = [{"data_collection": name, "event_count": counts[name]}
                                               for name in java_hashmap_order(list(counts))]


def _notifications_last(records: list[Record]) -> None:
    """Notification records after the data events, in their own order, their random ids and times blanked:
    Debezium hands a snapshot's rows over one behind its notifications (it holds each back to mark the
    last), cdc in the order it reads them; on Kafka the two are different topics, whose relative order no
    consumer sees."""
    notes = [r for r in records if r.get("topic") == "dbz_notifications"]
    for note in notes:
        note["key"]["payload"]["id"] = "<id>"
        note["value"]["payload"].update(id="<id>", timestamp=0)
    records[:] = [r for r in records if r.get("topic") != "dbz_notifications"] + notes


def _no_signal_rows(records: list[Record]) -> None:
    """The signal table's rows (the signal, the incremental snapshot's watermarks): Debezium emits them as
    change events when the table is captured, cdc never does (docs/signals.md)."""
    records[:] = [r for r in records if not r.get("topic", "").endswith(".debezium_signal")]


RAW: list[tuple[str, Callable[[list[Record]], None]]] = [("pg_notifications*", _notifications_last),
                                                         ("pg_incremental_notifications", _no_signal_rows),
                                                         ("pg_incremental_notifications", _notifications_last),
                                                         ("mariadb_notifications", _notifications_last),
                                                         ("pg_transactions", _transaction_ids),
                                                         ("pg_types_more*", _transaction_ids),
                                                         ("pg_topic_naming_*", _transaction_ids),
                                                         ("pg_types_more*", _message_collections),
                                                         ("pg_message_prefixes*", _message_collections),
                                                         ("mariadb_transactions", _no_begin_without_end),
                                                         ("mariadb_xa", _close_xa_groups)]


def apply_raw(workload: str, variant: str, records: list[Record]) -> list[Record]:
    """Rewrites of raw records (before normalisation), on both sides."""
    if variant == "default":
        for pattern, rewrite in RAW:
            if fnmatch.fnmatch(workload, pattern):
                rewrite(records)
    return records


def apply(workload: str, theirs: list[Record], ours: list[Record] | None = None) -> list[Record]:
    for deviation in DEVIATIONS:
        if not fnmatch.fnmatch(workload, deviation.workloads):
            continue
        for side in (theirs, ours) if deviation.ours == IGNORED and ours is not None else (theirs,):
            for record in side:
                if deviation.where(record):
                    _rewrite(record, _parts(deviation.path), deviation.ours, record)
    return theirs


def _parts(path: str) -> list[str]:
    return re.findall(r"[^.\[]+(?:\[[^\]]*\])?", path)


def _rewrite(node: Any, parts: list[str], ours: Callable[[Any, Record], Any] | str, record: Record) -> None:
    if not parts:
        return
    head, rest = parts[0], parts[1:]
    match = re.fullmatch(r"([^\[]+)\[([^\]]*)\]", head)
    if match:  # fields[name]: into a schema's field list
        if not isinstance(node, dict) or not isinstance(node.get(match.group(1)), list):
            return
        items = [f for f in node[match.group(1)] if isinstance(f, dict) and (match.group(2) == "*"
                                                                            or f.get("field") == match.group(2))]
        for item in items:
            if rest:
                _rewrite(item, rest, ours, record)
        return
    if not isinstance(node, dict):
        return
    names = list(node) if head == "*" else [head] if head in node else []
    for name in names:
        if rest:
            _rewrite(node[name], rest, ours, record)
        elif node[name] is not None or head != "*":
            node[name] = ours if isinstance(ours, str) else ours(node[name], record)


def prepare(workload: str, variant: str, ours: list[Record], theirs: list[Record]) -> tuple[list[Record], list[Record]]:
    """Both runs normalised and with the documented differences applied, ready to compare."""
    from tests.conformance import compare

    a = compare.normalize(apply_raw(workload, variant, [dict(r) for r in ours]))
    b = compare.normalize(apply_raw(workload, variant, [dict(r) for r in theirs]))
    apply(workload, b, a)
    return a, b
