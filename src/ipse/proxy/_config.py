"""What a proxy is told: where it listens, its upstreams, what it records and where it keeps state.

An upstream is an origin (scheme, host, port) with an optional path prefix; the request's own path
and query are appended to it. Nothing here imports the HTTP stack.
"""

from __future__ import annotations

import hashlib
import ipaddress
import os
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from ipse import jsonio
from ipse.errors import UsageError
from ipse.handoff._shared import CHECKPOINT_TOOLS, AutopilotPolicy

ANTHROPIC_UPSTREAM = "https://api.anthropic.com"
OPENAI_UPSTREAM = "https://api.openai.com"
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
MAX_BODY = 64 * 1024 * 1024  # request bodies larger than this are refused (413)
READ_TIMEOUT = 600.0  # Claude Code waits this long (x-stainless-timeout: 600)
DEFAULT_WORKERS = 1  # processes serving the port (``--workers``)


@dataclass(frozen=True, slots=True)
class Upstream:
    """An origin and an optional path prefix: ``http://host:port/prefix``."""

    origin: str
    prefix: str = ""

    @classmethod
    def parse(cls, value: str, what: str = "upstream") -> Upstream:
        parts = urlsplit(value.strip())
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise UsageError(f"{what}: expected http(s)://host[:port][/prefix], got {value!r}")
        if parts.query or parts.fragment or parts.username or parts.password:
            raise UsageError(f"{what}: no query, fragment or credentials in an upstream URL")
        try:
            port = parts.port
        except ValueError as exc:
            raise UsageError(f"{what}: bad port in {value!r}") from exc
        host = parts.hostname
        if ":" in host:
            host = f"[{host}]"
        origin = f"{parts.scheme}://{host}" + (f":{port}" if port else "")
        return cls(origin, parts.path.rstrip("/"))

    def url(self, path: str, query: str = "") -> str:
        """The upstream URL for a request's path and query string."""
        return self.origin + self.prefix + path + (f"?{query}" if query else "")

    def __str__(self) -> str:
        return self.origin + self.prefix


@dataclass(frozen=True, slots=True, kw_only=True)
class ProxyConfig:
    """Everything `ipse.proxy.create_app` and `serve` need.

    An upstream set to None is not contacted: requests for that provider are answered by the
    proxy with a 404 in the provider's shape (see `from_options` for when that is)."""

    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    anthropic: Upstream | None = field(default_factory=lambda: Upstream.parse(ANTHROPIC_UPSTREAM))
    openai: Upstream | None = field(default_factory=lambda: Upstream.parse(OPENAI_UPSTREAM))
    record: Path | None = None
    store: str | None = None  # None: the default store (SQLite in ipse's home)
    json_log: bool = False
    log: bool = True  # one line per request on stderr
    tool_names: tuple[str, ...] = CHECKPOINT_TOOLS
    handoff: bool = True
    handoff_budget: int | None = None  # tokens a handoff's rewritten part is held to
    autopilot: AutopilotPolicy = field(default_factory=AutopilotPolicy)
    analyze: bool = True  # compare each response's usage with the cache model's prediction
    connect_timeout: float = 10.0
    read_timeout: float = READ_TIMEOUT
    max_body: int = MAX_BODY
    # processes serving the one socket (`ipse.proxy.serve`); how many serve is not a setting of
    # what each request gets, so it stays out of `digest`
    workers: int = DEFAULT_WORKERS

    def __post_init__(self) -> None:
        if not 0 <= self.port <= 65535:
            raise UsageError(f"--port: 0 to 65535, got {self.port}")
        if self.workers < 1:
            raise UsageError(f"--workers: at least 1, got {self.workers}")
        if self.workers > 1 and not hasattr(os, "fork"):
            raise UsageError("--workers above 1 needs os.fork (Linux, macOS)")
        if self.read_timeout <= 0 or self.connect_timeout <= 0:
            raise UsageError("timeouts must be positive")
        if self.handoff_budget is not None and self.handoff_budget < 1:
            raise UsageError(f"--handoff-budget: at least 1 token, got {self.handoff_budget}")

    @property
    def loopback(self) -> bool:
        return is_loopback(self.host)

    def upstream(self, provider: str) -> Upstream | None:
        """The upstream of ``provider`` (``anthropic`` or ``openai``), None when not configured."""
        return self.anthropic if provider == "anthropic" else self.openai

    def upstreams(self) -> dict[str, str | None]:
        """Each provider's upstream as shown (None: not configured)."""
        return {
            "anthropic": str(self.anthropic) if self.anthropic else None,
            "openai": str(self.openai) if self.openai else None,
        }

    def digest(self) -> str:
        """A digest of what decides the proxy's behaviour (not where it listens, nor where it
        keeps its record: replicas each keep their own): two proxies with the same digest do the
        same with every request."""
        settings = {
            "upstreams": self.upstreams(),
            "store": self.store,
            "json_log": self.json_log,
            "log": self.log,
            "tool_names": list(self.tool_names),
            "handoff": self.handoff,
            "handoff_budget": self.handoff_budget,
            "autopilot": self.autopilot_settings(),
            "analyze": self.analyze,
            "timeouts": [self.connect_timeout, self.read_timeout],
            "max_body": self.max_body,
        }
        return hashlib.sha256(jsonio.dumps(settings)).hexdigest()[:16]

    def autopilot_settings(self) -> dict[str, object]:
        """The autopilot's settings as the health document shows them (``soft``, ``hard``:
        None where the policy works them out per model and client)."""
        policy = self.autopilot
        return {"mode": policy.mode, "soft": policy.soft, "hard": policy.hard}

    def record_digest(self) -> str | None:
        """A digest of where the record is kept (None: no record), for ``ipse proxy start`` to
        tell a running proxy's record from the one asked for without showing its path."""
        if self.record is None:
            return None
        return hashlib.sha256(str(self.record.resolve()).encode()).hexdigest()[:16]

    @classmethod
    def upstreams_from_options(
        cls, anthropic: str | None, openai: str | None
    ) -> tuple[Upstream | None, Upstream | None]:
        """The upstreams a command line means: none given, both public endpoints; one given,
        only that one (the other provider was not asked for, so it is never contacted)."""
        if anthropic is None and openai is None:
            return Upstream.parse(ANTHROPIC_UPSTREAM), Upstream.parse(OPENAI_UPSTREAM)
        return (
            Upstream.parse(anthropic, "--anthropic-upstream") if anthropic is not None else None,
            Upstream.parse(openai, "--openai-upstream") if openai is not None else None,
        )


def is_loopback(host: str) -> bool:
    """Whether ``host`` only accepts connections from this machine."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


__all__ = [
    "ANTHROPIC_UPSTREAM",
    "DEFAULT_HOST",
    "DEFAULT_PORT",
    "DEFAULT_WORKERS",
    "MAX_BODY",
    "OPENAI_UPSTREAM",
    "READ_TIMEOUT",
    "ProxyConfig",
    "Upstream",
    "is_loopback",
]
