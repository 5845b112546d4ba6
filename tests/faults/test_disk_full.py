"""A full disk under the output folder (events, offsets and, for MariaDB, the schema history), during the
snapshot and during the stream, under a writer: the run stops with an error that names the folder, the
cause and the way on; once space is freed the next run resumes, and nothing is lost. The disk is a small
tmpfs mounted for the case (root only), filled by a file of the test's."""
from __future__ import annotations

import errno
import os
import random
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.faults.conftest import NO_MOUNT, sources
from tests.faults.harness import Cdc, Source, Writer, finish, seed, verify

pytestmark = pytest.mark.faults

SIZE_MB = 48


@pytest.fixture()
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A tmpfs of SIZE_MB mounted at tmp_path/out for the case."""
    out = tmp_path / "out"
    out.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={SIZE_MB}m,mode=0755", "tmpfs", str(out)],
                             capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"{NO_MOUNT} (needs root, or a container allowed to mount): {mounted.stderr.strip()}")
    try:
        yield out
    finally:
        for _ in range(20):
            if subprocess.run(["umount", str(out)], capture_output=True).returncode == 0:
                break
            time.sleep(0.5)
        else:
            subprocess.run(["umount", "-l", str(out)], capture_output=True)


def fill(folder: Path, leave: int = 0) -> Path:
    """A file that takes all the free space of ``folder``'s disk but ``leave`` bytes."""
    filler = folder / "filler"
    block = b"\0" * (1 << 20)
    with open(filler, "wb") as handle:
        try:
            while True:
                free = os.statvfs(folder).f_bavail * os.statvfs(folder).f_frsize
                if free <= leave:
                    break
                handle.write(block[:max(1, min(len(block), free - leave))])
                handle.flush()
        except OSError as exc:
            if exc.errno != errno.ENOSPC:
                raise
    return filler


def _disk_full_error(cdc: Cdc) -> str:
    text = cdc.wait_failed(120)  # cdc: error + fix, no traceback
    assert "No space left on device" in text, text[-3000:]
    assert str(cdc.out) in text, f"the error does not name the folder:\n{text[-3000:]}"
    assert "space" in text.split("fix:", 1)[1], f"the fix does not say to free space:\n{text[-3000:]}"
    return text


@pytest.mark.parametrize("source", sources(), indirect=True)
def test_disk_full_during_snapshot(source: Source, tmp_path: Path, small_disk: Path) -> None:
    rng = random.Random(seed())
    rows = 30_000
    source.create_table(rows)
    filler = fill(small_disk, leave=3 << 20)  # room for a few thousand events of the snapshot
    cdc = Cdc(source, tmp_path, out=small_disk)
    writer = Writer(source, range(1, rows + 1), rng).start()
    try:
        cdc.start()
        _disk_full_error(cdc)
        writer.wait_ops(len(writer.ops) + 100)
        filler.unlink()
        cdc.start()
        assert cdc.wait_log(source.streaming_marker), cdc.tail()
        finish(cdc, writer)
    finally:
        writer.stop()
        cdc.close()
    verify(cdc, writer)
    assert cdc.events.truncates >= 1 or cdc.runs[0].end_event == 0, "the snapshot was not taken again"


@pytest.mark.parametrize("source", sources(), indirect=True)
def test_disk_full_during_stream(source: Source, tmp_path: Path, small_disk: Path) -> None:
    rng = random.Random(seed())
    source.create_table(1000)
    cdc = Cdc(source, tmp_path, out=small_disk)
    writer = Writer(source, range(1, 1001), rng)
    try:
        cdc.start()
        assert cdc.wait_log(source.streaming_marker), cdc.tail()
        writer.start()
        writer.wait_ops(300)
        filler = fill(small_disk)
        _disk_full_error(cdc)
        writer.wait_ops(len(writer.ops) + 200)
        filler.unlink()
        cdc.start()
        finish(cdc, writer)
    finally:
        writer.stop()
        cdc.close()
    verify(cdc, writer)
