"""What cdc does with each option of Debezium's connectors: honoured, mapped, or refused.

A Debezium configuration must run unchanged or not at all: an option that cdc silently ignored would
make the pipeline do something else than the configuration says (masked columns sent in clear, a
topic other than the one consumers read). So every option of the Debezium connector a source stands
in for (``cdc.core.debezium_options``, read from Debezium's jars) is one of:

- **honoured**: cdc declares it (an ``Option`` of the source, the core, a sink...) and does what
  Debezium documents;
- **mapped**: it tunes something only Kafka Connect's JVM has (a queue between threads, a Java class
  for an internal map); cdc accepts it and says here what it does instead;
- **refused**: cdc does not do what it asks; the pipeline refuses to start, naming it, why and what
  to do. Set to Debezium's own default it asks for nothing cdc does not do, and is accepted (a
  configuration that spells the defaults out still runs), unless ``at_default`` says otherwise.

A test (tests/unit/test_option_surface.py) fails when a Debezium option is neither declared by cdc nor
listed here, so a new Debezium version cannot add an option that cdc ignores without a word.
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from cdc.core.debezium_options import OPTIONS, VERSIONS

POSTGRES = "io.debezium.connector.postgresql.PostgresConnector"
MYSQL = "io.debezium.connector.mysql.MySqlConnector"
MARIADB = "io.debezium.connector.mariadb.MariaDbConnector"
SQLSERVER = "io.debezium.connector.sqlserver.SqlServerConnector"

CONNECTOR_TITLES = {POSTGRES: "PostgreSQL", MYSQL: "MySQL", MARIADB: "MariaDB", SQLSERVER: "SQL Server"}


@dataclass(frozen=True)
class Mapped:
    """Accepted: it tunes Kafka Connect's JVM, not the events; ``instead`` says what cdc does."""

    instead: str


@dataclass(frozen=True)
class Refused:
    """Not implemented: a configuration that sets it (to other than Debezium's default) does not start."""

    why: str
    fix: str = ""
    at_default: bool = True  # at Debezium's default it asks for what cdc does anyway: accepted


Treatment = Mapped | Refused

_JVM_QUEUE = Mapped("cdc hands the sink batches of at most max.batch.size events straight from the source's "
                    "thread; there is no queue between threads to size")
_JAVA_CLASS = "a Java class, which cdc cannot load"
_LATER = "not implemented in cdc yet"
_OPENLINEAGE = Mapped("read only with openlineage.integration.enabled=true, which cdc refuses")
# Debezium's MySQL and MariaDB connectors leave the schema lists out of their options, but its table filter
# still reads them (RelationalTableFilters): their tables have no schema, so an include list matches no table
# (nothing is captured) and an exclude list excludes none.
_NO_SCHEMAS = ("MySQL and MariaDB tables have no schema: Debezium's connector does not offer it (set anyway, "
               "schema.include.list matches no table, so nothing would be captured, and schema.exclude.list none)")


