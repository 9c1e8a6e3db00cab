"""PullStatus: the outcome of one pull as a consumer sees it (RocketMQ's client PullStatus), shared by
the client's pull API and the broker's own pulls of half messages (transaction checks)."""

from __future__ import annotations

from enum import Enum

__all__ = ["PullStatus"]


class PullStatus(Enum):
    FOUND = "FOUND"
    NO_NEW_MSG = "NO_NEW_MSG"
    NO_MATCHED_MSG = "NO_MATCHED_MSG"
    OFFSET_ILLEGAL = "OFFSET_ILLEGAL"
