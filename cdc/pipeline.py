"""Assemble a pipeline (source, converter, sink, offset store) from one flat config."""
from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from cdc import registry
from cdc.config import CORE_OPTIONS, Config
from cdc.converters import CONVERTER_OPTIONS, converter_from_config
from cdc.core import custom_converters, post_processors
from cdc.core.connect_offsets import FILE_CLASS as CONNECT_FILE_STORE
from cdc.core.connect_offsets import ConnectFileOffsetStore
from cdc.core.context_headers import ContextHeaders
from cdc.core.converters import JsonConverter
from cdc.core.errors import ConfigError, OffsetStoreError
from cdc.core.native_row import native_rows_wanted
from cdc.core.offsets import WRITER, WRITER_KEY, FileOffsetStore, OffsetStore, without_writer, written_by_cdc
from cdc.core.option_surface import Surface
from cdc.core.retry import RetryPolicy
from cdc.core.schema_history import history_kind
from cdc.core.snapshot_restart import MARKER_KEYS
from cdc.core.source import (
    EncodedBatches,
    MakesCloudEvents,
    NamesItsConnector,
    NativeRows,
    Replayable,
    declared_options,
    offers,
)
from cdc.engine import Engine
from cdc.kafka import exactly_once
from cdc.transforms.chain import TransformChain

log = logging.getLogger(__name__)

# Properties handed through to a client library (not declared one by one).
PASSTHROUGH_PREFIXES = ("producer.", "kafka.", "consumer.", "spark.", "source.",
                        "transforms", "predicates",  # Kafka Connect's transform chain: cdc.transforms
                        "key.converter", "value.converter")  # a converter's own options, as Kafka Connect passes them


# Kafka Connect's offset stores by class name, so a Debezium configuration runs unchanged.
OFFSET_STORE_CLASSES = {"org.apache.kafka.connect.storage.KafkaOffsetBackingStore": "kafka"}


def offset_store(config: Config) -> OffsetStore:
    kind = OFFSET_STORE_CLASSES.get(config.get("offset.storage"), config.get("offset.storage"))
    name = config.get("name")
    if kind in ("file", CONNECT_FILE_STORE):
        path = config.get("offset.storage.file.filename")
        if not path:
            directory = config.properties.get("sink.files.directory")
            path = str(Path(directory) / "offsets.json") if directory else "cdc-offsets.json"
        if kind == CONNECT_FILE_STORE:
            return ConnectFileOffsetStore(path, name, config.get("topic.prefix") or name)
        return FileOffsetStore(path, name)
    factory = registry.load(registry.OFFSET_STORES, kind)
    config.declare(declared_options(factory))
    return factory(config, name)


def source_name(properties: dict[str, Any]) -> str | None:
    """The source a config names: ``source``, else the plugin standing in for ``connector.class``."""
    if properties.get("source"):
        return str(properties["source"])
    if properties.get("connector.class"):
        return registry.source_for_connector_class(str(properties["connector.class"]))
    return None


def build_from_properties(properties: dict[str, Any], sink: Any = None) -> Engine:
    """A pipeline from a config that names its source (``source`` or ``connector.class``)."""
    properties = dict(properties)
    name = source_name(properties)
    if name is None:
        raise ConfigError("the configuration names no source",
                          fix='add source = "postgres" (or a Debezium connector.class)')
    properties.pop("source", None)  # connector.class stays: it says which Debezium connector's options apply
    return build(name, properties, sink=sink)


def build(source_name: str, properties: dict[str, Any], sink: Any = None) -> Engine:
    """``sink``: an already built sink (embedders, tests); else the one ``sink`` names.

    Everything that can be checked without the database is checked here, before anything is
    started: the configuration, then the stored offsets (readable, writable, written by this kind
    of source), then the sink."""
    config = Config(dict(properties)).declare(CORE_OPTIONS)
    source_cls = registry.load(registry.SOURCES, source_name)
    sink_cls = registry.load(registry.SINKS, config.get("sink")) if sink is None else type(sink)
    config.declare(declared_options(source_cls)).declare(declared_options(sink_cls))
    config.declare(CONVERTER_OPTIONS)
    store_kind = OFFSET_STORE_CLASSES.get(config.get("offset.storage"), config.get("offset.storage"))
    if store_kind not in ("file", CONNECT_FILE_STORE):
        factory = registry.load(registry.OFFSET_STORES, store_kind)
        config.declare(declared_options(factory))
    if "schema.history.internal" in config.options:  # a historized source: its history store's options too
        history = history_kind(config.get("schema.history.internal"))
        if history not in ("file", "memory"):
            config.declare(declared_options(registry.load(registry.SCHEMA_HISTORIES, history)))
    config.declare(exactly_once.EXACTLY_ONCE_OPTIONS)
    config.validate(PASSTHROUGH_PREFIXES + post_processors.prefixes(config.properties)
                    + custom_converters.prefixes(config.properties),
                    Surface.of(source_cls, config.properties))
    log.info("configuration: %s", config.masked())
    exactly = exactly_once.mode(config, sink_cls, store_kind)  # a required one that cannot be: ConfigError
    offsets = SourceOffsetStore(offset_store(config), source_name, source_cls, config.get("name"),
                                takeover=config.get("offset.takeover"))
    if isinstance(offsets.store, (FileOffsetStore, ConnectFileOffsetStore)):  # a Kafka store is read once, at start
        offsets.store.check()
        offsets.load()
    source = source_cls(config)
    sink = sink_cls(config) if sink is None else sink
    if exactly:  # the sink's producer turns transactional; the offset store commits its transactions
        exactly_once.enable(exactly, config, sink, offsets.store)
    context = None
    if config.get("extended.headers.enabled"):
        context = ContextHeaders(config.get("topic.prefix"), lambda: source.connector_name
                                 if isinstance(source, NamesItsConnector) else source_name)
    converter = converter_from_config(config, context, source_cls.cloud_events
                                      if offers(source_cls, MakesCloudEvents) else None)
    transforms = TransformChain.from_properties(config.properties) if config.properties.get("transforms") else None
    processors = post_processors.from_config(config.properties, source)
    if transforms is None and not processors and type(converter) is JsonConverter and isinstance(source, NativeRows) \
            and native_rows_wanted(config):
        source.native_rows = True
        if isinstance(source, EncodedBatches):
            source.encoded_batches = True  # the engine takes a snapshot's rows in encoded batches
    retry = RetryPolicy.from_config(config) if "errors.max.retries" in config.options else None
    return Engine(source, sink, converter, offsets, flush_interval_s=config.get("offset.flush.interval.ms") / 1000,
                  transforms=transforms, retry=retry, post_processors=processors)


