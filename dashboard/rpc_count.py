"""Counting the admin RPCs of one HTTP request (the X-RPC-Count header; bench_dashboard reads it)."""

from __future__ import annotations

import contextvars

from client.mq_client_api import MQClientAPI

__all__ = ["CountingClientAPI", "RPC_COUNTER"]

# A one-element list per HTTP request: tasks started by asyncio.gather copy the context and share the list.
RPC_COUNTER: contextvars.ContextVar[list[int] | None] = contextvars.ContextVar("rpc_counter", default=None)


class CountingClientAPI(MQClientAPI):
    async def invoke(self, addr, cmd, timeout=None):
        c = RPC_COUNTER.get()
        if c is not None:
            c[0] += 1
        return await super().invoke(addr, cmd, timeout)