# Options of every connector, by name. A pattern option (column.mask.with.(d+).chars) is listed under
# Debezium's own spelling of it.
TREATMENTS: dict[str, Treatment] = {
    # ---- Kafka Connect's JVM: mapped ---------------------------------------------------------------------
    "max.queue.size": _JVM_QUEUE,
    "max.queue.size.in.bytes": _JVM_QUEUE,
    "queue.provider.type": Refused(f"the queue implementation is {_JAVA_CLASS}; cdc has no queue between threads"),
    "poll.interval.ms": Mapped("the source hands each batch over as soon as it is read; nothing polls a queue"),
    "memory.management.schemas.class": Refused(f"{_JAVA_CLASS}; cdc keeps its table models in Python"),
    "memory.management.tables.class": Refused(f"{_JAVA_CLASS}; cdc keeps its table models in Python"),
    "executor.shutdown.timeout.ms": Mapped("cdc's threads stop with the pipeline; a stop waits for the sink's "
                                           "flush and the last offset, not for an executor"),
    "connection.validation.timeout.ms": Mapped("Kafka Connect's validation of a new connector's settings; cdc "
                                               "checks the connection when it starts (connect.timeout.ms where "
                                               "the source declares it)"),
    "topic.cache.size": Mapped("topic names are computed once per table version; there is no cache to size"),
    "statistics.metrics.enabled": Mapped("Debezium's JMX statistics; cdc's Prometheus metrics are served with "
                                         "--metrics-port (cdc <source> --help)"),
    "legacy.snapshot.max.threads": Mapped("chooses between two Java implementations of the snapshot's threads; "
                                          "cdc has one"),
    "sourceinfo.struct.maker": Refused(f"{_JAVA_CLASS}; the source block is the connector's own"),
    "transaction.metadata.factory": Refused(f"{_JAVA_CLASS}; transaction metadata is Debezium's default shape"),
    "snapshot.mode.custom.name": Refused("a custom snapshotter is a Java service loaded by name", "use one of the "
                                         "snapshot.mode values cdc offers (cdc <source> --help)"),
    "snapshot.query.mode.custom.name": Refused(f"a custom snapshot query is {_JAVA_CLASS}",
                                               "use snapshot.select.statement.overrides where cdc offers it"),
    "snapshot.locking.mode.custom.name": Refused(f"a custom snapshot lock is {_JAVA_CLASS}"),
    "snapshot.query.mode": Refused("custom snapshot queries are Java services; cdc reads every column of every row "
                                   "(select_all, the default)"),
    "openlineage.integration.enabled": Refused("cdc does not emit OpenLineage events"),
    "openlineage.integration.config.file.path": _OPENLINEAGE,
    "openlineage.integration.dataset.kafka.bootstrap.servers": _OPENLINEAGE,
    "openlineage.integration.job.description": _OPENLINEAGE,
    "openlineage.integration.job.namespace": _OPENLINEAGE,
    "openlineage.integration.job.owners": _OPENLINEAGE,
    "openlineage.integration.job.tags": _OPENLINEAGE,
    "custom.metric.tags": Refused("cdc's metrics carry their own labels (connector, task, context); extra tags "
                                  "are " + _LATER),
    # ---- what events hold: refused until implemented -------------------------------------------------------
    "unavailable.value.placeholder": Refused("Debezium 3.6 writes it for the varchar(max), nvarchar(max) and "
                                             "varbinary(max) columns an update leaves alone; cdc does not mark them "
                                             "yet (the change table's value goes out)"),
    "event.processing.failure.handling.mode": Refused(_LATER + " (cdc stops at an event it cannot process, as "
                                                      "fail, the default, does)"),
    "inconsistent.schema.handling.mode": Refused(_LATER + " (cdc stops at rows of a table it has no schema for, "
                                                 "as fail, the default, does)"),
    "event.deserialization.failure.handling.mode": Refused(_LATER + " (cdc stops at a binlog event it cannot "
                                                           "read, as fail, the default, does)"),
    # ---- what is captured ---------------------------------------------------------------------------------
    "database.include.list": Refused("not an option of this connector"),
    "database.exclude.list": Refused("not an option of this connector"),
    "table.ignore.builtin": Refused("cdc never captures the database's own system tables"),
    "snapshot.tables.order.by.row.count": Refused(_LATER + " (tables are snapshotted in the include list's order, "
                                                  "then by name, as disabled, the default, does)"),
    "snapshot.max.threads": Refused("the initial snapshot reads one table at a time (Spark's format(\"cdc\") reads "
                                    "it in parallel on its executors)"),
    "snapshot.max.threads.multiplier": Refused("the initial snapshot reads one table at a time"),
    "snapshot.lock.timeout.ms": Refused(_LATER),
    "snapshot.locking.mode": Refused(_LATER),
    "snapshot.isolation.mode": Refused(_LATER),
    "snapshot.mode.configuration.based.snapshot.data": Refused("snapshot.mode=configuration_based is " + _LATER),
    "snapshot.mode.configuration.based.snapshot.schema": Refused("snapshot.mode=configuration_based is " + _LATER),
    "snapshot.mode.configuration.based.start.stream": Refused("snapshot.mode=configuration_based is " + _LATER),
    "snapshot.mode.configuration.based.snapshot.on.schema.error": Refused("snapshot.mode=configuration_based is "
                                                                          + _LATER),
    "snapshot.mode.configuration.based.snapshot.on.data.error": Refused("snapshot.mode=configuration_based is "
                                                                        + _LATER),
    "incremental.snapshot.allow.schema.changes": Refused(_LATER),
    "incremental.snapshot.watermarking.strategy": Refused(_LATER + " (watermarks are inserted rows, as "
                                                          "INSERT_INSERT, the default)"),
    "incremental.snapshot.option.recompile": Refused(_LATER),
    "guardrail.collections.max": Refused(_LATER),
    "guardrail.collections.limit.action": Mapped("read only with guardrail.collections.max, which cdc refuses"),
    "query.fetch.size": Refused(_LATER),
    "database.query.timeout.ms": Refused(_LATER),
    "database.initial.statements": Refused(_LATER + " for SQL Server"),
    "heartbeat.action.query": Refused(_LATER + " for SQL Server"),
    "include.schema.comments": Refused(_LATER + " for this connector"),
    "signal.poll.interval.ms": Refused(_LATER),
}

