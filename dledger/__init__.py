"""rocketmq-py: dledger package - DLedger (Raft) for the DLedger commit log.

Layers (this package imports only ``common`` and ``remoting``):

* :mod:`dledger.core` - :class:`~dledger.core.DLedgerCore`, a deterministic state
  machine: ``tick()``, ``step(msg)``, ``propose(body, hook=None)``,
  ``transfer_leadership(peer)``, ``has_ready()``/``ready()``/``advance(ready)``.
  Built from :mod:`member_state`, :mod:`leader_elector` (election, heartbeats,
  transfer, preferred leader) and :mod:`entry_pusher` (dispatchers, quorum ack
  checker, follower handler). No clock, sockets, threads or files.
* :mod:`dledger.storage` - the narrow ``Storage`` protocol and ``MemoryStorage``;
  :mod:`dledger.mmap_file_store` - ``DLedgerMmapFileStore`` (DLedger's data/index
  files, checkpoint, recovery, truncation).
* :mod:`dledger.entry` - ``DLedgerEntry`` and the byte layouts;
  :mod:`dledger.protocol` - codes, results and RPC messages (fastjson bodies).
* :mod:`dledger.server` - ``DLedgerServer``, the asyncio driver over remoting:
  ``await start()``, ``await append(body, hook=None) -> (index, pos)``,
  ``await transfer_leadership(peer)``, ``on_role_change``/``on_committed`` hooks,
  ``committed_index``/``committed_pos``, ``leader_lost(term)`` (a follower that
  knows its leader died stands for election at once), ``await stop()`` (closes
  only a storage it created). ``async_flush=True`` is DLedger's flush behaviour:
  acknowledge once written, flush every ``flushFileInterval`` ms in the background.
  ``python -m dledger -c file.properties`` runs one standalone member.
"""
