"""cdc's Avro and CloudEvents converters against the Java ones, record for record.

The records are the events Debezium itself recorded (tests/conformance/fixtures). The oracle
(oracle/ConverterOracle.java) reads each through Kafka Connect's JsonConverter and writes:

* Avro: the schema Apicurio Registry's AvroData derives from the Connect schema (a fork of Confluent's
  AvroData, which Debezium's Avro documentation uses; Confluent's own jars are not on Maven Central)
  and the datum's Avro binary encoding. cdc must register the same schema text and write the same
  bytes after Confluent's 5-byte header.
* CloudEvents: what Debezium's CloudEventsConverter (3.6.1 for PostgreSQL, 3.5.0 for MariaDB, each
  with its connector's CloudEvents maker) writes for the value.
* Headers: what Kafka Connect's default header converter (SimpleHeaderConverter) writes for each header,
  and, to cover every type a key header can hold, for each record's whole key and value.

Skipped without Java, Maven or Debezium's jars (tests/conformance/debezium/fetch.sh).
"""
from __future__ import annotations

import base64
import json
import os
import re
import struct
import subprocess
from pathlib import Path
from typing import Any

import pytest

from cdc.config import Config
from cdc.converters import converter_from_config
from cdc.converters.avro import AvroSerializer
from cdc.core.header_converters import SimpleHeaderConverter
from cdc.sources.mysql.source_info import CLOUD_EVENTS as BINLOG_CLOUD_EVENTS
from cdc.sources.postgres.source_info import CLOUD_EVENTS as PG_CLOUD_EVENTS
from tests.debezium_jars import debezium_lib
from tests.unit.test_transforms_support import fixture_records, from_json

HERE = Path(__file__).resolve().parent / "oracle"
CACHE = Path(os.environ.get("CDC_CACHE", Path.home() / ".cache/cdc"))
PG = [f"pg_{n}" for n in ("types", "keys", "numeric_edges", "special_types", "temporal_edges", "arrays", "toast",
                         "transactions", "schema_evolution", "truncate_messages")]
MARIADB = [f"mariadb_{n}" for n in ("types", "keys", "numeric", "special", "strings", "temporal", "transactions",
                                    "schema_evolution", "truncate")]
CLOUDEVENTS = "io.debezium.converters.CloudEventsConverter"
DEBEZIUM_SCALE = re.compile(r"Invalid decimal scale: 20[0-9][0-9] \(greater than precision")


def _records(name: str) -> list[dict[str, Any]]:
    # The oracle's JsonConverter reads Debezium's "NaN"/"Infinity" text back as 0.0: leave those out.
    return [r for r in fixture_records(name) if not re.search(r'"(NaN|-?Infinity)"', json.dumps(r["value"]))]


def _fetch_oracle_jars() -> Path:
    lib = CACHE / "converters-oracle" / "lib"
    if not any(lib.glob("apicurio-registry-utils-converter-*.jar")):
        lib.mkdir(parents=True, exist_ok=True)
        subprocess.run(["mvn", "-q", "-B", "-f", str(HERE / "pom-converters.xml"), "dependency:copy-dependencies",
                        f"-DoutputDirectory={lib}", "-DincludeScope=runtime"], check=True, capture_output=True,
                       timeout=900)
    return lib


@pytest.fixture(scope="module")
def oracle(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], list[Any]]:
    """(kind, fixture) -> the oracle's outputs."""
    found = {db: debezium_lib(db) for db in ("postgres", "mariadb")}
    libs = {db: lib for db, lib in found.items() if lib is not None}
    if len(libs) < 2 or not all(any(lib.glob("debezium-*.jar")) for lib in libs.values()):
        pytest.skip(f"needs Java, Maven and Debezium's jars in {CACHE} (tests/conformance/debezium/fetch.sh)")
    extra = _fetch_oracle_jars()
    results: dict[tuple[str, str], list[Any]] = {}
    for db, fixtures in (("postgres", PG), ("mariadb", MARIADB)):
        # Debezium's jars first: its Jackson and SLF4J win over the older ones Avro brings.
        classpath = f"{libs[db]}/*:{extra}/*"
        work = tmp_path_factory.mktemp(f"converter-oracle-{db}")
        subprocess.run(["javac", "-nowarn", "-cp", classpath, "-d", str(work), str(HERE / "ConverterOracle.java")],
                       check=True, capture_output=True)
        requests = [(kind, name, props) for name in fixtures for kind, props in (
            ("avro", {}), ("cloudevents", {}), ("cloudevents-noschema", {"json.schemas.enable": "false"}),
            ("simpleheader", {}))]
        stdin = "".join(json.dumps({"kind": kind.split("-")[0], "props": props, "records": _records(name)}) + "\n"
                        for kind, name, props in requests)
        run = subprocess.run(["java", "-cp", f"{classpath}:{work}", "ConverterOracle"], input=stdin,
                             capture_output=True, text=True, check=True)
        for (kind, name, _), line in zip(requests, run.stdout.splitlines(), strict=True):
            results[(kind, name)] = json.loads(line)["out"]
    return results


