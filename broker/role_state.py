"""RoleState: the live role of one broker (master or slave, its broker id, the DLedger role and term).

The configs keep what start-up made of the config file; what the broker is *now* lives here.
A DLedger role change (or an operator's switch) changes it through
:meth:`RoleState.become_master` / :meth:`RoleState.become_slave`, and everything that acts by role
(the store refusing puts on a slave, the admin processors refusing changes, the send and pull
paths, the metrics' role label, the NameServer registration's broker id, getBrokerConfig) reads
it here, per request, so a change takes effect at once. One object per broker, created by the
controller and passed in to whoever needs it: never a copy, never a rewrite of the configs.
"""

from __future__ import annotations

from store.config import BrokerRole, MessageStoreConfig

__all__ = ["RoleState", "MASTER_ID", "DLEDGER_UNKNOWN_ID"]

#: RocketMQ's MixAll.MASTER_ID.
MASTER_ID = 0
#: A DLedger broker's id before its first role change: neither master nor slave yet.
DLEDGER_UNKNOWN_ID = -1


class RoleState:
    """Master/slave, broker id, DLedger role and term of a running broker (see the module doc).

    ``is_slave`` is a plain attribute kept in step with ``broker_role``: the hot paths read it
    per request.
    """

    __slots__ = ("broker_role", "broker_id", "is_slave", "dledger_role", "term")

    def __init__(self, broker_role: BrokerRole = BrokerRole.ASYNC_MASTER, broker_id: int = MASTER_ID) -> None:
        self.broker_role = broker_role
        self.broker_id = broker_id
        self.is_slave = broker_role is BrokerRole.SLAVE
        #: the DLedger member's role name (LEADER/FOLLOWER/CANDIDATE) and term; "" and -1 outside DLedger mode
        self.dledger_role = ""
        self.term = -1

    @classmethod
    def from_configs(cls, broker_id: int, store_config: MessageStoreConfig) -> RoleState:
        """The role a broker starts in: a master is brokerId 0; a DLedger broker is neither until its
        first role change (brokerId -1); a slave keeps its configured id."""
        role = store_config.brokerRole
        if store_config.enableDLegerCommitLog:
            return cls(role, DLEDGER_UNKNOWN_ID)
        if role is not BrokerRole.SLAVE:
            return cls(role, MASTER_ID)
        return cls(role, broker_id)

    @property
    def is_master(self) -> bool:
        return not self.is_slave

    def become_master(self) -> None:
        """Master with brokerId 0; a former slave becomes SYNC_MASTER (DLedger leaders confirm every
        write before answering)."""
        if self.broker_role is BrokerRole.SLAVE:
            self.broker_role = BrokerRole.SYNC_MASTER
        self.broker_id = MASTER_ID
        self.is_slave = False

    def become_slave(self, broker_id: int) -> None:
        """Slave with ``broker_id`` (> 0; ValueError otherwise)."""
        if broker_id <= 0:
            raise ValueError("a slave needs a brokerId > 0")
        self.broker_role = BrokerRole.SLAVE
        self.broker_id = broker_id
        self.is_slave = True

    def set_dledger(self, role: str, term: int) -> None:
        """What the DLedger member reported last (diagnostics, metrics)."""
        self.dledger_role = role
        self.term = term

    def __repr__(self) -> str:
        extra = f", dledger={self.dledger_role} term={self.term}" if self.dledger_role else ""
        return f"RoleState({self.broker_role.name}, brokerId={self.broker_id}{extra})"