# Where a connector's option means something else than the shared one, or exists for it alone.
BY_CONNECTOR: dict[str, dict[str, Treatment]] = {
    POSTGRES: {
        "include.schema.comments": Mapped("Debezium's PostgreSQL connector puts no comment in its events either "
                                          "(checked against 3.6.1: tests/conformance/workloads/pg_comments.sql)"),
        "database.sslfactory": Refused(f"{_JAVA_CLASS} (pgjdbc's SSL socket factory)",
                                       "give the certificates with database.sslrootcert, database.sslcert and "
                                       "database.sslkey"),
        "flush.lsn.source": Refused(_LATER),
        "lsn.flush.mode": Refused(_LATER),
        "lsn.flush.timeout.ms": Refused(_LATER),
        "lsn.flush.timeout.action": Refused(_LATER),
        "offset.mismatch.strategy": Refused(_LATER),
        "schema.refresh.mode": Refused(_LATER + " (the columns of a table are read again when pgoutput describes "
                                       "it anew, as columns_diff, the default, does)"),
        "slot.stream.params": Refused(_LATER),
        "xmin.fetch.interval.ms": Refused(_LATER),
        "snapshot.isolation.mode": Refused(_LATER + " (the snapshot reads in the slot's exported snapshot, "
                                           "REPEATABLE READ)", at_default=False),
    },
    MYSQL: {
        **{name: Refused(_NO_SCHEMAS, "name the databases in database.include.list / database.exclude.list, or "
                         "the tables in table.include.list (database.table)")
           for name in ("schema.include.list", "schema.exclude.list")},
        "database.dbname": Mapped("Debezium's MySQL connector does not read it either (database.include.list "
                                  "says which databases are captured)"),
        "database.jdbc.driver": Refused(f"{_JAVA_CLASS}; cdc connects with PyMySQL"),
        "database.protocol": Refused("a JDBC URL protocol; cdc connects with PyMySQL"),
        "ddl.parser.type": Refused("cdc has one DDL parser"),
    },
    SQLSERVER: {
        "database.dbname": Refused("Debezium's SQL Server connector reads database.names since 2.0",
                                   "name the databases in database.names"),
        "max.iteration.transactions": Refused(_LATER),
        "streaming.fetch.size": Refused(_LATER),
    },
}
# Options that MySQL and MariaDB share, listed once.
_BINLOG: dict[str, Treatment] = {
    "unavailable.value.placeholder": Mapped("Debezium writes it for the BLOB/TEXT columns binlog_row_image=NOBLOB "
                                            "leaves out; cdc requires binlog_row_image=FULL, where every value is in "
                                            "the row image, so no value is ever unavailable"),
    "binlog.buffer.size": Refused(_LATER),
    "binlog.net.read.timeout": Refused(_LATER),
    "binlog.net.write.timeout": Refused(_LATER),
    "connect.keep.alive": Mapped("the binlog reader reconnects under errors.max.retries when its connection "
                                 "drops; there is no separate keep-alive thread"),
    "connect.keep.alive.interval.ms": Mapped("read only with connect.keep.alive"),
    "database.server.id.offset": Mapped("the server id of a snapshot's own binlog reader in Debezium's parallel "
                                        "snapshot; cdc reads the binlog with one reader"),
    "min.row.count.to.stream.results": Mapped("cdc always streams a snapshot's rows (an unbuffered cursor), "
                                              "whatever the table's size"),
    "use.nongraceful.disconnect": Mapped("cdc closes the binlog connection itself at stop"),
    "schema.history.internal.connector.class": Mapped("set by Kafka Connect for the schema history; cdc's records "
                                                      "name the pipeline themselves"),
    "schema.history.internal.connector.id": Mapped("set by Kafka Connect for the schema history; cdc's records "
                                                   "name the pipeline themselves"),
    "schema.history.internal.name": Mapped("the name of the schema history's Java object; cdc's history is named "
                                           "by its file or topic"),
    "schema.history.internal.prefer.ddl": Refused(_LATER),
}
BY_CONNECTOR[MYSQL].update(_BINLOG)
BY_CONNECTOR[MARIADB] = {**BY_CONNECTOR[MYSQL]}
BY_CONNECTOR[SQLSERVER].update({
    "schema.history.internal": Mapped("SQL Server describes its tables in its own catalog; cdc reads their "
                                      "columns from the capture instances and keeps no schema history"),
    **{name: Mapped("SQL Server's schema history is not needed: see schema.history.internal")
       for name in ("schema.history.internal.connector.class", "schema.history.internal.connector.id",
                    "schema.history.internal.name", "schema.history.internal.prefer.ddl",
                    "schema.history.internal.skip.unparseable.ddl",
                    "schema.history.internal.store.only.captured.databases.ddl",
                    "schema.history.internal.store.only.captured.tables.ddl")},
})


