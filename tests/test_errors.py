"""One root above every error the project raises on purpose; one root per side under it."""

from __future__ import annotations

import pytest

from broker.errors import BrokerError, BrokerStartError, ConfigFileError
from client.exceptions import ClientError, MQBrokerError, MQClientError, RequestTimeoutError
from common.errors import RecordDecodeError, RocketMQError, StoreError
from common.mapped_file import MappedFileError
from common.message import MessageDecodeError, decode_message
from dledger.entry import EntryFormatError
from dledger.protocol import DLedgerError
from remoting.errors import RemoteProtocolError, RemotingError, RemotingTimeoutError
from store.index_file import IndexFileError


@pytest.mark.parametrize(
    ("cls", "side"),
    [
        (RemoteProtocolError, RemotingError), (RemotingTimeoutError, RemotingError),
        (MappedFileError, StoreError), (IndexFileError, StoreError), (RecordDecodeError, StoreError),
        (EntryFormatError, StoreError), (BrokerStartError, BrokerError), (ConfigFileError, BrokerError),
        (MQClientError, ClientError), (MQBrokerError, ClientError), (RequestTimeoutError, ClientError),
        (DLedgerError, RocketMQError),
    ],
)
def test_every_error_is_under_its_side_and_the_root(cls, side):
    assert issubclass(cls, side) and issubclass(side, RocketMQError)


def test_one_record_decode_error():
    import broker.filter.record_properties as rp
    import tools.mqstore as mqstore

    assert MessageDecodeError is RecordDecodeError is rp.RecordDecodeError is mqstore.RecordError
    with pytest.raises(RecordDecodeError):
        decode_message(b"\x00" * 8)
    with pytest.raises(ValueError):  # still a ValueError for callers that catch that
        decode_message(b"\x00" * 8)


def test_client_errors_carry_code_and_retriable():
    e = MQBrokerError(14, "busy", "127.0.0.1:10911")  # SERVICE_NOT_AVAILABLE: the producer tries another broker
    assert (e.code, e.retriable) == (14, True)
    e = MQBrokerError(13, "too big")  # MESSAGE_ILLEGAL: sending it again cannot help
    assert (e.code, e.retriable) == (13, False)
    assert MQClientError("no route").code == -1 and not MQClientError("no route").retriable
    assert MQClientError("x", 2, retriable=True).retriable
