"""LSNs: binary(10) <-> Debezium's text, and their order."""
from __future__ import annotations

import pytest

from cdc.sources.sqlserver.lsn import NULL, Lsn, text_or_none


def test_round_trip_and_text() -> None:
    raw = bytes.fromhex("00000027000007580005")
    lsn = Lsn.of(raw)
    assert str(lsn) == "00000027:00000758:0005"
    assert Lsn.parse("00000027:00000758:0005") == lsn
    assert Lsn.of("00000025:00000d98:00a2").raw == bytes.fromhex("0000002500000d9800a2")
    assert Lsn.of(bytearray(raw)) == lsn and Lsn.of(lsn) is lsn


def test_order_is_unsigned_big_endian() -> None:
    values = ["00000027:00000758:0005", "00000027:00000758:0003", "00000027:00000ac0:0002", "ffffffff:00000000:0000",
              "00000028:00000000:0000"]
    ordered = sorted(Lsn.parse(v) for v in values)
    assert [str(v) for v in ordered] == ["00000027:00000758:0003", "00000027:00000758:0005", "00000027:00000ac0:0002",
                                         "00000028:00000000:0000", "ffffffff:00000000:0000"]


def test_null() -> None:
    assert Lsn.of(None) == NULL and not NULL.available
    assert text_or_none(NULL) is None and text_or_none(None) is None
    assert text_or_none(Lsn.parse("00000001:00000002:0003")) == "00000001:00000002:0003"


@pytest.mark.parametrize("bad", ["", "00000027:00000758", "0000027:00000758:0005", "0000002g:00000758:0005"])
def test_bad_text(bad: str) -> None:
    with pytest.raises(ValueError, match="not an LSN"):
        Lsn.parse(bad)


def test_wrong_size() -> None:
    with pytest.raises(ValueError, match="10 bytes"):
        Lsn.of(b"\x00" * 8)
