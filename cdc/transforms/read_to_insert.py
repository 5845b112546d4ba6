"""Debezium's ReadToInsertEvent: snapshot reads (``op`` ``r``) become creates (``c``), for
consumers that treat the two alike but only know ``c``. Other records pass unchanged.
Source: debezium-connector-mysql/src/main/java/io/debezium/connector/mysql/transforms/ReadToInsertEvent.java
(Debezium registers it as ``io.debezium.connector.mysql.transforms.ReadToInsertEvent``; it works on
any connector's envelope, so cdc registers it under that name and ``io.debezium.transforms.ReadToInsertEvent``.)
"""
from __future__ import annotations

import dataclasses

from cdc.core.envelope import OP, OP_CREATE, OP_READ
from cdc.core.records import ChangeEvent
from cdc.transforms.chain import Options
from cdc.transforms.unwrap import is_envelope


class ReadToInsertEvent:
    def __init__(self, options: Options) -> None:
        pass  # no options

    def apply(self, event: ChangeEvent) -> ChangeEvent:
        if event.value is None or not is_envelope(event.value_schema) or event.value.get(OP) != OP_READ:
            return event
        return dataclasses.replace(event, value={**event.value, OP: OP_CREATE})
