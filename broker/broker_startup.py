"""BrokerStartup: the ``mqbroker`` command line: load the config, print it (-p/-m), or run the broker
until SIGTERM/SIGINT (RocketMQ's BrokerStartup; the broker itself is broker.broker_controller)."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys

from broker.broker_controller import create_broker
from broker.config import BrokerConfigs
from broker.errors import BrokerStartError
from common.config import ConfigError, apply_all, format_properties, load_properties_file, to_properties
from common.metrics_exporter import validate_metrics_keys
from common.process import configure_server_logging, stop_on_signals
from remoting.tls import TlsSystemConfig
from store.config import BrokerRole

__all__ = ["main", "load_configs", "IMPORTANT_KEYS"]

log = logging.getLogger("broker")

#: What ``-m`` prints (RocketMQ's "important" config fields).
IMPORTANT_KEYS = (
    "brokerClusterName",
    "brokerName",
    "brokerId",
    "brokerIP1",
    "namesrvAddr",
    "listenPort",
    "brokerRole",
    "flushDiskType",
    "storePathRootDir",
    "storePathCommitLog",
    "autoCreateTopicEnable",
    "autoCreateSubscriptionGroup",
    "deleteWhen",
    "fileReservedTime",
)


def _validate_namesrv_addr(addr: str) -> None:
    for part in addr.split(";"):
        part = part.strip()
        if not part:
            continue
        host, sep, port = part.rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise ConfigError(f"bad value for config key namesrvAddr: {part!r} is not host:port")


def load_configs(config_file: str | None, namesrv_addr: str | None = None) -> tuple[BrokerConfigs, list[str]]:
    """Build every component config from the file (and ``-n``); returns (configs, unknown keys)."""
    configs = BrokerConfigs(config_file=os.path.abspath(config_file) if config_file else None)
    props: dict[str, str] = load_properties_file(config_file) if config_file else {}
    unknown = apply_all(props, *configs.all(), also_known=TlsSystemConfig.KEYS)
    configs.tls = TlsSystemConfig.from_properties(
        props, os.path.dirname(os.path.abspath(config_file)) if config_file else None
    )
    if namesrv_addr is not None:
        configs.broker.namesrvAddr = namesrv_addr
    _validate_namesrv_addr(configs.broker.namesrvAddr)
    validate_metrics_keys(configs.broker)
    sc = configs.store
    # Relative store paths are resolved against the current directory once, here.
    sc.storePathRootDir = os.path.abspath(os.path.expanduser(sc.storePathRootDir))
    if sc.storePathCommitLog:
        sc.storePathCommitLog = ",".join(os.path.abspath(os.path.expanduser(p)) for p in sc.storePathCommitLog.split(","))
    if not 0 < configs.netty_server.listenPort < 65536:
        raise ConfigError(f"bad value for config key listenPort: {configs.netty_server.listenPort}")
    if sc.brokerRole is BrokerRole.SLAVE and configs.broker.brokerId <= 0 and not sc.enableDLegerCommitLog:
        raise ConfigError("bad value for config key brokerId: a SLAVE must have brokerId > 0")
    if sc.enableDLegerCommitLog:
        configs.broker.brokerId = -1  # unknown until DLedger elects a leader (the controller's RoleState follows the role changes)
    elif sc.brokerRole is not BrokerRole.SLAVE:
        configs.broker.brokerId = 0
    sc.haListenPort = configs.netty_server.listenPort + 1
    return configs, unknown


async def _serve(configs: BrokerConfigs) -> int:
    stop = stop_on_signals()
    try:
        broker = create_broker(configs)
        await broker.start()
    except BrokerStartError as e:
        print(f"mqbroker: error: {e}", file=sys.stderr, flush=True)
        return 1
    print(
        f"The broker[{configs.broker.brokerName}, {broker.identity.broker_addr}] boot success. "
        f"serializeType=JSON and name server is {configs.broker.namesrvAddr or '(none)'}",
        flush=True,
    )
    await stop.wait()
    log.info("shutdown requested")
    await broker.shutdown()
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="mqbroker", description="RocketMQ-compatible broker", add_help=False)
    ap.add_argument("-c", "--configFile", dest="config", help="broker config file (Java properties)")
    ap.add_argument("-p", "--printConfigItem", action="store_true", help="print all config items and exit")
    ap.add_argument("-m", "--printImportantConfig", action="store_true", help="print important config items and exit")
    ap.add_argument("-n", "--namesrvAddr", dest="namesrv", help="name server address list, e.g. 127.0.0.1:9876;...")
    ap.add_argument("-h", "--help", action="help", help="print this help and exit")
    args = ap.parse_args(argv)
    configure_server_logging()
    try:
        configs, unknown = load_configs(args.config, args.namesrv)
    except ConfigError as e:
        print(f"mqbroker: error: {e}", file=sys.stderr)
        return 1
    for key in unknown:
        print(f"mqbroker: warning: unknown config key {key} (ignored)", file=sys.stderr)
    if args.printConfigItem or args.printImportantConfig:
        props = to_properties(*configs.all())
        if args.printImportantConfig:
            props = {k: props[k] for k in IMPORTANT_KEYS if k in props}
        sys.stdout.write(format_properties(props))
        return 0
    try:
        import uvloop  # here: ~35 ms that only a serving process needs (start-up time)

        return uvloop.run(_serve(configs))
    except ImportError:  # pragma: no cover - uvloop is a dependency
        return asyncio.run(_serve(configs))
