"""Fair turns between connections, a bounded backlog per connection, and fast failure.

A connection normally serves every request of a read at once (see remoting.connection). A read
can carry thousands of pipelined requests, and the event loop reads a busy socket many times per
iteration, so a flooding peer could hold the loop for seconds while a well-behaved peer's single
request waits. When a read yields more than ``turn_budget`` requests, the rest go to that
connection's backlog, and the backlogs are served in round-robin turns of at most ``turn_budget``
requests per connection, one turn per loop iteration: the loop polls sockets between turns, so
other peers are read and served in between. A backlog of ``max_backlog`` requests pauses reading
from that connection (TCP pushes back on the peer; memory stays bounded) until it is down to a
quarter.

The time a request spends in a backlog, from its read until its turn, is this server's honest
"time waited in the queue". Before a backlogged request runs, ``fast_fail(request, waited_ms,
backlog)`` may answer it instead (RocketMQ's BrokerFastFailure: SYSTEM_BUSY once it waited too
long); such answers are cheap, so a turn sheds up to ``4 * turn_budget`` of them besides its
budget. Responses (to requests this endpoint sent) are never shed. A round of turns yields to
the loop after ``slice_seconds``, so a peer's single request waits at most about one slice plus
one read per busy connection.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING

from remoting.codes import RPC_ONEWAY, RPC_TYPE_RESPONSE
from remoting.command import RemotingCommand

if TYPE_CHECKING:
    from remoting.connection import Connection

__all__ = ["FairDispatcher", "FastFail"]

log = logging.getLogger("remoting")

#: ``fast_fail(request, waited_ms, backlog_size)``: a response to answer instead, or None to serve it.
FastFail = Callable[[RemotingCommand, float, int], RemotingCommand | None]


class Backlog:
    """One connection's requests not served yet: chunks of ``[read time, commands, next index]``."""

    __slots__ = ("chunks", "size", "held")

    def __init__(self) -> None:
        self.chunks: deque[list] = deque()
        self.size = 0
        self.held = False  # reading paused because the backlog is full


class FairDispatcher:
    """Round-robin turns over the connections of one endpoint that have a backlog."""

    def __init__(self, turn_budget: int = 16, max_backlog: int = 256, fast_fail: FastFail | None = None, *,
                 gate: Callable[[], bool] | None = None, slice_seconds: float = 0.005):
        if turn_budget < 1 or max_backlog < turn_budget:
            raise ValueError("turn_budget must be >= 1 and max_backlog >= turn_budget")
        self.turn_budget = turn_budget
        self.max_backlog = max_backlog
        self.fast_fail = fast_fail
        #: a round of turns yields to the loop after this long (the rest go on at the next iteration)
        self.slice_seconds = slice_seconds
        #: False while the server is saturated (e.g. too many puts wait for the disk): backlogs then
        #: wait (their expired requests are still answered by fast_fail), re-checked every ms or two
        self.gate = gate
        self._ready: deque[Connection] = deque()
        self._scheduled = False
        #: requests answered by fast_fail, and the largest backlog seen (for runtime info)
        self.shed = 0
        self.backlog_peak = 0

    @property
    def queued(self) -> int:
        """Requests waiting in every backlog now."""
        return sum(c._backlog.size for c in self._ready if c._backlog is not None)

    def head_wait_ms(self, now: float) -> float:
        """How long the oldest backlogged request has waited."""
        oldest = min((c._backlog.chunks[0][0] for c in self._ready if c._backlog and c._backlog.chunks), default=now)
        return (now - oldest) * 1000.0

    def admit(self, conn: Connection, cmds: list[RemotingCommand], read_at: float) -> None:
        """Take a read's commands for ``conn``: serve the first turn now unless the connection
        already waits for its turn (requests keep their order), backlog the rest."""
        bl = conn._backlog
        if bl is None:
            if self.gate is None or self.gate():
                first, cmds = cmds[:self.turn_budget], cmds[self.turn_budget:]
                conn._handle(first)
                if not cmds or conn.closed:
                    return
            bl = conn._backlog = Backlog()
            self._ready.append(conn)
            self._schedule()
        bl.chunks.append([read_at, cmds, 0])
        bl.size += len(cmds)
        if bl.size > self.backlog_peak:
            self.backlog_peak = bl.size
        if bl.size >= self.max_backlog and not bl.held:
            bl.held = True
            conn._transport.pause_reading()

    def _schedule(self, delay: float = 0.0) -> None:
        if not self._scheduled:
            self._scheduled = True
            loop = asyncio.get_running_loop()
            if delay:
                loop.call_later(delay, self._turn)
            else:
                loop.call_soon(self._turn)

    def _turn(self) -> None:
        self._scheduled = False
        loop_time = asyncio.get_running_loop().time
        now = loop_time()
        stop_at = now + self.slice_seconds
        gate = self.gate
        served = False
        for _ in range(len(self._ready)):
            if loop_time() >= stop_at:
                break  # let the loop poll sockets: the next connections go first next time
            conn = self._ready.popleft()
            bl = conn._backlog
            if conn.closed or bl is None:
                conn._backlog = None
                continue
            try:
                budget = self.turn_budget if gate is None or gate() else 0
                served = served or budget > 0
                conn._handle(self._take(conn, bl, now, budget))
            except Exception:  # a policy bug must not strand this connection's backlog unanswered
                log.exception("fair dispatch: turn of %s failed; closing it", conn.remote_addr)
                conn._backlog = None
                conn.close()
                continue
            if bl.size and not conn.closed:
                self._ready.append(conn)
            else:
                conn._backlog = None
            if bl.held and bl.size <= self.max_backlog // 4 and not conn.closed:
                bl.held = False
                conn._resume_reading()
        if self._ready:
            self._schedule(0.0 if served else 0.002)

    def _take(self, conn: Connection, bl: Backlog, now: float, budget: int) -> list[RemotingCommand]:
        """Up to ``budget`` commands to serve; expired ones before them are answered by fast_fail
        (with ``budget`` 0, only the expired ones at the head are)."""
        batch: list[RemotingCommand] = []
        shed_left = 4 * self.turn_budget
        ff = self.fast_fail
        chunks = bl.chunks
        while chunks and (len(batch) < budget or budget == 0):
            chunk = chunks[0]
            read_at, cmds, pos = chunk
            waited_ms = (now - read_at) * 1000.0
            end = len(cmds)
            while pos < end:
                cmd = cmds[pos]
                if ff is not None and shed_left and not cmd.flag & RPC_TYPE_RESPONSE:
                    resp = ff(cmd, waited_ms, bl.size)
                    if resp is not None:
                        pos += 1
                        shed_left -= 1
                        self.shed += 1
                        bl.size -= 1
                        if not cmd.flag & RPC_ONEWAY:
                            conn._wbuf.extend(conn._encode_response(cmd, resp))
                        continue
                if len(batch) >= budget:
                    break
                pos += 1
                batch.append(cmd)
                bl.size -= 1
            if pos >= end:
                chunks.popleft()
            else:
                chunk[2] = pos
                break
        return batch
