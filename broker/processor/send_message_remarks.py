"""Answers of the send path formatted as RocketMQ 4.9.7 writes them (SendMessageProcessor's remarks,
diskUtil(), TopicConfig.toString(), Integer.parseInt), so clients and tools that match on text keep working.
"""

from __future__ import annotations

import os
import re

from common.perm import perm2string
from remoting.body.topic_config import TopicConfig
from remoting.codes import ResponseCode
from store.config import MessageStoreConfig

__all__ = [
    "STORED_STATUS_NAMES",
    "ILLEGAL_REMARK",
    "put_status_to_response",
    "disk_util",
    "java_topic_config_string",
    "java_parse_int",
    "FAQ_SUGGEST",
]

# Remarks word for word as RocketMQ 4.9.7's SendMessageProcessor.handlePutMessageResult;
# {max} is MessageStoreConfig.maxMessageSize, {disk} the diskUtil() bracket.
ILLEGAL_REMARK = (
    "the message is illegal, maybe msg body or properties length not matched. msg body length limit {max}B, "
    "msg properties length limit 32KB."
)
_STATUS_REMARKS = {
    "CREATE_MAPEDFILE_FAILED": (ResponseCode.SYSTEM_ERROR, "create mapped file failed, server is busy or broken."),
    "MESSAGE_ILLEGAL": (ResponseCode.MESSAGE_ILLEGAL, ILLEGAL_REMARK),
    "PROPERTIES_SIZE_EXCEEDED": (ResponseCode.MESSAGE_ILLEGAL, ILLEGAL_REMARK),
    "SERVICE_NOT_AVAILABLE": (
        ResponseCode.SERVICE_NOT_AVAILABLE,
        "service not available now. It may be caused by one of the following reasons: the broker's disk is full "
        "[{disk}], messages are put to the slave, message store has been shut down, etc.",
    ),
    "OS_PAGECACHE_BUSY": (ResponseCode.SYSTEM_ERROR, "[PC_SYNCHRONIZED]broker busy, start flow control for a while"),
    "LMQ_CONSUME_QUEUE_NUM_EXCEEDED": (
        ResponseCode.SYSTEM_ERROR,
        "[LMQ_CONSUME_QUEUE_NUM_EXCEEDED]broker config enableLmq and enableMultiDispatch, lmq consumeQueue num "
        "exceed maxLmqConsumeQueueNum config num, default limit 2w.",
    ),
    "UNKNOWN_ERROR": (ResponseCode.SYSTEM_ERROR, "UNKNOWN_ERROR"),
}
# Java's switch default (a status it has no case for)
_DEFAULT_STATUS_REMARK = (ResponseCode.SYSTEM_ERROR, "UNKNOWN_ERROR DEFAULT")
_STORED_CODES = {
    "PUT_OK": ResponseCode.SUCCESS,
    "FLUSH_DISK_TIMEOUT": ResponseCode.FLUSH_DISK_TIMEOUT,
    "FLUSH_SLAVE_TIMEOUT": ResponseCode.FLUSH_SLAVE_TIMEOUT,
    "SLAVE_NOT_AVAILABLE": ResponseCode.SLAVE_NOT_AVAILABLE,
}
#: the PutMessageStatus names whose message is stored (answered with its msgId, counted as a put)
STORED_STATUS_NAMES = frozenset(_STORED_CODES)


def put_status_to_response(status_name: str, max_message_size: int, disk: str = "") -> tuple[int, str | None, bool]:
    """(response code, remark, stored?) for a PutMessageStatus name (spec broker-behaviour §5).

    ``disk`` fills SERVICE_NOT_AVAILABLE's bracket (see :func:`disk_util`)."""
    code = _STORED_CODES.get(status_name)
    if code is not None:
        return int(code), None, True
    code, remark = _STATUS_REMARKS.get(status_name, _DEFAULT_STATUS_REMARK)
    return int(code), remark.format(max=max_message_size, disk=disk), False


def _disk_used_ratio(path: str) -> float:
    """UtilAll.getDiskPartitionSpaceUsedPercent: used / (used + usable), rounded up to 1/100; -1 unreadable."""
    if not path or not os.path.exists(path):
        return -1.0
    try:
        st = os.statvfs(path)
    except OSError:
        return -1.0
    if st.f_blocks <= 0:
        return -1.0
    used = (st.f_blocks - st.f_bfree) * st.f_frsize
    entire = used + st.f_bavail * st.f_frsize
    if entire <= 0:
        return -1.0
    pct = used * 100 // entire + (1 if used * 100 % entire else 0)
    return pct / 100.0


def disk_util(store_config: MessageStoreConfig) -> str:
    """``CL: %5.2f CQ: %5.2f INDEX: %5.2f`` as 4.9.7's SendMessageProcessor.diskUtil() (used ratios 0..1)."""
    root = store_config.storePathRootDir
    cl_paths = store_config.storePathCommitLog or os.path.join(root, "commitlog")
    cl = 100.0
    for path in cl_paths.strip().split(";"):  # MessageStoreConfig.MULTI_PATH_SPLITTER
        cl = min(cl, _disk_used_ratio(path))
    cq = _disk_used_ratio(os.path.join(root, "consumequeue"))
    index = _disk_used_ratio(os.path.join(root, "index"))
    return f"CL: {cl:5.2f} CQ: {cq:5.2f} INDEX: {index:5.2f}"


def java_topic_config_string(tc: TopicConfig) -> str:
    """TopicConfig.toString() of RocketMQ 4.9.7 (what the bad-queueId remark prints)."""
    tft = tc.topicFilterType  # a StrEnum: formats as its name
    return (
        f"TopicConfig [topicName={tc.topicName}, readQueueNums={tc.readQueueNums}, "
        f"writeQueueNums={tc.writeQueueNums}, perm={perm2string(tc.perm)}, topicFilterType={tft}, "
        f"topicSysFlag={tc.topicSysFlag}, order={'true' if tc.order else 'false'}]"
    )


# FAQUrl.suggestTodo(any 4.9.7 FAQ url): they all point at the same page
FAQ_SUGGEST = "\nSee http://rocketmq.apache.org/docs/faq/ for further details."

_JAVA_INT = re.compile(r"[+-]?[0-9]+")


def java_parse_int(raw: str) -> int | None:
    """Integer.parseInt for ASCII input: None where Java throws NumberFormatException."""
    if _JAVA_INT.fullmatch(raw) is None:
        return None
    v = int(raw)
    return v if -(1 << 31) <= v < (1 << 31) else None
