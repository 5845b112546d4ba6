"""Exactly-once delivery into Kafka, as Kafka Connect does it for source connectors (KIP-618).

With ``exactly.once.support=required`` (or ``requested``) the Kafka sink's producer is
transactional and the offset store writes the source offset through that producer, in the same
transaction as the records read before it::

    init_transactions()                    at start: fences an earlier instance with the same
                                           transactional.id, aborts its open transaction
    write(records)    begin (lazily) + produce
    flush()           wait for the deliveries (nothing is visible yet)
    save(offset)      produce the offset record to offset.storage.topic, commit_transaction()

A kill anywhere leaves either the whole transaction (records and the offset after them) or
none of it, for a ``read_committed`` consumer; the offset store reads its topic read_committed,
so a restart resumes exactly after the last committed records. Only this module decides whether
the mode applies (``mode``) and joins the sink to the store (``enable``); the pipeline calls both.
Connect's worker-level switch (``exactly.once.source.support``) has no counterpart: cdc is the
worker and the connector at once.

The schema history (MySQL, ``schema.history.internal``) is written outside the transaction, as
soon as a DDL is read; that is safe: a record past the stored offset is skipped when the schema is
rebuilt and not recorded again when the binlog is read again (``history_max``), and a record's
``tableChanges`` hold whole table definitions, so one applied twice leaves the same schema.
"""
from __future__ import annotations

import logging
import os
import socket
import time
from typing import Any

from cdc.config import Config, Option
from cdc.core.errors import ConfigError

log = logging.getLogger(__name__)

REQUESTED, REQUIRED = "requested", "required"

# Who this process is, in a header of the offset records it commits: a fenced instance reads it to
# name the instance that fenced it. Kafka Connect's readers of the offsets topic ignore headers.
INSTANCE_HEADER = "cdc.instance"
INSTANCE = f"host {socket.gethostname()}, pid {os.getpid()}, started {time.strftime('%Y-%m-%d %H:%M:%S')}"

EXACTLY_ONCE_OPTIONS: tuple[Option, ...] = (
    Option("exactly.once.support", str, None,
           "Exactly-once delivery as Kafka Connect's (KIP-618): each batch of records and its source offset in one "
           "Kafka transaction, for consumers reading with isolation.level=read_committed. Needs sink=kafka and "
           "offset.storage=kafka. required: refuse to run otherwise; requested: fall back to at-least-once with a "
           "warning; unset: at-least-once. The transactional id is producer.transactional.id, by default "
           "cdc-<name>-<topic.prefix>. A transaction spans one offset.flush.interval.ms (a snapshot that stores no "
           "progress is one transaction: snapshot.resumable=true splits it) and must end within "
           "producer.transaction.timeout.ms.", choices=(REQUESTED, REQUIRED)),
)


def mode(config: Config, sink_cls: Any, store_kind: str) -> str | None:
    """The exactly-once mode this pipeline runs in (None: at-least-once), checked before anything
    starts: ``required`` that cannot be honoured is a ConfigError saying what to change,
    ``requested`` falls back to at-least-once with a warning."""
    wanted = config.get("exactly.once.support")
    if config.properties.get("producer.transactional.id") and not wanted:
        log.warning("producer.transactional.id is set but exactly.once.support is not: the producer is not "
                    "transactional (set exactly.once.support=required for exactly-once delivery)")
    if not wanted:
        return None
    problems = []
    if not hasattr(sink_cls, "start_transactions"):
        problems.append((f"the {getattr(sink_cls, 'name', sink_cls.__name__)} sink cannot write in Kafka transactions",
                         "use sink=kafka (--sink kafka)"))
    if store_kind != "kafka":
        problems.append((f"offsets stored with offset.storage={config.get('offset.storage')} cannot be written in "
                         "the sink's Kafka transaction",
                         "set offset.storage=kafka (offset.storage.topic on the same cluster as the sink)"))
    idempotence = config.properties.get("producer.enable.idempotence")
    if idempotence is not None and str(idempotence).strip().lower() in ("false", "0", "no", "off"):
        problems.append(("producer.enable.idempotence=false: a transactional producer is idempotent",
                         "remove producer.enable.idempotence (or set it to true)"))
    acks = config.properties.get("producer.acks")
    if acks is not None and str(acks).strip().lower() not in ("all", "-1"):
        problems.append((f"producer.acks={acks}: a transactional producer waits for every in-sync replica",
                         "remove producer.acks (or set it to all)"))
    if not problems:
        return str(wanted)
    if wanted == REQUIRED:
        raise ConfigError("exactly.once.support=required cannot be honoured: " + "; ".join(p for p, _ in problems),
                          fix="; ".join(f for _, f in problems) + " - or remove exactly.once.support for "
                              "at-least-once delivery")
    log.warning("exactly.once.support=requested: delivering at least once, since %s",
                "; ".join(p for p, _ in problems))
    return None


def transactional_id(config: Config) -> str:
    """``producer.transactional.id``, else ``cdc-<name>-<topic.prefix>``: one per pipeline, the same
    across its restarts (that is what fences a zombie)."""
    explicit = config.properties.get("producer.transactional.id")
    if explicit:
        return str(explicit)
    name = config.get("name") or "cdc"
    return f"cdc-{name}-{config.get('topic.prefix') or name}"


def enable(wanted: str, config: Config, sink: Any, store: Any) -> bool:
    """Make ``sink`` transactional and ``store`` write through it; False (at-least-once, warned)
    when ``requested`` and the cluster does not grant transactions. A ``required`` that fails
    raises the sink's SinkError."""
    if not hasattr(store, "commit_through"):  # an embedder's own store under offset.storage=kafka
        if wanted == REQUIRED:
            raise ConfigError(f"exactly.once.support=required: the offset store {type(store).__name__} cannot "
                              "write offsets in the sink's Kafka transaction",
                              fix="use offset.storage=kafka (cdc's KafkaOffsetStore)")
        log.warning("exactly.once.support=requested: delivering at least once (%s cannot write in a transaction)",
                    type(store).__name__)
        return False
    if not sink.start_transactions(transactional_id(config), required=wanted == REQUIRED):
        return False
    store.commit_through(sink)
    log.info("exactly-once delivery: records and offsets in Kafka transactions (transactional.id %s)",
             sink.transactional_id)
    return True