def debezium_options(connector_classes: Iterable[str]) -> dict[str, str]:
    """``{option: Debezium's default}`` of the connectors a source stands in for (the first's default wins)."""
    out: dict[str, str] = {}
    for cls in connector_classes:
        for name, (default, _) in OPTIONS.get(cls, {}).items():
            out.setdefault(name, default)
    return out


# A declared option whose default is the connector's own, where one source stands in for connectors that differ
# (the MySQL source: Debezium's MariaDB connector leaves TLS off, its MySQL one uses it when the server offers it).
CONNECTOR_DEFAULTS: dict[str, dict[str, str]] = {MARIADB: {"database.ssl.mode": "disable"}}


def connector_default(properties: Mapping[str, Any], name: str) -> str | None:
    """A declared option's default under the configuration's connector.class (None: the option's own)."""
    return CONNECTOR_DEFAULTS.get(str(properties.get("connector.class") or ""), {}).get(name)


def treatment(connector_class: str, name: str) -> Treatment | None:
    """cdc's treatment of a Debezium option it does not declare (None: the option is not listed)."""
    return BY_CONNECTOR.get(connector_class, {}).get(name) or TREATMENTS.get(name)


def _pattern(name: str) -> re.Pattern[str] | None:
    """Debezium's spelling of a pattern option as a regular expression (None: a plain name)."""
    if "(" not in name:
        return None
    parts = re.split(r"(\([^)]*\))", name)
    return re.compile("".join((r"(\d+)" if p == "(d+)" else p) if p.startswith("(") else re.escape(p)
                              for p in parts))


