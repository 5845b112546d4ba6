"""The status page: plain HTML with inline SVG charts drawn here, from the history's samples (no
JavaScript, nothing loaded from elsewhere). It reloads itself every 10 seconds."""
from __future__ import annotations

import time
from collections.abc import Sequence
from html import escape
from typing import Any

from cdc.metrics.findings import duration, size
from cdc.metrics.history import WINDOW_S, Sample
from cdc.metrics.registry import PipelineMetrics

WIDTH, HEIGHT, LEFT, TOP, BOTTOM, RIGHT = 660, 160, 64, 8, 22, 20

STYLE = """
body { font-family: sans-serif; margin: 24px; color: #1d2733; background: #fff; }
h1 { font-size: 22px; margin: 0 0 4px; } h2 { font-size: 16px; margin: 22px 0 6px; }
.sub { color: #5a6775; margin-bottom: 12px; } .lag { font-size: 15px; }
table { border-collapse: collapse; font-size: 13px; } td, th { padding: 3px 10px 3px 0; text-align: left; }
.ok { color: #1a7f37; } .bad { color: #cf222e; } .warn { color: #9a6700; }
.charts { display: flex; flex-wrap: wrap; gap: 12px 28px; }
pre { font-size: 12px; background: #f5f7f9; padding: 6px; white-space: pre-wrap; margin: 2px 0; }
"""


def chart(title: str, points: Sequence[tuple[float, float]], now: float, span: float, unit: str, color: str) -> str:
    """An SVG line chart of (time, value) over the last ``span`` seconds, the area under the line filled."""
    w, h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" role="img" '
             f'aria-label="{escape(title)}">',
             f'<rect x="{LEFT}" y="{TOP}" width="{w}" height="{h}" fill="#f5f7f9" stroke="#c9d1d9"/>']
    top = max((v for _, v in points), default=0.0) or 1.0
    for frac in (0.5, 1.0):
        y = TOP + h - frac * h
        parts.append(f'<line x1="{LEFT}" y1="{y:.1f}" x2="{LEFT + w}" y2="{y:.1f}" stroke="#d8dee4"/>')
        parts.append(f'<text x="{LEFT - 4}" y="{y + 4:.1f}" font-size="10" text-anchor="end">'
                     f'{_number(top * frac)}</text>')
    for frac in (1.0, 0.75, 0.5, 0.25, 0.0):
        x = LEFT + w * (1 - frac)
        anchor = "start" if frac == 1.0 else "end" if frac == 0.0 else "middle"
        parts.append(f'<text x="{x:.1f}" y="{HEIGHT - 6}" font-size="10" text-anchor="{anchor}">'
                     f'{_ago(span * frac)}</text>')
    if len(points) >= 2:
        xy = [(LEFT + w * max(0.0, 1 - (now - t) / span), TOP + h - h * v / top) for t, v in points]
        line = " ".join(f"{x:.1f},{y:.1f}" for x, y in xy)
        area = f"{xy[0][0]:.1f},{TOP + h} {line} {xy[-1][0]:.1f},{TOP + h}"
        parts.append(f'<polygon points="{area}" fill="{color}" fill-opacity="0.25"/>')
        parts.append(f'<polyline points="{line}" fill="none" stroke="{color}" stroke-width="2"/>')
    else:
        parts.append(f'<text x="{LEFT + w / 2}" y="{TOP + h / 2}" font-size="12" text-anchor="middle" '
                     'fill="#5a6775">no samples yet</text>')
    parts.append("</svg>")
    return f'<div><div>{escape(title)} ({escape(unit)})</div>{"".join(parts)}</div>'


def _ago(seconds: float) -> str:
    if seconds <= 0:
        return "now"
    if seconds < 10:
        return f"-{seconds:.1f} s"
    return f"-{duration(seconds)}"


def span(samples: list[Sample], now: float, interval_s: float) -> float:
    """The charts' time axis: the last hour, or less while the pipeline is younger (at least ten samples)."""
    if not samples:
        return WINDOW_S
    return min(WINDOW_S, max(now - samples[0].time, 10 * interval_s))


def _number(value: float) -> str:
    for limit, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if value >= limit:
            return f"{value / limit:.1f}{suffix}"
    return f"{value:.0f}" if value >= 10 else f"{value:.1f}"


def _series(samples: list[Sample], attribute: str) -> list[tuple[float, float]]:
    return [(s.time, float(v)) for s in samples if (v := getattr(s, attribute)) is not None]


