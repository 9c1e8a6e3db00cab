"""ConnectorError: bad options or a failed read/write, naming the option or queue concerned."""

from __future__ import annotations

__all__ = ["ConnectorError"]


class ConnectorError(ValueError):
    """Raised on the driver for bad options (the message names the option) and by tasks for failed I/O.

    ``code`` carries the broker's response code when the broker refused something, else -1.
    """

    def __init__(self, message: str, code: int = -1):
        super().__init__(message)
        self.code = code
