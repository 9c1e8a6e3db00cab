"""`make run`: a NameServer and a Broker in one process (an EmbeddedCluster), in the foreground.

The broker takes its settings from ``conf/broker.conf`` (or ``--broker-conf``): its listenPort,
storePathRootDir (the broker's store is ``<storePathRootDir>/<brokerName>-0``), cluster name and
every other key; the keys the cluster sets itself (brokerName, brokerId, namesrvAddr, store
paths below the root) are taken from the cluster. Ctrl-C (SIGINT) or SIGTERM stops it cleanly:
the broker flushes, writes its checkpoint and unregisters, then the NameServer stops.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from common.config import ConfigError, load_properties_file
from common.process import configure_server_logging, stop_on_signals
from dashboard.config import DashboardConfig
from dashboard.runner import start_dashboard
from embedded.cluster import EmbeddedCluster

ROOT = Path(__file__).resolve().parent.parent

#: Keys of a broker config file the embedded cluster decides itself (ignored here, said so).
_IGNORED = ("brokerName", "brokerId", "namesrvAddr", "storePathCommitLog")


def cluster_from_file(conf: str, namesrv_port: int, brokers: int = 1) -> EmbeddedCluster:
    props = load_properties_file(conf)
    ignored = [k for k in _IGNORED if k in props]
    for k in ignored:
        del props[k]
    if ignored:
        print(f"run: {', '.join(ignored)} in {conf} set by the local cluster instead", flush=True)
    try:
        listen_port = int(props.pop("listenPort", "10911"))
    except ValueError as e:
        raise ConfigError(f"bad value for config key listenPort: {e}") from None
    root = os.path.abspath(os.path.expanduser(props.pop("storePathRootDir", "./run/store")))
    return EmbeddedCluster(
        brokers,
        cluster_name=props.pop("brokerClusterName", "DefaultCluster"),
        store_root=root,
        namesrv_port=namesrv_port,
        listen_port=listen_port,
        **props,
    )


async def serve(cluster: EmbeddedCluster, dashboard_port: int = 8082) -> int:
    stop = stop_on_signals()
    await cluster.start()
    dashboard = None
    try:
        print(f"run: NameServer listening on {cluster.namesrv_addr}", flush=True)
        for b in cluster.brokers:
            print(f"run: Broker {b.name} listening on {b.addr}, store {b.config_file.parent / b.node}", flush=True)
        if dashboard_port:
            try:  # optional: the cluster runs on without it
                dashboard = await start_dashboard(DashboardConfig(cluster.namesrv_addr, port=dashboard_port))
                print(f"run: dashboard on http://127.0.0.1:{dashboard_port}/", flush=True)
            except OSError as e:
                print(f"run: the dashboard did not start ({e}); running without it", file=sys.stderr, flush=True)
        print("run: press Ctrl-C to stop", flush=True)
        await stop.wait()
    finally:
        if dashboard is not None:
            await dashboard.cleanup()
        await cluster.stop()
        print("run: stopped", flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Run a NameServer and a Broker in the foreground (one process).")
    ap.add_argument("--namesrv-port", type=int, default=9876)
    ap.add_argument("--broker-conf", default=str(ROOT / "conf" / "broker.conf"))
    ap.add_argument("--namesrv-only", action="store_true", help="start the NameServer alone")
    ap.add_argument("--dashboard-port", type=int, default=8082, help="web dashboard on 127.0.0.1 (0: none)")
    args = ap.parse_args(argv)
    configure_server_logging()
    try:
        cluster = cluster_from_file(args.broker_conf, args.namesrv_port, 0 if args.namesrv_only else 1)
        import uvloop

        return uvloop.run(serve(cluster, args.dashboard_port))
    except (ConfigError, OSError) as e:
        print(f"run: error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
