"""A client of Confluent's schema registry REST API (also served by Apicurio under /apis/ccompat/v7).

Plain HTTP through the standard library rather than confluent-kafka's SchemaRegistryClient: the
converter needs three calls (register, look up under a subject, read by id), and the client would
bring httpx, authlib and attrs into every Avro user's install for them. Ids are cached per
(subject, schema text), as Confluent's CachedSchemaRegistryClient does, so the registry is asked
once per table version, not per record.
"""
from __future__ import annotations

import base64
import json
import threading
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

from cdc.core.errors import CdcError, ConfigError

CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"


class SchemaRegistryError(CdcError):
    """The registry refused a schema, or could not be reached (then retriable)."""


class UnreachableRegistryError(SchemaRegistryError):
    retriable = True


class SchemaRegistry:
    def __init__(self, urls: list[str], user_info: str | None = None, timeout_s: float = 30.0) -> None:
        if not urls:
            raise ConfigError("no schema registry URL", fix="set value.converter.schema.registry.url "
                              "(and key.converter.schema.registry.url for Avro keys)")
        self.urls = [u.rstrip("/") for u in urls]
        self.timeout_s = timeout_s
        self._auth: str | None = None
        if user_info:
            self._auth = "Basic " + base64.b64encode(user_info.encode()).decode()
        self._ids: dict[tuple[str, str], int] = {}
        self._lock = threading.Lock()

    @classmethod
    def from_url_list(cls, urls: str, user_info: str | None = None, credentials_source: str = "url") -> SchemaRegistry:
        """``schema.registry.url`` (comma-separated) and ``basic.auth.*``: USER_INFO takes ``user:password``
        from ``basic.auth.user.info``, URL takes it from the URLs' own ``user:password@``."""
        plain: list[str] = []
        for url in (u.strip() for u in urls.split(",") if u.strip()):
            parts = urllib.parse.urlsplit(url)
            if parts.username is not None:
                if credentials_source == "url" and user_info is None:
                    user_info = f"{urllib.parse.unquote(parts.username)}:{urllib.parse.unquote(parts.password or '')}"
                parts = parts._replace(netloc=(parts.hostname or "") + (f":{parts.port}" if parts.port else ""))
            plain.append(urllib.parse.urlunsplit(parts))
        return cls(plain, user_info)

    def register(self, subject: str, schema: str) -> int:
        """The id of ``schema`` under ``subject``, registering it as a new version if needed."""
        return self._cached(subject, schema, f"/subjects/{_quote(subject)}/versions")

    def lookup(self, subject: str, schema: str) -> int:
        """The id of ``schema`` already registered under ``subject`` (auto.register.schemas=false)."""
        return self._cached(subject, schema, f"/subjects/{_quote(subject)}")

    def schema_by_id(self, schema_id: int) -> str:
        return str(self._request("GET", f"/schemas/ids/{schema_id}")["schema"])

    def _cached(self, subject: str, schema: str, path: str) -> int:
        key = (subject, schema)
        found = self._ids.get(key)
        if found is not None:
            return found
        with self._lock:
            if key not in self._ids:
                self._ids[key] = int(self._request("POST", path, {"schema": schema})["id"])
            return self._ids[key]

    def _request(self, method: str, path: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
        data = None if body is None else json.dumps(body).encode()
        headers = {"Accept": CONTENT_TYPE, "Content-Type": CONTENT_TYPE}
        if self._auth:
            headers["Authorization"] = self._auth
        unreachable: list[str] = []
        for base in self.urls:  # like Confluent's client: the next URL only when one cannot be reached
            request = urllib.request.Request(base + path, data=data, method=method, headers=headers)
            try:
                with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
                    return dict(json.loads(response.read()))
            except urllib.error.HTTPError as exc:
                raise _refused(exc, base + path) from None
            except (urllib.error.URLError, OSError) as exc:
                unreachable.append(f"{base}: {getattr(exc, 'reason', exc)}")
        raise UnreachableRegistryError(f"no schema registry answers ({'; '.join(unreachable)})",
                                       fix="start the registry or correct schema.registry.url")


def _quote(subject: str) -> str:
    return urllib.parse.quote(subject, safe="")


def _refused(exc: urllib.error.HTTPError, url: str) -> SchemaRegistryError:
    try:
        detail = json.loads(exc.read() or b"{}")
        message = detail.get("message") or detail
        code = detail.get("error_code", exc.code)
    except ValueError:
        message, code = exc.reason, exc.code
    fix = {401: "check basic.auth.credentials.source and basic.auth.user.info",
           403: "check basic.auth.credentials.source and basic.auth.user.info",
           40401: "register the schema first, or set auto.register.schemas=true",
           40403: "register the schema first, or set auto.register.schemas=true",
           409: "the subject's compatibility rule refuses this schema: change the rule or the subject strategy",
           42201: "the registry finds the schema invalid"}.get(int(code), None)
    error = SchemaRegistryError(f"the schema registry refused {url} (HTTP {exc.code}, {code}): {message}", fix=fix)
    if exc.code >= 500:
        error = UnreachableRegistryError(error.message, fix="retrying; check the registry's log")
    return error
