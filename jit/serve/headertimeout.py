"""A bound on reading a request's headers, for ``jit serve --http`` (uvicorn's h11 protocol).

uvicorn closes a kept-alive connection that stays quiet between requests
(``timeout_keep_alive``, armed when a response is done) and has nothing else: a connection
that sends nothing, or part of a request line or of its headers and then nothing, stays open
for as long as its client likes, each holding a socket, a file descriptor and a protocol
object. A client opening such connections in a loop reaches the process's file descriptor
limit, and then nobody is served.

:class:`HeaderTimeoutProtocol` closes a connection whose request headers are not complete
``header_timeout`` seconds after the connection opened, or after the first bytes of a request
that follows another on a kept-alive connection. Once the headers are in, reading the body and
answering are the application's (its body is bounded in size by
:data:`~jit.serve.httpguard.MAX_BODY_BYTES`).
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Callable
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

__all__ = ["HeaderTimeoutProtocol", "header_timeout_protocol"]

log = logging.getLogger("jit.serve.httpguard")


class HeaderTimeoutProtocol(H11Protocol):
    """uvicorn's h11 protocol, closing a connection whose request headers take longer than
    ``header_timeout`` seconds to arrive (see the module's docstring)."""

    def __init__(self, *args: Any, header_timeout: float, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.header_timeout = header_timeout
        self._header_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def data_received(self, data: bytes) -> None:
        if self.conn.their_state is h11.IDLE:
            self._arm()  # the start of a request (or more of its headers): the clock runs from its first bytes
        super().data_received(data)
        if self.conn.their_state is not h11.IDLE:
            self._disarm()  # the headers are in (or the request was refused as malformed)

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _arm(self) -> None:
        if self._header_timer is None:
            self._header_timer = self.loop.call_later(self.header_timeout, self._headers_late)

    def _disarm(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _headers_late(self) -> None:
        self._header_timer = None
        if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
            log.debug("closed a connection whose request headers did not arrive within %g s", self.header_timeout)
            self.transport.close()


def header_timeout_protocol(seconds: float) -> Callable[..., HeaderTimeoutProtocol]:
    """What ``uvicorn.Config(http=...)`` takes to serve with a ``seconds`` header timeout."""
    return functools.partial(HeaderTimeoutProtocol, header_timeout=seconds)
