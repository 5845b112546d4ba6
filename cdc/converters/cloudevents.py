"""Debezium's CloudEvents converter (``io.debezium.converters.CloudEventsConverter``), JSON only.

As ``CloudEventsConverter.fromConnectData`` with ``serializer.type=json`` and
``data.serializer.type=json`` (both defaults) and ``metadata.source=value``: a change event
(value schema named ``*.Envelope``) becomes one JSON object

    id, source, specversion, type, time, datacontenttype,
    iodebeziumop, iodebezium<source field>..., iodebeziumtxid, iodebeziumtxtotalorder,
    iodebeziumtxdatacollectionorder, data

with the connector's own ``id``, int64 source fields as strings, and ``data`` the JSON converter's output
of a struct ``io.debezium.connector.<connector>.Data`` holding ``before`` and ``after`` (MariaDB's maker:
every envelope field), with its schema unless ``json.schemas.enable=false``. What the id and data are made
of is the source's to say, per connector (``cdc.core.source.MakesCloudEvents``: Debezium's
``CloudEventsMaker`` of each connector), so a source plugin's events convert as the built-in ones'.
Every other record (no envelope: transaction BEGIN/END, schema changes, heartbeats, tombstones) is
written as null, as Debezium's converter does. ``serializer.type=avro`` is not supported.
"""
from __future__ import annotations

import datetime
import logging
from collections.abc import Mapping
from typing import Any

import orjson

from cdc.core.connect import ConnectSchema
from cdc.core.errors import CdcError
from cdc.core.source import CloudEventsMaker

log = logging.getLogger(__name__)

SPECVERSION = "1.0"
TX_FIELDS = ("id", "total_order", "data_collection_order")  # Debezium's transaction block


def _java(value: Any) -> str:
    """Java's string concatenation of a boxed value."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def extension_name(name: str) -> str:
    """CloudEventsConverter.adjustExtensionName: "iodebezium" + the name's ASCII letters and digits."""
    return "iodebezium" + "".join(c for c in name if c.isascii() and c.isalnum())


def ce_time(ts_ms: int) -> str:
    """SimpleDateFormat("yyyy-MM-dd'T'HH:mm:ss.SSSXXX") in UTC."""
    moment = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC) + datetime.timedelta(milliseconds=ts_ms)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


class CloudEventsSerializer:
    """``serialize(topic, schema, payload)`` for the CloudEvents converter."""

    def __init__(self, makers: Mapping[str, CloudEventsMaker], *, data_schemas_enable: bool = True,
                 extension_attributes: bool = True, is_key: bool = False) -> None:
        self.makers = makers  # by the connector of the events' source block
        self.data_schemas_enable = data_schemas_enable
        self.extension_attributes = extension_attributes
        if is_key:
            log.warning("key.converter=io.debezium.converters.CloudEventsConverter writes every key as null "
                        "(keys are not change-event envelopes), as Debezium's converter does")
        self._data_schemas: dict[tuple[str, ConnectSchema], bytes] = {}

    def serialize(self, topic: str, schema: ConnectSchema | None, payload: Any) -> bytes | None:
        if schema is None or payload is None or not (schema.name or "").endswith(".Envelope"):
            return None
        source = payload.get("source") or {}
        connector = str(source.get("connector"))
        maker = self.makers.get(connector)
        if maker is None:
            raise CdcError(f"no CloudEvents maker for connector type {connector!r}: the source declares "
                           f"{', '.join(sorted(self.makers)) or 'none'} (cdc.core.source.MakesCloudEvents)",
                           fix="use the JSON or Avro converter for this source, or declare its maker in the "
                               "source's cloud_events (docs/plugins.md)")
        event: dict[str, Any] = {
            "id": ";".join(f"{name}:{_java(source.get(name))}" for name in maker.id_fields),
            "source": f"/debezium/{connector}/{source.get('name')}",
            "specversion": SPECVERSION,
            "type": f"io.debezium.connector.{connector}.DataChangeEvent",
            "time": ce_time(int(source["ts_ms"])),
            "datacontenttype": "application/json",
        }
        if self.extension_attributes:
            event[extension_name("op")] = payload.get("op")
            source_schema = _field_schema(schema, "source")
            for f in source_schema.get("fields", []):
                value = source.get(f["field"])
                if f["type"] == "int64" and value is not None:
                    value = str(value)
                event[extension_name(f["field"])] = value
            tx = payload.get("transaction")
            for name in TX_FIELDS:
                value = tx.get(name) if tx else None
                event[extension_name("tx" + name)] = str(value) if isinstance(value, int) else value
        names = maker.data_fields or tuple(f["field"] for f in schema.fields)
        data_payload = {name: payload.get(name) for name in names}
        if not self.data_schemas_enable:
            event["data"] = data_payload
            return orjson.dumps(event)
        head = orjson.dumps(event)[:-1]
        return (head + b',"data":{"schema":' + self._data_schema(connector, schema, names)
                + b',"payload":' + orjson.dumps(data_payload) + b"}}")

    def _data_schema(self, connector: str, schema: ConnectSchema, names: tuple[str, ...]) -> bytes:
        key = (connector, schema)
        found = self._data_schemas.get(key)
        if found is None:
            found = orjson.dumps({"type": "struct", "fields": [_field_schema(schema, n) for n in names],
                                  "optional": False, "name": f"io.debezium.connector.{connector}.Data"})
            self._data_schemas[key] = found
        return found


def _field_schema(schema: ConnectSchema, name: str) -> dict[str, Any]:
    for f in schema.fields:
        if f["field"] == name:
            return f
    raise CdcError(f"the envelope {schema.name} has no {name!r} field", fix="report this as a bug")
