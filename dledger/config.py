"""DLedgerConfig: one typed dataclass with DLedger's keys and defaults (spec dledger.md §1).

Durations are in milliseconds as in DLedger; the core counts time in ticks of
``tickIntervalMs`` and converts with :meth:`DLedgerConfig.ticks`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from common.config import ConfigError, cfg

__all__ = ["DLedgerConfig", "parse_peers"]


def parse_peers(peers: str) -> dict[str, str]:
    """``n0-host:port;n1-host:port`` -> {"n0": "host:port", ...} (id = text before the first ``-``)."""
    out: dict[str, str] = {}
    for part in peers.split(";"):
        part = part.strip()
        if not part:
            continue
        pid, sep, addr = part.partition("-")
        if not sep or not pid or not addr:
            raise ConfigError(f"bad value for config key peers: {part!r} is not id-host:port")
        out[pid] = addr
    if not out:
        raise ConfigError("bad value for config key peers: no peer")
    return out


@dataclass
class DLedgerConfig:
    """DLedger's settings; field names are DLedger's (RocketMQ fills them from dLeger* keys)."""

    group: str = cfg("default", wire=False)
    selfId: str = cfg("n0", wire=False)
    peers: str = cfg("n0-localhost:20911", wire=False)
    storeBaseDir: str = cfg(os.path.join(os.sep, "tmp", "dledgerstore"), wire=False)
    dataStorePath: str = cfg("", wire=False)  # empty = <storeBaseDir>/dledger-<selfId>/data
    storeType: str = cfg("FILE", wire=False)
    mappedFileSizeForEntryData: int = cfg(1024 * 1024 * 1024, wire=False)
    mappedFileSizeForEntryIndex: int = cfg(32 * 5 * 1024 * 1024, wire=False)
    heartBeatTimeIntervalMs: int = cfg(2000)
    maxHeartBeatLeak: int = cfg(3)
    minVoteIntervalMs: int = cfg(300)
    maxVoteIntervalMs: int = cfg(1000)
    maxPendingRequestsNum: int = cfg(10000)
    maxWaitAckTimeMs: int = cfg(2500)
    maxPushTimeOutMs: int = cfg(1000)
    enableBatchPush: bool = cfg(False)
    maxBatchPushSize: int = cfg(4096)
    preferredLeaderIds: str = cfg("")
    maxLeadershipTransferWaitIndex: int = cfg(1000)
    minTakeLeadershipVoteIntervalMs: int = cfg(30)
    maxTakeLeadershipVoteIntervalMs: int = cfg(100)
    leadershipTransferWaitTimeout: int = cfg(1000)
    fileReservedHours: int = cfg(72)
    deleteWhen: str = cfg("04")
    diskSpaceRatioToCheckExpired: float = cfg(0.70)
    diskSpaceRatioToForceClean: float = cfg(0.85)
    enableDiskForceClean: bool = cfg(True)
    flushFileInterval: int = cfg(10)
    checkPointInterval: int = cfg(3000)
    # Not DLedger keys: a candidate first asks for votes without changing any term (pre-vote, Raft
    # thesis 9.6), so a member that cannot win (cut off, stale log) never bumps the group's term;
    # and a leader that has not heard a quorum for maxHeartBeatLeak heartbeats steps down
    # (check-quorum), so a cut-off leader stops taking writes.
    enablePreVote: bool = cfg(True, wire=False)
    enableCheckQuorum: bool = cfg(True, wire=False)
    # Not a DLedger key: PUSH bodies between two members of this implementation in a binary form
    # (dledger/push_codec.py, negotiated per peer; Java DLedger members always get JSON). Off: JSON only.
    enableBinaryPush: bool = cfg(True, wire=False)
    # Not a DLedger key: the length of one core tick (DLedger's state maintainer loops every 10 ms).
    tickIntervalMs: int = cfg(10, wire=False)

    def check_timing(self) -> None:
        """ConfigError unless the election timing makes sense (a heartbeat at least one tick,
        at least one heartbeat of leak, minVoteIntervalMs <= maxVoteIntervalMs)."""
        if self.tickIntervalMs < 1:
            raise ConfigError(f"bad value for config key tickIntervalMs: {self.tickIntervalMs} < 1")
        if self.heartBeatTimeIntervalMs < self.tickIntervalMs:
            raise ConfigError(f"bad value for config key heartBeatTimeIntervalMs: {self.heartBeatTimeIntervalMs} "
                              f"< {self.tickIntervalMs} ms")
        if self.maxHeartBeatLeak < 1:
            raise ConfigError(f"bad value for config key maxHeartBeatLeak: {self.maxHeartBeatLeak} < 1")
        if not 0 <= self.minVoteIntervalMs <= self.maxVoteIntervalMs:
            raise ConfigError(f"bad value for config keys minVoteIntervalMs/maxVoteIntervalMs: "
                              f"{self.minVoteIntervalMs} / {self.maxVoteIntervalMs}")

    def peer_map(self) -> dict[str, str]:
        """Peer id -> "host:port"."""
        return parse_peers(self.peers)

    def preferred_leaders(self) -> list[str]:
        return [p for p in (self.preferredLeaderIds or "").split(";") if p]

    def ticks(self, ms: int) -> int:
        """Milliseconds as a whole number of ticks (at least one)."""
        return max(1, -(-ms // self.tickIntervalMs))

    def default_path(self) -> str:
        return os.path.join(self.storeBaseDir, f"dledger-{self.selfId}")

    def data_path(self) -> str:
        return self.dataStorePath or os.path.join(self.default_path(), "data")

    def index_path(self) -> str:
        return os.path.join(self.default_path(), "index")
