"""The status page of a real pipeline, rendered by a real headless Chromium (Debian's package, installed
by scripts/chromium.sh), its screenshot read back with Pillow: the charts are drawn, the title is there."""
from __future__ import annotations

import logging
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import psycopg
import pytest

from cdc.metrics import Monitoring
from tests.conftest import ROOT
from tests.integration.harness import Pipeline

RATE_LINE = (0x09, 0x69, 0xDA)  # page.py's colors: events/s line, ms behind line
BEHIND_LINE = (0xBF, 0x39, 0x89)
TEXT = (0x1D, 0x27, 0x33)


@pytest.fixture(scope="module")
def chromium() -> str:
    try:
        run = subprocess.run(["bash", str(ROOT / "scripts" / "chromium.sh")], env={"PYTHON": sys.executable,
                             "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
                             capture_output=True, text=True, timeout=900)
    except (subprocess.SubprocessError, OSError) as exc:
        pytest.skip(f"no Chromium: scripts/chromium.sh failed ({exc})")
    if run.returncode != 0:
        pytest.skip(f"no Chromium: scripts/chromium.sh failed: {run.stderr[-500:]}")
    return run.stdout.strip().splitlines()[-1]


def screenshot(chromium: str, url: str, path: Path) -> None:
    subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                    "--window-size=1000,1500", f"--screenshot={path}", url],
                   check=True, capture_output=True, timeout=120)


def near(pixel: tuple[int, ...], color: tuple[int, int, int], tolerance: int = 40) -> bool:
    return all(abs(a - b) <= tolerance for a, b in zip(pixel[:3], color, strict=True))


@pytest.mark.postgres
def test_status_page_in_chromium(pg_db: dict[str, str], tmp_path: Path, chromium: str) -> None:
    from PIL import Image

    with psycopg.connect(pg_db["dsn"], autocommit=True) as conn:
        conn.execute("CREATE TABLE orders (id serial PRIMARY KEY, v int)")
        conn.execute("CREATE TABLE customers (id int PRIMARY KEY)")
        conn.execute("INSERT INTO orders (v) SELECT g FROM generate_series(1, 300) g")
        conn.execute("INSERT INTO customers SELECT g FROM generate_series(1, 40) g")
    p = Pipeline({**pg_db, "snapshot.mode": "initial"}, tmp_path / "o.json")
    p.config.properties.update({"metrics.sample.interval.ms": "100", "metrics.lag.interval.ms": "100",
                                "name": "shop-orders"})
    monitoring = Monitoring(p.engine, p.config, "postgres", port=0)
    try:
        with p:
            p.wait_count(340)
            p.wait_ready()
            with psycopg.connect(pg_db["dsn"], autocommit=True) as conn:  # a rising then falling rate
                for burst in (5, 20, 40, 20, 5, 30):
                    for _ in range(burst):
                        conn.execute("INSERT INTO orders (v) VALUES (0)")
                    time.sleep(0.15)
            p.wait_count(340 + 120)
            logging.getLogger("cdc.test").warning("a warning the page lists")
            while len(monitoring.metrics.history.samples()) < 12:
                time.sleep(0.05)
            url = f"http://127.0.0.1:{monitoring.port}/"
            html = urllib.request.urlopen(url, timeout=5).read().decode()
            shot = tmp_path / "page.png"
            screenshot(chromium, url, shot)
    finally:
        monitoring.close()

    assert "<title>cdc shop-orders</title>" in html
    assert "Snapshot: completed" in html
    assert "<td>public.orders</td><td>300</td><td>done</td>" in html
    assert "<td>public.customers</td><td>40</td><td>done</td>" in html
    assert "a warning the page lists" in html and "<script" not in html

    image = Image.open(shot).convert("RGB")
    width, height = image.size
    pixels = image.load()
    colors = {}
    for y in range(0, height, 2):
        for x in range(0, width, 2):
            colors[pixels[x, y]] = colors.get(pixels[x, y], 0) + 1
    rate = sum(n for c, n in colors.items() if near(c, RATE_LINE))
    behind = sum(n for c, n in colors.items() if near(c, BEHIND_LINE))
    assert rate > 40, f"the events/s chart has no line ({rate} pixels of its color)"
    assert behind > 40, f"the lag chart has no line ({behind} pixels of its color)"
    assert len(colors) > 50, "the page looks blank"
    # the title: dark text in the top band, on a white page
    title = [pixels[x, y] for y in range(10, 60) for x in range(10, 500)]
    dark = sum(1 for c in title if near(c, TEXT, 60))
    assert dark > 150, f"no title text drawn ({dark} dark pixels)"
    assert sum(1 for c in title if near(c, (255, 255, 255), 5)) > len(title) // 2