class SourceOffsetStore:
    """The offset store as one source sees it: an offset that another kind of source wrote is refused,
    and so is one that another connector wrote (unless ``offset.takeover``).

    A source recognises its offsets by the keys that locate them (``POSITION_KEYS``: ``lsn`` for
    PostgreSQL, ``file``/``pos`` for MySQL). Given another source's offset it would read a position
    that means nothing to its server, and start at the wrong place or re-snapshot. Given a Debezium
    connector's (the same name in the same offsets file or topic: a Debezium configuration run as it
    is), it would resume from it and then move it: the connector, started again, would skip what cdc
    read. cdc marks what it saves (``WRITER_KEY``), so the two are told apart."""

    def __init__(self, store: OffsetStore, source_name: str, source_cls: Any, name: str,
                 takeover: bool = False) -> None:
        self.store = store
        self.source_name = source_name
        self.name = name
        self.takeover = takeover
        self.keys: tuple[str, ...] = _position_keys(source_cls)

    def load(self) -> dict[str, Any] | None:
        offset = self.store.load()
        if offset is not None and any(k in offset for k in MARKER_KEYS):
            return without_writer(offset)  # a marker (snapshot_restart), not a position: every source reads it
        if offset is not None and self.keys and not any(k in offset for k in self.keys):
            raise _foreign_offset(offset, self.source_name, self.keys, f"the offset of pipeline {self.name!r} in "
                                  f"{_where(self.store)}")
        if offset is not None and not written_by_cdc(offset):
            self._take_over(offset)
        return without_writer(offset)

    def _take_over(self, offset: dict[str, Any]) -> None:
        where = f"the offset of {self.name!r} in {_where(self.store)}"
        if not self.takeover:
            raise OffsetStoreError(
                f"{where} was not written by cdc but by another connector (a Debezium connector named {self.name!r}?"
                f" it holds {', '.join(sorted(offset))}): resuming from it would move that connector's position, and "
                "it would skip what cdc read when started again",
                fix="to switch from that connector to cdc, stop it for good and set offset.takeover=true (cdc "
                    "continues where it stopped); to run beside it, give this pipeline its own name or "
                    "offset.storage.file.filename / offset.storage.topic")
        log.warning("%s was written by another connector: continuing from it (offset.takeover=true); that "
                    "connector must not run again on it", where)

    def save(self, offset: dict[str, Any]) -> None:
        self.store.save({**offset, WRITER_KEY: WRITER})

    def close(self) -> None:
        self.store.close()


def _position_keys(source_cls: Any) -> tuple[str, ...]:
    """The offset fields that locate a source's offsets (Replayable), or none it declares."""
    return tuple(source_cls.POSITION_KEYS) if offers(source_cls, Replayable) else ()


def _where(store: OffsetStore) -> str:
    if isinstance(store, (FileOffsetStore, ConnectFileOffsetStore)):
        return f"offset file {store.path}"
    topic = getattr(store, "topic", None)  # an offset store, not a source: Kafka's names its topic
    return f"offset topic {topic}" if topic else type(store).__name__


def _foreign_offset(offset: dict[str, Any], source: str, keys: tuple[str, ...], where: str) -> ConfigError:
    writer = None
    for name, entry in sorted(registry.available(registry.SOURCES).items()):
        if name == source:
            continue
        try:
            other = _position_keys(entry.load())
        except Exception:  # noqa: BLE001 - a plugin that cannot load cannot have written it either
            continue
        if other and any(k in offset for k in other):
            writer = f"the {name} source (it holds {', '.join(k for k in other if k in offset)})"
            break
    found = ", ".join(sorted(offset)) or "no keys"
    return ConfigError(
        f"{where} was written by {writer or f'another source (it holds {found})'}, but this "
        f"pipeline runs the {source} source, whose offsets hold {', '.join(keys)}: it cannot resume from it",
        fix="give this pipeline its own offsets (another offset.storage.file.filename, or another name), or "
            "move that offset away to start over with a snapshot",
    )
