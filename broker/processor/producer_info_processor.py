"""GET_ALL_PRODUCER_INFO (328, mqadmin producer): every producer instance the broker knows, by group."""

from __future__ import annotations

from typing import TYPE_CHECKING

from broker.producer_manager import ProducerManager
from remoting.connection import Connection
from remoting.header.admin_extra import GetAllProducerInfoRequestHeader

if TYPE_CHECKING:  # imported where used: not needed to start a broker
    from remoting.body.admin_extra import ProducerInfo, ProducerTableInfo
from remoting.codes import ResponseCode
from remoting.command import RemotingCommand

__all__ = ["ProducerInfoProcessor", "build_producer_table"]


def build_producer_table(producers: ProducerManager) -> ProducerTableInfo:
    """ProducerManager.getProducerTable: group -> instances (from the heartbeats' channel table)."""
    # imported on first use: not loaded at broker start-up (start-up time)
    from remoting.body.admin_extra import ProducerInfo, ProducerTableInfo

    data: dict[str, list[ProducerInfo]] = {}
    for group, chans in list(producers.group_channel_table.items()):
        infos = [
            ProducerInfo(
                clientId=i.client_id,
                # Java writes the channel's SocketAddress.toString(): "/ip:port"
                remoteIP=f"/{i.client_addr}",
                language=str(i.language),
                version=i.version,
                lastUpdateTimestamp=i.last_update_timestamp,
            )
            for i in list(chans.values())
        ]
        if infos:
            data[group] = infos
    return ProducerTableInfo(data)


class ProducerInfoProcessor:
    """Answers GET_ALL_PRODUCER_INFO with a ProducerTableInfo body (always SUCCESS)."""

    def __init__(self, producer_manager: ProducerManager):
        self.producers = producer_manager

    def get_all_producer_info(self, req: RemotingCommand, conn: Connection) -> RemotingCommand:
        req.decode_header(GetAllProducerInfoRequestHeader)
        return req.response_to(ResponseCode.SUCCESS, body=build_producer_table(self.producers).to_json())
