"""Kafka Connect's offsets file (Debezium's FileOffsetBackingStore): cdc reads what Connect wrote and
Connect reads what cdc wrote, checked against Connect's own class (oracle/OffsetsOracle.java)."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import orjson
import pytest

from cdc.config import CORE_OPTIONS, Config
from cdc.core.connect_offsets import (
    FILE_CLASS,
    ConnectFileOffsetStore,
    read_connect_offsets,
    write_connect_offsets,
)
from cdc.core.errors import OffsetStoreError
from cdc.core.offsets import FileOffsetStore
from cdc.pipeline import offset_store

ROOT = Path(__file__).resolve().parents[2]
ORACLE = Path(__file__).resolve().parent / "oracle" / "OffsetsOracle.java"
KEY_A = '["shop",{"server":"shop"}]'
KEY_B = '["other",{"server":"erp"}]'


def test_round_trip_keeps_every_entry() -> None:
    entries: dict[bytes, bytes | None] = {f'["c{i}",{{"server":"s{i}"}}]'.encode(): f'{{"lsn":{i}}}'.encode()
                                          for i in range(40)}  # past the first 16-bucket capacity
    entries[b'["gone",{"server":"g"}]'] = None  # a deleted offset
    data = write_connect_offsets(entries)
    assert data.startswith(b"\xac\xed\x00\x05")
    assert read_connect_offsets(data) == entries


def test_a_cut_or_foreign_file_is_an_error_naming_it(tmp_path: Path) -> None:
    whole = write_connect_offsets({KEY_A.encode(): b'{"lsn":1}'})
    path = tmp_path / "offsets.dat"
    path.write_bytes(whole[:-7])
    with pytest.raises(OffsetStoreError, match="not a Kafka Connect offsets file"):
        ConnectFileOffsetStore(path, "shop", "shop").load()
    # cdc's own JSON store, given Connect's file, says what it is and how to use it
    path.write_bytes(whole)
    with pytest.raises(OffsetStoreError, match="Kafka Connect's") as error:
        FileOffsetStore(path, "shop").load()
    assert FILE_CLASS in (error.value.fix or "")


def test_class_names_choose_the_stores(tmp_path: Path) -> None:
    base = {"topic.prefix": "shop", "name": "shop", "offset.storage.file.filename": str(tmp_path / "o.dat")}
    store = offset_store(Config({**base, "offset.storage": FILE_CLASS}).declare(CORE_OPTIONS))
    assert isinstance(store, ConnectFileOffsetStore) and store.key == KEY_A.encode()
    assert isinstance(offset_store(Config({**base, "offset.storage": "file"}).declare(CORE_OPTIONS)), FileOffsetStore)


@pytest.fixture(scope="module")
def oracle(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    if shutil.which("java") is None or shutil.which("mvn") is None:
        pytest.skip("needs Java and Maven for Kafka Connect's jars (scripts/connect.sh)")
    script = str(ROOT / "scripts" / "connect.sh")
    subprocess.run(["bash", script, "fetch"], check=True, capture_output=True, timeout=900)
    classpath = subprocess.run(["bash", script, "classpath"], check=True, capture_output=True,
                               text=True).stdout.strip()
    work = tmp_path_factory.mktemp("offsets-oracle")
    subprocess.run(["javac", "-nowarn", "-cp", classpath, "-d", str(work), str(ORACLE)], check=True,
                   capture_output=True)
    return ["java", "-cp", f"{classpath}:{work}", "OffsetsOracle"]


def _java(oracle: list[str], *args: str) -> list[str]:
    run = subprocess.run([*oracle, *args], check=True, capture_output=True, text=True, timeout=120)
    return run.stdout.splitlines()


def test_resume_from_debezium_and_hand_back(oracle: list[str], tmp_path: Path) -> None:
    path = tmp_path / "offsets.dat"
    # Debezium's worker stopped here (and another connector shares the file)
    _java(oracle, "write", str(path), KEY_A, '{"lsn":100,"txId":7}', KEY_B, '{"file":"b.000001","pos":4}')
    store = ConnectFileOffsetStore(path, "shop", "shop")
    store.check()
    assert store.load() == {"lsn": 100, "txId": 7}
    store.save({"lsn": 250, "txId": 9, "lsn_commit": 250})
    # Connect reads back cdc's position, and the other connector's as it was
    assert [orjson.loads(v) for v in _java(oracle, "read", str(path), KEY_A, KEY_B)] == [
        {"lsn": 250, "txId": 9, "lsn_commit": 250}, {"file": "b.000001", "pos": 4}]
    assert ConnectFileOffsetStore(path, "absent", "absent").load() is None