class _Ids:
    """The registry the serializer would ask: every schema gets id 1 (the bytes after the header are compared)."""

    def __init__(self) -> None:
        self.texts: dict[str, str] = {}

    def register(self, subject: str, text: str) -> int:
        self.texts[subject] = text
        return 1


@pytest.mark.parametrize("fixture", PG + MARIADB)
def test_avro_schema_and_bytes_as_avrodata(oracle: dict[tuple[str, str], list[Any]], fixture: str) -> None:
    ids = {"key": _Ids(), "value": _Ids()}
    serializers = {side: AvroSerializer(ids[side], is_key=side == "key") for side in ids}  # type: ignore[arg-type]
    expected = iter(oracle[("avro", fixture)])
    compared = 0
    for record in _records(fixture):
        event = from_json(record)
        for side, schema, payload in (("key", event.key_schema, event.key), ("value", event.value_schema,
                                                                              event.value)):
            theirs = next(expected)
            if theirs is None:
                assert payload is None or schema is None
                continue
            if "error" in theirs and DEBEZIUM_SCALE.search(theirs["error"]):
                # Debezium reads numeric(p,-s)'s scale as 2048-s; Avro Java refuses such a decimal and the
                # connector stops; cdc writes it with the logical type dropped (readable, bytes unchanged).
                assert serializers[side].serialize(event.topic, schema, payload) is not None
                continue
            assert "error" not in theirs, theirs["error"]
            data = serializers[side].serialize(event.topic, schema, payload)
            assert data is not None and data[:5] == b"\x00\x00\x00\x00\x01"
            subject = f"{event.topic}-{side}"
            assert json.loads(ids[side].texts[subject]) == json.loads(theirs["schema"]), subject
            assert ids[side].texts[subject] == theirs["schema"], f"{subject}: same schema, other text"
            assert data[5:] == base64.b64decode(theirs["datum"]), f"{subject} {payload}"
            compared += 1
    assert compared > 0


@pytest.mark.parametrize("schemas", [True, False], ids=["data-with-schema", "data-without-schema"])
@pytest.mark.parametrize("fixture", PG + MARIADB)
def test_cloudevents_as_debezium(oracle: dict[tuple[str, str], list[Any]], fixture: str, schemas: bool) -> None:
    converter = converter_from_config(Config({"value.converter": CLOUDEVENTS,
                                              "value.converter.json.schemas.enable": str(schemas).lower()}),
                                      cloud_events={**PG_CLOUD_EVENTS, **BINLOG_CLOUD_EVENTS})
    expected = iter(oracle[("cloudevents" if schemas else "cloudevents-noschema", fixture)])
    compared = 0
    for record in _records(fixture):
        theirs = next(expected)
        mine = converter.to_record(from_json(record)).value
        if theirs is None:
            assert mine is None, record
            continue
        assert "error" not in theirs, theirs["error"]
        assert mine is not None
        assert json.loads(mine) == json.loads(theirs["text"])
        assert list(json.loads(mine)) == list(json.loads(theirs["text"])), "attribute order"
        compared += 1
    assert compared > 0 or fixture.endswith("truncate")


@pytest.mark.parametrize("fixture", PG + MARIADB)
def test_simple_header_converter_as_kafka_connect(oracle: dict[tuple[str, str], list[Any]], fixture: str) -> None:
    converter = SimpleHeaderConverter()
    expected = iter(oracle[("simpleheader", fixture)])
    compared = 0
    for record in _records(fixture):
        event = from_json(record)
        parts = [(event.key_schema, event.key), (event.value_schema, event.value)]
        parts += [(schema, payload) for _, schema, payload in event.headers or ()]
        for schema, payload in parts:
            theirs = next(expected)
            assert not isinstance(theirs, dict), theirs
            mine = converter.to_bytes(schema, payload)
            text = mine.decode() if mine is not None else None
            if text != theirs and text is not None and theirs is not None:
                text, theirs = _same_float32_digits(text, theirs)
            assert text == theirs, f"{event.topic}: {payload!r}"
            compared += 1
    assert compared > 0


_NUMBER = re.compile(r"-?\d+\.\d+(?:E-?\d+)?")


def _same_float32_digits(mine: str, theirs: str) -> tuple[str, str]:
    """Java 17's Float.toString is not always the shortest (1.17549435E-38 for 1.1754944E-38, which
    Java 19+ prints): where the two texts differ only in numbers that are the same 32-bit float, the
    oracle's digits are taken."""
    a, b = _NUMBER.split(mine), _NUMBER.split(theirs)
    x, y = _NUMBER.findall(mine), _NUMBER.findall(theirs)
    if a != b or len(x) != len(y):
        return mine, theirs
    for p, q in zip(x, y, strict=True):
        if p != q and not (max(abs(float(p)), abs(float(q))) < 3.4e38 and _float32(p) == _float32(q)):
            return mine, theirs
    return theirs, theirs


def _float32(text: str) -> float:
    return float(struct.unpack("<f", struct.pack("<f", float(text)))[0])
