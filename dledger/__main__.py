"""Run one standalone DLedger member: ``python -m dledger -c dledger.properties [-p key=value ...]``.

The properties use DLedgerConfig's keys (group, selfId, peers, storeBaseDir, ...).
Role changes are printed as ``role <ROLE> term <n> leader <id>``; SIGTERM/SIGINT
stop the member after flushing and checkpointing its store.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys

from common.config import ConfigError, apply_properties, load_properties_file, parse_properties, unknown_keys
from common.process import stop_on_signals
from dledger.config import DLedgerConfig
from dledger.protocol import Role
from dledger.server import DLedgerServer


def parse_args(argv: list[str]) -> DLedgerConfig:
    ap = argparse.ArgumentParser(prog="python -m dledger", description=__doc__)
    ap.add_argument("-c", "--config", help="properties file")
    ap.add_argument("-p", "--property", action="append", default=[], help="key=value override")
    args = ap.parse_args(argv)
    props: dict[str, str] = {}
    if args.config:
        props.update(load_properties_file(args.config))
    props.update(parse_properties("\n".join(args.property)))
    cfg = DLedgerConfig()
    apply_properties(cfg, props)
    for key in unknown_keys(props, cfg):
        print(f"warning: unknown config key {key}", file=sys.stderr)
    if cfg.selfId not in cfg.peer_map():
        raise ConfigError(f"selfId {cfg.selfId} is not one of peers {cfg.peers}")
    return cfg


async def serve(cfg: DLedgerConfig) -> None:
    def on_role_change(role: Role, term: int, leader: str | None) -> None:
        print(f"role {role.value} term {term} leader {leader or '-'}", flush=True)

    server = DLedgerServer(cfg, on_role_change=on_role_change)
    await server.start()
    print(f"dledger {cfg.group}#{cfg.selfId} listening on {cfg.peer_map()[cfg.selfId]}", flush=True)
    await stop_on_signals().wait()
    await server.stop()


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        cfg = parse_args(sys.argv[1:] if argv is None else argv)
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    try:
        import uvloop  # here: ~35 ms that only a serving process needs (start-up time)

        uvloop.run(serve(cfg))
    except ImportError:  # pragma: no cover
        asyncio.run(serve(cfg))
    return 0


if __name__ == "__main__":
    sys.exit(main())
