"""Starting the dashboard inside a running event loop (bin/mqdashboard, or `make run`'s process)."""

from __future__ import annotations

from aiohttp import web

from dashboard.app import build_app
from dashboard.config import DashboardConfig

__all__ = ["start_dashboard"]


async def start_dashboard(cfg: DashboardConfig) -> web.AppRunner:
    """Check ``cfg`` (ValueError), bind (OSError) and serve; ``await runner.cleanup()`` stops it."""
    cfg.check()
    runner = web.AppRunner(build_app(cfg), access_log=None)
    await runner.setup()
    try:
        await web.TCPSite(runner, cfg.host, cfg.port).start()
    except OSError:
        await runner.cleanup()
        raise
    return runner
