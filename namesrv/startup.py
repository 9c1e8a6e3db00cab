"""``mqnamesrv``: command line of the NameServer (NamesrvStartup).

Options: ``-c file`` loads a properties file, ``-n port`` (or ``host:port``)
overrides ``listenPort``, ``-p`` prints the effective config and exits, ``-h``
prints help. Bad config values and a taken port end the process with a clear
message on stderr and a non-zero exit code; SIGTERM/SIGINT stop it cleanly.
Runs on uvloop; logs to stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys

from common.config import ConfigError, apply_all, format_properties, load_properties_file, to_properties
from common.metrics_exporter import MetricsStartError
from common.process import configure_server_logging, stop_on_signals
from namesrv.config import NamesrvConfig
from remoting.tls import TlsSystemConfig

__all__ = ["main", "build_config", "serve"]

PROG = "mqnamesrv"
log = logging.getLogger("namesrv")


class _UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # argparse would exit(2) itself; keep control here
        raise _UsageError(message)


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog=PROG, description="Run the RocketMQ NameServer.", add_help=False)
    p.add_argument("-c", "--configFile", metavar="FILE", help="NameServer config properties file")
    p.add_argument("-n", "--listenPort", metavar="PORT", help="port to listen on (host:port accepted)")
    p.add_argument("-p", "--printConfigItem", action="store_true", help="print all config items and exit")
    p.add_argument("-h", "--help", action="store_true", help="print this help and exit")
    return p


def _parse_port(text: str) -> int:
    raw = text.rsplit(":", 1)[-1].strip()
    if not raw.isdigit() or not 0 <= int(raw) <= 65535:
        raise ConfigError(f"bad value for -n: {text!r} is not a port (or host:port)")
    return int(raw)


def build_tls(args: argparse.Namespace) -> TlsSystemConfig:
    """The ``tls.*`` keys of the ``-c`` file (RocketMQ reads them as system properties). Raises ConfigError."""
    if not args.configFile:
        return TlsSystemConfig()
    props = load_properties_file(args.configFile)
    return TlsSystemConfig.from_properties(props, os.path.dirname(os.path.abspath(args.configFile)))


def build_config(args: argparse.Namespace) -> NamesrvConfig:
    """Defaults, then the ``-c`` file, then ``-n``; validated. Raises ConfigError."""
    config = NamesrvConfig()
    if args.configFile:
        props = load_properties_file(args.configFile)
        extra = apply_all(props, config, also_known=TlsSystemConfig.KEYS)
        if extra:
            print(f"{PROG}: ignoring unknown config keys: {', '.join(extra)}", file=sys.stderr)
    if args.listenPort is not None:
        config.listenPort = _parse_port(args.listenPort)
    config.validate()
    return config


async def serve(config: NamesrvConfig, tls: TlsSystemConfig | None = None) -> int:
    """Run a NameServer until SIGTERM/SIGINT; returns the exit code."""
    # here, not at the top: mqnamesrv --help / -p print without loading the server (start-up time)
    from namesrv.namesrv_controller import NamesrvController

    controller = NamesrvController(config, tls=tls)
    try:
        await controller.start()
    except OSError as e:
        print(
            f"{PROG}: cannot listen on {config.bindAddress}:{config.listenPort}: {e.strerror or e}",
            file=sys.stderr,
        )
        await controller.stop(grace=0)
        return 1
    except (ValueError, MetricsStartError) as e:  # corrupt kvConfig.json: refuse rather than overwrite it
        print(f"{PROG}: {e}", file=sys.stderr)
        await controller.stop(grace=0)
        return 1
    print(
        f"The Name Server boot success. serializeType=JSON, listening on {config.bindAddress}:{controller.port}",
        flush=True,
    )
    await stop_on_signals().wait()
    log.info("shutdown requested")
    await controller.stop()
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``python -m namesrv``; returns the process exit code."""
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except _UsageError as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        parser.print_usage(sys.stderr)
        return 2
    if args.help:
        parser.print_help(sys.stdout)
        return 0
    try:
        config = build_config(args)
        tls = build_tls(args)
    except ConfigError as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return 1
    if args.printConfigItem:
        sys.stdout.write(format_properties(to_properties(config)))
        return 0
    configure_server_logging(sys.stderr)
    try:
        import uvloop  # here: ~35 ms that only a serving process needs (start-up time)
    except ImportError:  # pragma: no cover - uvloop is a dependency
        return asyncio.run(serve(config, tls))
    return uvloop.run(serve(config, tls))
