"""A follower notices at once when its DLedger leader's process is gone.

DLedger's follower waits ``maxHeartBeatLeak`` heartbeats (6 s by default) before it
stands for election. A follower here also holds an idle TCP connection to the
leader's DLedger port: when it closes and a new connection is refused, the leader's
process has died (a paused or partitioned leader keeps the connection and is left to
the heartbeat rule), so the member turns candidate now. Raft's safety never depends
on when a member turns candidate; only the failover time does.
"""

from __future__ import annotations

import asyncio
import logging

from dledger.protocol import Role
from dledger.server import DLedgerServer

__all__ = ["watch_leader"]

log = logging.getLogger(__name__)


def _following(server: DLedgerServer) -> tuple[int, str] | None:
    core = server.core
    if core is None or core.role is not Role.FOLLOWER or not core.leader_id or core.leader_id == core.self_id:
        return None
    return core.term, core.leader_id


async def watch_leader(server: DLedgerServer, peers: dict[str, str], self_id: str) -> None:
    """Task body (until cancelled): ``peers`` maps member ids to ``host:port``."""
    while True:
        following = _following(server)
        if following is None:
            await asyncio.sleep(0.05)
            continue
        host, _, port = peers[following[1]].rpartition(":")
        writer = None
        try:
            reader, writer = await asyncio.wait_for(asyncio.open_connection(host, int(port)), 1.0)
            while _following(server) == following:
                try:
                    if await asyncio.wait_for(reader.read(1024), 0.1) == b"":
                        break  # closed by the leader's side
                except TimeoutError:
                    continue
        except (OSError, TimeoutError):
            pass
        finally:
            if writer is not None:
                writer.close()
        if _following(server) != following:
            continue
        try:
            _r, probe = await asyncio.wait_for(asyncio.open_connection(host, int(port)), 1.0)
            probe.close()
            await asyncio.sleep(0.05)  # the leader answers connections: keep following it
            continue
        except ConnectionRefusedError:
            pass
        except (OSError, TimeoutError):
            await asyncio.sleep(0.05)
            continue
        if _following(server) == following:
            log.info("DLedger %s: leader %s is gone (port closed): standing for election", self_id, following[1])
            server.leader_lost(following[0])
