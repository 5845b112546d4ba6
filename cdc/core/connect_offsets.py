"""Kafka Connect's offsets file (``FileOffsetBackingStore``), read and written as Connect does.

Debezium's standalone workers and its embedded engine keep offsets in a file holding one Java-serialized
``HashMap<byte[], byte[]>``: each key is Connect's offset key, ``["<connector name>",{"server":"<topic
prefix>"}]`` as JSON, each value the offset as JSON. With
``offset.storage=org.apache.kafka.connect.storage.FileOffsetBackingStore`` cdc reads that file (so it
resumes where Debezium stopped) and writes it in the same form (so Debezium can resume where cdc
stopped), keeping the other connectors' entries as they are.

Only what ``ObjectOutputStream`` writes for such a map is read: anything else is an error naming the
file, never a guess.
"""
from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

import orjson

from cdc.core.errors import OffsetStoreError
from cdc.core.offsets import check_folder_writable, write_atomically

FILE_CLASS = "org.apache.kafka.connect.storage.FileOffsetBackingStore"

_MAGIC = b"\xac\xed\x00\x05"
_TC_NULL, _TC_REFERENCE, _TC_CLASSDESC, _TC_OBJECT, _TC_ARRAY, _TC_BLOCKDATA, _TC_ENDBLOCKDATA = (
    0x70, 0x71, 0x72, 0x73, 0x75, 0x77, 0x78)
_BASE_HANDLE = 0x7E0000
_HASHMAP = "java.util.HashMap"
_HASHMAP_UID = 0x0507DAC1C31660D1
_BYTES = "[B"
_BYTES_UID = 0xACF317F8060854E0


def is_connect_offsets(raw: bytes) -> bool:
    """Whether the bytes are a Java serialization stream (Connect's offsets file), not cdc's JSON."""
    return raw.startswith(_MAGIC)


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.at = 0
        self.handles: list[Any] = []

    def take(self, n: int) -> bytes:
        if self.at + n > len(self.data):
            raise ValueError("the file ends in the middle of the map")
        chunk = self.data[self.at:self.at + n]
        self.at += n
        return chunk

    def byte(self) -> int:
        return self.take(1)[0]

    def int(self) -> int:
        return int(struct.unpack(">i", self.take(4))[0])

    def utf(self) -> str:
        return self.take(struct.unpack(">H", self.take(2))[0]).decode("utf-8")

    def class_desc(self) -> str:
        tag = self.byte()
        if tag == _TC_REFERENCE:
            return str(self.handles[self.int() - _BASE_HANDLE])
        if tag != _TC_CLASSDESC:
            raise ValueError(f"expected a class description, found 0x{tag:02x}")
        name = self.utf()
        self.take(8)  # serialVersionUID
        self.handles.append(name)
        self.byte()  # flags
        for _ in range(struct.unpack(">H", self.take(2))[0]):
            code = chr(self.byte())
            self.utf()
            if code in "[L":  # an object field's type name
                self.object()
        if self.byte() != _TC_ENDBLOCKDATA:
            raise ValueError(f"class {name} has annotations Connect never writes")
        if self.byte() != _TC_NULL:
            raise ValueError(f"class {name} has a serializable superclass")
        return name

    def object(self) -> Any:
        tag = self.byte()
        if tag == _TC_NULL:
            return None
        if tag == _TC_REFERENCE:
            return self.handles[self.int() - _BASE_HANDLE]
        if tag == 0x74:  # TC_STRING (a field's type name)
            value = self.utf()
            self.handles.append(value)
            return value
        if tag == _TC_ARRAY:
            if self.class_desc() != _BYTES:
                raise ValueError("a map entry that is not a byte array")
            self.handles.append(None)
            index = len(self.handles) - 1
            array = self.take(self.int())
            self.handles[index] = array
            return array
        raise ValueError(f"unexpected 0x{tag:02x} in the map")


def read_connect_offsets(data: bytes) -> dict[bytes, bytes | None]:
    """The entries of a Connect offsets file."""
    reader = _Reader(data)
    if reader.take(4) != _MAGIC or reader.byte() != _TC_OBJECT:
        raise ValueError("not a Java serialization stream of one object")
    if reader.class_desc() != _HASHMAP:
        raise ValueError("the object is not a java.util.HashMap")
    reader.handles.append("map")
    reader.take(8)  # loadFactor (float), threshold (int)
    if reader.byte() != _TC_BLOCKDATA or reader.byte() != 8:
        raise ValueError("the map's size block is missing")
    reader.int()  # buckets
    size = reader.int()
    entries: dict[bytes, bytes | None] = {}
    for _ in range(size):
        key = reader.object()
        if not isinstance(key, bytes):
            raise ValueError("an entry without a key")
        entries[key] = reader.object()
    if reader.byte() != _TC_ENDBLOCKDATA:
        raise ValueError("the map does not end where its size says")
    return entries


