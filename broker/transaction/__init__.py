"""Transactional messages: half/op queues, END_TRANSACTION and the periodic check-back (spec §10)."""
