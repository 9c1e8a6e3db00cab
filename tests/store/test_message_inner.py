"""MessageExtBrokerInner.from_ext and tags_code: the one copy a broker makes of a stored message."""

from __future__ import annotations

from common.message import MessageExt, MessageExtBrokerInner
from common.util import java_string_hash, tags_code


def test_tags_code_is_the_java_hash_or_zero():
    assert tags_code("TagA") == java_string_hash("TagA") and tags_code(None) == 0 and tags_code("") == 0


def test_from_ext_copies_the_stored_message_and_takes_the_new_place():
    ext = MessageExt(topic="T", queue_id=3, flag=7, body=b"b", sys_flag=4, born_timestamp=123,
                     born_host=("10.0.0.1", 5), store_host=("127.0.0.1", 10911), reconsume_times=2,
                     properties={"TAGS": "old"})
    props = {"TAGS": "new", "WAIT": "false"}
    inner = MessageExtBrokerInner.from_ext(ext, topic="%RETRY%g", queue_id=0, properties=props,
                                           properties_string="TAGS\x01new\x02")
    assert (inner.topic, inner.queue_id, inner.flag, inner.body, inner.sys_flag) == ("%RETRY%g", 0, 7, b"b", 4)
    assert (inner.born_timestamp, inner.born_host, inner.store_host) == (123, ("10.0.0.1", 5), ("127.0.0.1", 10911))
    assert inner.reconsume_times == 2 and inner.prepared_transaction_offset == 0
    assert inner.tags_code == java_string_hash("new")  # from the new properties, not the old ones
    again = MessageExtBrokerInner.from_ext(ext, topic="T", queue_id=1, properties={}, properties_string="",
                                           sys_flag=8, reconsume_times=3, prepared_transaction_offset=99)
    assert (again.sys_flag, again.reconsume_times, again.prepared_transaction_offset, again.tags_code) == (8, 3, 99, 0)