def write_connect_offsets(entries: dict[bytes, bytes | None]) -> bytes:
    """``entries`` as Connect's ``ObjectOutputStream.writeObject(HashMap<byte[], byte[]>)`` writes them."""
    capacity = 16
    while capacity * 0.75 < len(entries):
        capacity *= 2
    out = bytearray(_MAGIC)
    out += bytes((_TC_OBJECT, _TC_CLASSDESC)) + _utf(_HASHMAP) + struct.pack(">QB", _HASHMAP_UID, 0x03)
    out += struct.pack(">H", 2) + b"F" + _utf("loadFactor") + b"I" + _utf("threshold")
    out += bytes((_TC_ENDBLOCKDATA, _TC_NULL))
    out += struct.pack(">fi", 0.75, int(capacity * 0.75))
    out += bytes((_TC_BLOCKDATA, 8)) + struct.pack(">ii", capacity, len(entries))
    bytes_class: int | None = None  # the handle of byte[]'s class description, once written
    next_handle = _BASE_HANDLE + 2  # 0: HashMap's class description, 1: the map
    for key, value in entries.items():
        for array in (key, value):
            if array is None:
                out.append(_TC_NULL)
                continue
            out.append(_TC_ARRAY)
            if bytes_class is None:
                out += bytes((_TC_CLASSDESC,)) + _utf(_BYTES) + struct.pack(">QB", _BYTES_UID, 0x02)
                out += struct.pack(">H", 0) + bytes((_TC_ENDBLOCKDATA, _TC_NULL))
                bytes_class, next_handle = next_handle, next_handle + 1
            else:
                out += bytes((_TC_REFERENCE,)) + struct.pack(">i", bytes_class)
            next_handle += 1  # the array's own handle
            out += struct.pack(">i", len(array)) + array
    out.append(_TC_ENDBLOCKDATA)
    return bytes(out)


def _utf(text: str) -> bytes:
    data = text.encode("utf-8")
    return struct.pack(">H", len(data)) + data


def offset_key(name: str, server: str) -> bytes:
    """Connect's offset key of a Debezium connector: its name, then its source partition."""
    return orjson.dumps([name, {"server": server}])


class ConnectFileOffsetStore:
    """The offset of one pipeline in Kafka Connect's offsets file, beside the other connectors'."""

    def __init__(self, path: str | Path, name: str, server: str) -> None:
        self.path = Path(path)
        self.name = name
        self.key = offset_key(name, server)

    def _entries(self) -> dict[bytes, bytes | None]:
        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            return {}
        except OSError as exc:
            raise OffsetStoreError(f"cannot read offset file {self.path}: {exc.strerror or exc}",
                                   fix="make the file readable by the user running cdc") from None
        try:
            return read_connect_offsets(raw)
        except ValueError as exc:
            raise OffsetStoreError(f"offset file {self.path} is not a Kafka Connect offsets file ({exc})",
                                   fix="point offset.storage.file.filename at Connect's offsets file (or a new "
                                       "path), or set offset.storage=file for cdc's own JSON file") from None

    def check(self) -> None:
        """Before a pipeline starts: the file reads, and its folder takes the file that replaces it."""
        self._entries()
        check_folder_writable(self.path)

    def load(self) -> dict[str, Any] | None:
        value = self._entries().get(self.key)
        if value is None:
            return None
        try:
            offset = orjson.loads(value)
        except orjson.JSONDecodeError as exc:
            raise OffsetStoreError(f"the offset of {self.key.decode()} in {self.path} is not JSON ({exc})",
                                   fix="remove that connector's entry with Debezium's tools, or start over "
                                       "with a new offset file") from None
        return offset if isinstance(offset, dict) else None

    def save(self, offset: dict[str, Any]) -> None:
        entries = self._entries()
        entries[self.key] = orjson.dumps(offset)
        write_atomically(self.path, write_connect_offsets(entries))

    def close(self) -> None:
        pass
