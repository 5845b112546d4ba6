"""The HTTP server on ``metrics.port``: ``/metrics`` (Prometheus' text format) and ``/`` (the status page)."""
from __future__ import annotations

import logging
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from cdc.core.errors import ConfigError
from cdc.metrics.page import render
from cdc.metrics.registry import PipelineMetrics

log = logging.getLogger(__name__)


class MetricsServer:
    def __init__(self, metrics: PipelineMetrics, host: str, port: int, title: str) -> None:
        """``port`` 0 picks a free one (tests); ``self.port`` says which."""
        handler = _handler(metrics, title)
        try:
            self._server = ThreadingHTTPServer((host, port), handler)
        except OSError as exc:
            raise ConfigError(f"cannot serve metrics on {host}:{port}: {exc.strerror or exc}",
                              fix="choose a free metrics.port (or 0 to turn the metrics server off)") from None
        self._server.daemon_threads = True
        self.host, self.port = host, int(self._server.server_address[1])
        self._thread = threading.Thread(target=self._server.serve_forever, name="cdc-metrics-http", daemon=True)

    def start(self) -> MetricsServer:
        self._thread.start()
        log.info("metrics on http://%s:%d/metrics, status page on http://%s:%d/", self.host, self.port, self.host,
                 self.port)
        return self

    def close(self) -> None:
        if self._thread.is_alive():
            self._server.shutdown()
        self._server.server_close()


def _handler(metrics: PipelineMetrics, title: str) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            path = self.path.split("?", 1)[0]
            if path in ("/metrics", "/", "/index.html"):
                metrics.refresh()  # the source's lag, looked at now if the last look predates its stream
            if path == "/metrics":
                self._send(200, CONTENT_TYPE_LATEST, generate_latest(metrics.registry))
            elif path in ("/", "/index.html"):
                self._send(200, "text/html; charset=utf-8", render(metrics, title).encode())
            else:
                self._send(404, "text/plain; charset=utf-8", b"not found: try /metrics or /\n")

        def _send(self, status: int, content_type: str, body: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - http.server's signature
            log.debug("metrics http: " + format, *args)

    return Handler
