"""Headers of the broker->producer transaction check (CHECK_TRANSACTION_STATE, 39).

The header is the one the client serves (:mod:`remoting.header.client_extra`); this name stays
for the broker's transaction service.
"""

from __future__ import annotations

from remoting.header.client_extra import CheckTransactionStateRequestHeader

__all__ = ["CheckTransactionStateRequestHeader"]
