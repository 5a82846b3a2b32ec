"""What happens after a response, off the request's path: the record, the log lines, the cache
analysis and the handoff's saving, on one thread, in completion order.

Each finished exchange is handed over whole (`Bookkeeping.finished`); a handoff's saving is
measured at the handoff only (the conversation store says which request that is:
`ipse.proxy._store`), not at the later requests that carry the same cut. The log line of a stream's
start or of a request the proxy answered itself goes through the same thread (`Bookkeeping.say`),
so lines come out in the order things happened. The cache analysis is the costly part (megabyte
bodies are hashed block by block): when exchanges come faster than it keeps up, it is skipped so
the queue, and the memory it holds, stays bounded; the record and the log line never are.
Closing drains the thread, so no record is lost.
"""

from __future__ import annotations

import contextlib
import sys
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import TYPE_CHECKING, Any, TextIO

from ipse import _notes
from ipse.proxy._config import ProxyConfig
from ipse.proxy._exchange import Exchange, identify_conversation
from ipse.proxy._record import Recorder, exchange_secrets, log_line, record_entry

if TYPE_CHECKING:
    from ipse.prefix._shared import LiveAnalysis

_log = _notes.logger("ipse.proxy")
ANALYSIS_BACKLOG = 32  # tasks waiting beyond which the cache analysis is skipped


class Bookkeeping:
    """The bookkeeping thread of one proxy process (see the module docstring); ``pending`` is
    the number of tasks submitted and not yet done."""

    def __init__(self, config: ProxyConfig, log_stream: TextIO | None = None) -> None:
        self.config = config
        self.pending = 0
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ipse-proxy-books")
        self._recorder = Recorder(config.record) if config.record is not None else None
        self._live: LiveAnalysis | None = None  # each conversation's previous request
        self._log_stream = log_stream
        self._lock = threading.Lock()

    def submit(self, task: Callable[[], None]) -> None:
        """Run ``task`` on the thread, after every task submitted before it."""
        with self._lock:
            self.pending += 1

        def run() -> None:
            try:
                task()
            except Exception:  # bookkeeping never takes the proxy down
                _log.exception("ipse proxy: bookkeeping failed")
            finally:
                with self._lock:
                    self.pending -= 1

        self._thread.submit(run)

    def say(self, line: Callable[[], str]) -> None:
        """Write a log line, in order with the other tasks (``line`` is built on the thread)."""
        if self.config.log:
            self.submit(lambda: self.write_line(line()))

    def write_line(self, line: str) -> None:
        stream = self._log_stream or sys.stderr
        with contextlib.suppress(Exception):
            stream.write(line + "\n")
            stream.flush()

    def finished(self, ex: Exchange) -> None:
        """Hand over an exchange that ended, however it ended: `record_exchange` on the thread."""
        self.submit(partial(self.record_exchange, ex))

    def record_exchange(self, ex: Exchange) -> None:
        """Everything after a response: the record and the log line (the conversation store
        was written while the request went upstream, `ProxyStore.start_count`)."""
        requests = ex.counted.result() if ex.counted is not None else None
        identify_conversation(ex)
        if ex.handed_off and ex.handoff_event:
            with contextlib.suppress(Exception):  # a count must not stop the record or the log
                ex.saved_tokens = _saved_tokens(ex)
        body = b"".join(ex.chunks)
        usage = _usage(body)
        behind = self.pending > ANALYSIS_BACKLOG
        analysis = {"skipped": "the proxy is busy"} if behind else self._analyze(ex, usage)
        secrets = exchange_secrets(ex)
        if self._recorder is not None:
            self._recorder.write(record_entry(ex, body, analysis), secrets=secrets)
        if self.config.log:
            line = log_line(ex, usage, analysis, requests, json_log=self.config.json_log)
            self.write_line(secrets.text(line))

    def _analyze(self, ex: Exchange, usage: Mapping[str, Any] | None) -> dict[str, Any] | None:
        """This request's cache use as the provider's cache model predicts it, given the
        conversation's previous request; the cause when reuse was lost."""
        if (
            not self.config.analyze
            or ex.key is None
            or not isinstance(ex.parsed, Mapping)
            or ex.dialect is None
            or ex.path.endswith("/count_tokens")
            or ex.status != 200
        ):
            return None
        if self._live is None:  # (the cache model's modules on the first request it analyses)
            from ipse.prefix._shared import LiveAnalysis

            self._live = LiveAnalysis()
        body = ex.rewrite.body if ex.rewrite is not None and ex.rewrite.body else ex.parsed
        return self._live.analyze(
            ex.key,
            body,
            "anthropic" if ex.provider == "anthropic" else "openai",
            size=len(ex.sent_body),
            started=ex.started,
            first_byte=ex.first_byte or ex.finished,
            usage=usage,
        )

    def close(self) -> None:
        """Wait for every pending task, then close the record."""
        self._thread.shutdown(wait=True)
        if self._recorder is not None:
            self._recorder.close()


def _saved_tokens(ex: Exchange) -> int | None:
    """The tokens the handoff took out of its request (`ipse.handoff.tokens_saved`, on the
    client's and the rewritten body): measured at the handoff, once per cut."""
    rewrite = ex.rewrite
    if rewrite is None or rewrite.body is None or not isinstance(ex.parsed, Mapping):
        return None
    if ex.dialect is None:
        return None
    from ipse.handoff import tokens_saved
    from ipse.transcript._shared import codec

    read = codec(ex.dialect).read_body
    return int(tokens_saved(read(ex.parsed), read(rewrite.body)))


def _usage(body: bytes) -> Mapping[str, Any] | None:
    from ipse.transcript._shared import usage_of

    try:
        return usage_of({"body": body.decode("utf-8", errors="replace")}, "response")
    except Exception:
        return None


__all__ = ["ANALYSIS_BACKLOG", "Bookkeeping"]
