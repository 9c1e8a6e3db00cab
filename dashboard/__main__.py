"""bin/mqdashboard -n NAMESRV [--host 127.0.0.1] [--port 8082] [--admin-token T]."""

from __future__ import annotations

import argparse
import logging
import os
import sys

from common.process import stop_on_signals
from dashboard.config import DashboardConfig
from dashboard.runner import start_dashboard


def parse_args(argv: list[str] | None) -> DashboardConfig:
    ap = argparse.ArgumentParser(prog="mqdashboard", description="RocketMQ web dashboard")
    ap.add_argument("-n", dest="namesrv", default=os.environ.get("NAMESRV_ADDR"),
                    help="NameServer address list, eg: '127.0.0.1:9876' (or NAMESRV_ADDR)")
    ap.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    ap.add_argument("--port", type=int, default=8082)
    ap.add_argument("--admin-token", default=os.environ.get("MQDASHBOARD_ADMIN_TOKEN"),
                    help="token that write operations must carry (X-Admin-Token); required off loopback")
    ap.add_argument("--sample-interval", type=float, default=5.0, help="seconds between sparkline samples")
    a = ap.parse_args(argv)
    return DashboardConfig(namesrv_addr=a.namesrv or "", host=a.host, port=a.port, admin_token=a.admin_token or None,
                           sample_interval=max(0.2, a.sample_interval))


async def serve(cfg: DashboardConfig) -> None:
    runner = await start_dashboard(cfg)
    host = f"[{cfg.host}]" if ":" in cfg.host else cfg.host
    print(f"mqdashboard: http://{host}:{cfg.port}/ (NameServer {cfg.namesrv_addr})", flush=True)
    await stop_on_signals().wait()
    await runner.cleanup()


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("client").setLevel(logging.ERROR)
    cfg = parse_args(argv)
    try:
        cfg.check()
    except ValueError as e:
        sys.stderr.write(f"mqdashboard: {e}\n")
        return 2
    from remoting import new_event_loop

    loop = new_event_loop()
    try:
        loop.run_until_complete(serve(cfg))
    except OSError as e:
        sys.stderr.write(f"mqdashboard: cannot listen on {cfg.host}:{cfg.port}: {e}\n")
        return 1
    finally:
        loop.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