def render(metrics: PipelineMetrics, title: str) -> str:
    now = time.time()
    samples = metrics.history.samples()
    delay = "-" if metrics.behind_ms is None else f"{metrics.behind_ms:,.0f} ms"
    rows = [
        ("connected", _flag(metrics.connected() == 1.0)),
        ("lag", f'<b class="lag">{escape(live_lag(metrics))}</b> <span class="sub">(the source\'s position against '
                f"ours; the last event's delay: {escape(delay)})</span>"),
        ("change events streamed", f"{metrics.streamed_total:,}"),
        ("snapshot rows", f"{metrics.snapshot_total:,}"),
        ("position read", _offset(metrics.read_offset)),
        ("offset stored", _offset(metrics.committed_offset)),
    ]
    axis = span(samples, now, metrics.history.interval_s)
    charts = [chart("Change events per second", _series(samples, "rate"), now, axis, "events/s", "#0969da"),
              chart("Milliseconds behind source", _series(samples, "behind_ms"), now, axis, "ms", "#bf3989")]
    lag = _series(samples, "lag_bytes")
    if lag or metrics.source_lag:
        charts.append(chart("Source lag", lag, now, axis, "bytes", "#8250df"))
    body = [
        f"<h1>cdc pipeline {escape(title)}</h1>",
        f'<div class="sub">{escape(metrics.plugin)} source, topic prefix {escape(metrics.server)}; '
        f'samples every {metrics.history.interval_s:g} s, last hour; <a href="/metrics">/metrics</a></div>',
        _table(rows),
        f"<h2>Rate and lag, last {duration(axis)}</h2>",
        f'<div class="charts">{"".join(charts)}</div>',
        _snapshot(metrics.snapshot_state()),
        _source_lag(metrics.source_lag),
        _errors(metrics, now),
    ]
    return ("<!DOCTYPE html><html><head><meta charset=\"utf-8\"><meta http-equiv=\"refresh\" content=\"10\">"
            f"<title>cdc {escape(title)}</title><style>{STYLE}</style></head><body>"
            + "".join(body) + "</body></html>")


def live_lag(metrics: PipelineMetrics) -> str:
    """The headline lag: where the source's log stands against the pipeline's position now, as its lag
    watch last saw it (cdc.core.source.ReportsLag), in time and in bytes where the source tells; not
    the delay of the last event, which stays where it was while nothing happens."""
    lag = metrics.lag
    if lag is None:
        return "-"
    parts = []
    if lag.lag_seconds is not None:
        parts.append(f"{lag.lag_seconds * 1000:,.0f} ms")
    if lag.lag_bytes is not None:
        parts.append(size(lag.lag_bytes))
    return ", ".join(parts) or "?"


def _flag(ok: bool) -> str:
    return '<span class="ok">yes</span>' if ok else '<span class="bad">no</span>'


def _offset(offset: dict[str, Any] | None) -> str:
    if not offset:
        return "-"
    return escape(", ".join(f"{k}={v}" for k, v in offset.items() if not isinstance(v, (dict, list))))


def _table(rows: list[tuple[str, str]], header: tuple[str, ...] = ()) -> str:
    head = "<tr>" + "".join(f"<th>{escape(h)}</th>" for h in header) + "</tr>" if header else ""
    return "<table>" + head + "".join(f"<tr><td>{escape(k)}</td><td>{v}</td></tr>" for k, v in rows) + "</table>"


def _snapshot(state: dict[str, Any]) -> str:
    if not state["tables"]:
        return "<h2>Snapshot</h2><div>no snapshot in this run</div>"
    status = "running" if state["running"] else "completed" if state["completed"] else "-"
    rows = "".join(f"<tr><td>{escape(table)}</td><td>{s.rows:,}</td><td>{'done' if s.done else 'reading'}</td></tr>"
                   for table, s in state["tables"].items())
    return (f"<h2>Snapshot: {status}, {duration(state['duration_s'])}</h2>"
            f"<table><tr><th>table</th><th>rows scanned</th><th></th></tr>{rows}</table>")


def _source_lag(lag: dict[str, Any]) -> str:
    if not lag:
        return ""
    shown = {k: v for k, v in lag.items() if k not in ("files", "kind") and v is not None}
    return "<h2>At the source</h2>" + _table([(k, escape(str(v))) for k, v in shown.items()])


def _errors(metrics: PipelineMetrics, now: float) -> str:
    errors = list(metrics.errors)[::-1]
    if not errors:
        return '<h2>Last errors</h2><div class="ok">none</div>'
    items = "".join(
        f'<div><span class="{"bad" if e.level in ("ERROR", "CRITICAL") else "warn"}">{escape(e.level)}</span> '
        f'{duration(now - e.time)} ago, {escape(e.logger)}<pre>{escape(e.message)}</pre></div>' for e in errors)
    return f"<h2>Last errors</h2>{items}"
