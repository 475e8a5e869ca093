"""A tiny TCP proxy on 127.0.0.1 that a test can shut, to make a service "go away" mid-run."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable


class TcpProxy:
    """Relays connections to host:port until `close()`, which also drops every open one.

    `close_after_reply_to`: bytes that, once seen from a client, make the proxy
    relay the server's next reply and then close (e.g. b"MGET").
    """

    def __init__(self, host: str, port: int, *, close_after_reply_to: bytes | None = None) -> None:
        self.target = (host, port)
        self.trigger = close_after_reply_to
        self.port = 0
        self.closed = asyncio.Event()
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._triggered = False
        self._tasks: set[asyncio.Task[None]] = set()

    async def start(self, port: int = 0) -> TcpProxy:
        """Listen on `port` (0: any free one); reusing a closed proxy's port "restarts" it."""
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", port)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def close(self) -> None:
        if self._server is None:
            return
        self._server.close()
        for writer in list(self._writers):
            writer.transport.abort()
        self._writers.clear()
        await self._server.wait_closed()
        self._server = None
        self.closed.set()

    async def _handle(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        try:
            server_r, server_w = await asyncio.open_connection(*self.target)
        except OSError:
            client_w.transport.abort()
            return
        self._writers |= {client_w, server_w}

        def saw_request(data: bytes) -> None:
            if self.trigger is not None and self.trigger in data.upper():
                self._triggered = True

        def after_reply(_data: bytes) -> None:
            if self._triggered and not self._tasks:
                self._tasks.add(asyncio.get_running_loop().create_task(self.close()))

        await asyncio.gather(self._pipe(client_r, server_w, saw_request),
                             self._pipe(server_r, client_w, after_reply))

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                    hook: Callable[[bytes], None]) -> None:
        with contextlib.suppress(OSError, asyncio.IncompleteReadError):
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
                hook(data)
        writer.transport.abort()