@dataclass(frozen=True)
class Surface:
    """Debezium's options for the connectors one source stands in for, and what cdc does with them."""

    connector_classes: tuple[str, ...]

    def lookup(self, name: str) -> tuple[str, str, Treatment | None] | None:
        """(Debezium's spelling, its default, cdc's treatment) of a property that is a Debezium option of
        these connectors (None: it is not one)."""
        for cls in self.connector_classes:
            options = OPTIONS.get(cls, {})
            spelled = name if name in options else next(
                (option for option in options if (p := _pattern(option)) is not None and p.fullmatch(name)), None)
            if spelled is not None:
                return spelled, options[spelled][0], treatment(cls, spelled)
        return None

    @classmethod
    def of(cls, source_cls: Any, properties: Mapping[str, Any]) -> Surface:
        """The options of the connectors a source class stands in for (``connector_classes``); of just the
        one a configuration names in ``connector.class`` (MariaDB's, say, for the MySQL source)."""
        # connector_classes is part of the Source protocol; a plugin written before it stands in for none
        classes = tuple(getattr(source_cls, "connector_classes", ()))
        named = properties.get("connector.class")
        return cls((named,) if named in classes else classes)

    @property
    def title(self) -> str:
        return " / ".join(f"{CONNECTOR_TITLES.get(c, c)} {VERSIONS.get(c, '')}".strip()
                          for c in self.connector_classes)


def refusals(surface: Surface, properties: Mapping[str, Any], declared: Iterable[str]) -> tuple[list[str], list[str]]:
    """(problems, mapped) for the undeclared ``properties`` that are Debezium options: one problem line per
    option cdc refuses (name, value, why, what to do), and the names of those it accepts as mapped."""
    known = set(declared)
    problems: list[str] = []
    mapped: list[str] = []
    for name, value in properties.items():
        if name in known:
            continue
        found = surface.lookup(name)
        if found is None:
            continue
        spelled, default, how = found
        if spelled in known:  # a pattern option cdc declares under Debezium's spelling
            continue
        if isinstance(how, Mapped):
            mapped.append(name)
            continue
        if how is not None and how.at_default and _same(value, default):
            continue
        why = how.why if how is not None else "cdc does not implement it"
        fix = f"; {how.fix}" if how is not None and how.fix else ""
        problems.append(f"{name}={value!r}: {why}{fix}")
    return problems, mapped


def _same(value: Any, default: str) -> bool:
    """Whether a property's value is Debezium's default, spelled as Java would read it."""
    text = str(value).strip()
    if isinstance(value, bool):
        text = "true" if value else "false"
    return text.lower() == default.strip().lower()


@dataclass(frozen=True)
class Row:
    """One Debezium option in docs/options.md: what cdc does with it."""

    name: str
    debezium_default: str
    status: str  # honoured, mapped, refused
    note: str


def rows(connector_class: str, declared: Mapping[str, Any]) -> list[Row]:
    """Every option of one connector, with cdc's treatment; ``declared``: cdc's options for its source, by
    name (each with a ``default``), so that a default of cdc's that differs from Debezium's is shown."""
    out = []
    for name, (default, _) in sorted(OPTIONS[connector_class].items()):
        if name in declared:
            ours = CONNECTOR_DEFAULTS.get(connector_class, {}).get(name, declared[name].default)
            shown = str(ours).lower() if isinstance(ours, bool) else "" if ours is None else str(ours)
            if isinstance(ours, list):
                shown = ",".join(ours)
            note = "" if shown == default else f"cdc's default: `{shown}`" if shown else "cdc's default: none"
            out.append(Row(name, default, "honoured", note))
            continue
        how = treatment(connector_class, name)
        if isinstance(how, Mapped):
            out.append(Row(name, default, "mapped", how.instead))
        elif how is None:
            out.append(Row(name, default, "refused", "not listed in cdc/core/option_surface.py"))
        else:
            accepted = f" Accepted at Debezium's default (`{default}`)." if how.at_default and default else ""
            fix = f" Instead: {how.fix}." if how.fix else ""
            out.append(Row(name, default, "refused", f"{how.why}.{fix}{accepted}"))
    return out
