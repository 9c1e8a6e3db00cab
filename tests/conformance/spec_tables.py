"""Wire tables transcribed by hand from the spec (remoting-protocol.md §9-§16).

Nothing here is derived from our code: each entry is what an official 4.9.7
client sends or expects. Field spec: ``name: (java type, req)`` where req is
``"R"`` (required), ``"R="`` (required in the table but the spec gives a
default, so a server may fill it in), ``"O"`` (optional) or ``"?"`` (the spec
gives no R/O, e.g. broker -> client headers).
"""

from __future__ import annotations

S, I, L, B = "String", "Integer", "Long", "boolean"  # noqa: E741 - short column names of the spec tables

# Optional keys any 4.9.7-style request header may carry (§8: RpcRequestHeader ``bname``).
GLOBAL_OPTIONAL = {"bname"}

# (spec section, header class path) -> fields
REQUEST_HEADERS: dict[str, tuple[str, str, dict[str, tuple[str, str]]]] = {
    # §12 NameServer
    "REGISTER_BROKER": ("§12", "remoting.header.namesrv.RegisterBrokerRequestHeader", {
        "brokerName": (S, "R"), "brokerAddr": (S, "R"), "clusterName": (S, "R"), "haServerAddr": (S, "R"),
        "brokerId": (L, "R"), "compressed": (B, "O"), "bodyCrc32": (I, "O"),
    }),
    "UNREGISTER_BROKER": ("§12", "remoting.header.namesrv.UnRegisterBrokerRequestHeader", {
        "brokerName": (S, "R"), "brokerAddr": (S, "R"), "clusterName": (S, "R"), "brokerId": (L, "R"),
    }),
    "QUERY_DATA_VERSION": ("§12", "remoting.header.namesrv.QueryDataVersionRequestHeader", {
        "brokerName": (S, "R"), "brokerAddr": (S, "R"), "clusterName": (S, "R"), "brokerId": (L, "R"),
    }),
    "GET_ROUTEINFO_BY_TOPIC": ("§12", "remoting.header.namesrv.GetRouteInfoRequestHeader", {
        "topic": (S, "R"), "acceptStandardJsonOnly": (B, "O"),
    }),
    "DELETE_TOPIC_IN_NAMESRV": ("§12", "remoting.header.namesrv.DeleteTopicFromNamesrvRequestHeader", {
        "topic": (S, "R"), "clusterName": (S, "O"),
    }),
    "WIPE_WRITE_PERM_OF_BROKER": ("§12", "remoting.header.namesrv.WipeWritePermOfBrokerRequestHeader", {
        "brokerName": (S, "R"),
    }),
    "ADD_WRITE_PERM_OF_BROKER": ("§12", "remoting.header.namesrv.AddWritePermOfBrokerRequestHeader", {
        "brokerName": (S, "R"),
    }),
    "PUT_KV_CONFIG": ("§12", "remoting.header.namesrv.PutKVConfigRequestHeader", {
        "namespace": (S, "R"), "key": (S, "R"), "value": (S, "R"),
    }),
    "GET_KV_CONFIG": ("§12", "remoting.header.namesrv.GetKVConfigRequestHeader", {
        "namespace": (S, "R"), "key": (S, "R"),
    }),
    "DELETE_KV_CONFIG": ("§12", "remoting.header.namesrv.DeleteKVConfigRequestHeader", {
        "namespace": (S, "R"), "key": (S, "R"),
    }),
    "GET_KVLIST_BY_NAMESPACE": ("§12", "remoting.header.namesrv.GetKVListByNamespaceRequestHeader", {
        "namespace": (S, "R"),
    }),
    "GET_TOPICS_BY_CLUSTER": ("§12", "remoting.header.namesrv.GetTopicsByClusterRequestHeader", {
        "cluster": (S, "R"),
    }),
    # §13 producer
    "SEND_MESSAGE": ("§13.1", "remoting.header.broker.SendMessageRequestHeader", {
        "producerGroup": (S, "R"), "topic": (S, "R"), "defaultTopic": (S, "R"), "defaultTopicQueueNums": (I, "R"),
        "queueId": (I, "R"), "sysFlag": (I, "R"), "bornTimestamp": (L, "R"), "flag": (I, "R"),
        "properties": (S, "O"), "reconsumeTimes": (I, "O"), "unitMode": (B, "O"), "maxReconsumeTimes": (I, "O"),
        "batch": (B, "O"), "bname": (S, "O"),
    }),
    "SEND_MESSAGE_V2": ("§13.1", "remoting.header.broker.SendMessageRequestHeaderV2", {
        "a": (S, "R"), "b": (S, "R"), "c": (S, "R"), "d": (I, "R"), "e": (I, "R"), "f": (I, "R"), "g": (L, "R"),
        "h": (I, "R"), "i": (S, "O"), "j": (I, "O"), "k": (B, "O"), "l": (I, "O"), "m": (B, "O"), "n": (S, "O"),
    }),
    "END_TRANSACTION": ("§13.2", "remoting.header.broker.EndTransactionRequestHeader", {
        "producerGroup": (S, "R"), "tranStateTableOffset": (L, "R"), "commitLogOffset": (L, "R"),
        "commitOrRollback": (I, "R"), "fromTransactionCheck": (B, "O"), "msgId": (S, "R"),
        "transactionId": (S, "O"), "bname": (S, "O"),
    }),
    # §14 consumer
    "PULL_MESSAGE": ("§14.1", "remoting.header.broker.PullMessageRequestHeader", {
        "consumerGroup": (S, "R"), "topic": (S, "R"), "queueId": (I, "R"), "queueOffset": (L, "R"),
        "maxMsgNums": (I, "R"), "sysFlag": (I, "R"), "commitOffset": (L, "R"), "suspendTimeoutMillis": (L, "R"),
        "subscription": (S, "O"), "subVersion": (L, "R"), "expressionType": (S, "O"), "bname": (S, "O"),
    }),
    "QUERY_CONSUMER_OFFSET": ("§14.2", "remoting.header.broker.QueryConsumerOffsetRequestHeader", {
        "consumerGroup": (S, "R"), "topic": (S, "R"), "queueId": (I, "R"), "bname": (S, "O"),
    }),
    "UPDATE_CONSUMER_OFFSET": ("§14.2", "remoting.header.broker.UpdateConsumerOffsetRequestHeader", {
        "consumerGroup": (S, "R"), "topic": (S, "R"), "queueId": (I, "R"), "commitOffset": (L, "R"),
        "bname": (S, "O"),
    }),
    "GET_MAX_OFFSET": ("§14.2", "remoting.header.broker.GetMaxOffsetRequestHeader", {
        "topic": (S, "R"), "queueId": (I, "R"),
    }),
    "GET_MIN_OFFSET": ("§14.2", "remoting.header.broker.GetMinOffsetRequestHeader", {
        "topic": (S, "R"), "queueId": (I, "R"),
    }),
    "SEARCH_OFFSET_BY_TIMESTAMP": ("§14.2", "remoting.header.broker.SearchOffsetRequestHeader", {
        "topic": (S, "R"), "queueId": (I, "R"), "timestamp": (L, "R"),
    }),
    "GET_EARLIEST_MSG_STORETIME": ("§14.2", "remoting.header.broker.GetEarliestMsgStoretimeRequestHeader", {
        "topic": (S, "R"), "queueId": (I, "R"),
    }),
    "GET_CONSUMER_LIST_BY_GROUP": ("§14.2", "remoting.header.broker.GetConsumerListByGroupRequestHeader", {
        "consumerGroup": (S, "R"),
    }),
    "UNREGISTER_CLIENT": ("§14.3", "remoting.header.broker.UnregisterClientRequestHeader", {
        "clientID": (S, "R"), "producerGroup": (S, "O"), "consumerGroup": (S, "O"),
    }),
    "CONSUMER_SEND_MSG_BACK": ("§14.4", "remoting.header.broker.ConsumerSendMsgBackRequestHeader", {
        "offset": (L, "R"), "group": (S, "R"), "delayLevel": (I, "R"), "originMsgId": (S, "O"),
        "originTopic": (S, "O"), "unitMode": (B, "O"), "maxReconsumeTimes": (I, "O"), "bname": (S, "O"),
    }),
    "QUERY_MESSAGE": ("§14.5", "remoting.header.broker.QueryMessageRequestHeader", {
        "topic": (S, "R"), "key": (S, "R"), "maxNum": (I, "R"), "beginTimestamp": (L, "R"),
        "endTimestamp": (L, "R"),
    }),
    "VIEW_MESSAGE_BY_ID": ("§14.5", "remoting.header.broker.ViewMessageRequestHeader", {
        "offset": (L, "R"),
    }),
    # §15 broker -> client (no R/O column in the spec)
    "NOTIFY_CONSUMER_IDS_CHANGED": ("§15", "remoting.header.broker.NotifyConsumerIdsChangedRequestHeader", {
        "consumerGroup": (S, "?"),
    }),
    "CHECK_TRANSACTION_STATE": ("§15", "remoting.header.client_extra.CheckTransactionStateRequestHeader", {
        "tranStateTableOffset": (L, "?"), "commitLogOffset": (L, "?"), "msgId": (S, "?"),
        "transactionId": (S, "?"), "offsetMsgId": (S, "?"),
    }),
    "CHECK_TRANSACTION_STATE(semantics)": ("§15", "remoting.header.semantics.CheckTransactionStateRequestHeader", {
        "tranStateTableOffset": (L, "?"), "commitLogOffset": (L, "?"), "msgId": (S, "?"),
        "transactionId": (S, "?"), "offsetMsgId": (S, "?"),
    }),
    "RESET_CONSUMER_CLIENT_OFFSET": ("§15", "remoting.header.broker.ResetOffsetRequestHeader", {
        "topic": (S, "?"), "group": (S, "?"), "timestamp": (L, "?"), "isForce": (B, "?"),
    }),
    "GET_CONSUMER_STATUS_FROM_CLIENT": ("§15", "remoting.header.client_extra.GetConsumerStatusRequestHeader", {
        "topic": (S, "?"), "group": (S, "?"), "clientAddr": (S, "?"),
    }),
    "GET_CONSUMER_RUNNING_INFO": ("§15", "remoting.header.client_extra.GetConsumerRunningInfoRequestHeader", {
        "consumerGroup": (S, "?"), "clientId": (S, "?"), "jstackEnable": (B, "?"),
    }),
    "CONSUME_MESSAGE_DIRECTLY": ("§15", "remoting.header.client_extra.ConsumeMessageDirectlyResultRequestHeader", {
        "consumerGroup": (S, "?"), "clientId": (S, "?"), "msgId": (S, "?"), "brokerName": (S, "?"),
    }),
    # §16 admin
    "UPDATE_AND_CREATE_TOPIC": ("§16", "remoting.header.broker.CreateTopicRequestHeader", {
        "topic": (S, "R"), "defaultTopic": (S, "R"), "readQueueNums": (I, "R"), "writeQueueNums": (I, "R"),
        "perm": (I, "R"), "topicFilterType": (S, "R"), "topicSysFlag": (I, "O"), "order": (B, "R="),
    }),
    "DELETE_TOPIC_IN_BROKER": ("§16", "remoting.header.broker.DeleteTopicRequestHeader", {"topic": (S, "R")}),
    "DELETE_SUBSCRIPTIONGROUP": ("§16", "remoting.header.broker.DeleteSubscriptionGroupRequestHeader", {
        "groupName": (S, "R"), "removeOffset": (B, "O"),
    }),
    "GET_TOPIC_STATS_INFO": ("§16", "remoting.header.broker.GetTopicStatsInfoRequestHeader", {"topic": (S, "R")}),
    "GET_CONSUMER_CONNECTION_LIST": ("§16", "remoting.header.broker.GetConsumerConnectionListRequestHeader", {
        "consumerGroup": (S, "R"),
    }),
    "GET_PRODUCER_CONNECTION_LIST": ("§16", "remoting.header.broker.GetProducerConnectionListRequestHeader", {
        "producerGroup": (S, "R"),
    }),
    "GET_CONSUME_STATS": ("§16", "remoting.header.broker.GetConsumeStatsRequestHeader", {
        "consumerGroup": (S, "R"), "topic": (S, "O"),
    }),
    "INVOKE_BROKER_TO_RESET_OFFSET": ("§16", "remoting.header.broker.ResetOffsetRequestHeader", {
        "topic": (S, "R"), "group": (S, "R"), "timestamp": (L, "R"), "isForce": (B, "R"),
    }),
    "CLONE_GROUP_OFFSET": ("§16", "remoting.header.broker.CloneGroupOffsetRequestHeader", {
        "srcGroup": (S, "R"), "destGroup": (S, "R"), "topic": (S, "O"), "offline": (B, "O"),
    }),
    "QUERY_TOPIC_CONSUME_BY_WHO": ("§16", "remoting.header.broker.QueryTopicConsumeByWhoRequestHeader", {
        "topic": (S, "R"),
    }),
    "QUERY_CONSUME_TIME_SPAN": ("§16", "remoting.header.broker.QueryConsumeTimeSpanRequestHeader", {
        "topic": (S, "R"), "group": (S, "R"),
    }),
    "VIEW_BROKER_STATS_DATA": ("§16", "remoting.header.broker.ViewBrokerStatsDataRequestHeader", {
        "statsName": (S, "R"), "statsKey": (S, "R"),
    }),
}

# Response custom headers: (section, class path, fields).
RESPONSE_HEADERS: dict[str, tuple[str, str, dict[str, tuple[str, str]]]] = {
    "REGISTER_BROKER": ("§12", "remoting.header.namesrv.RegisterBrokerResponseHeader", {
        "haServerAddr": (S, "O"), "masterAddr": (S, "O"),
    }),
    "QUERY_DATA_VERSION": ("§12", "remoting.header.namesrv.QueryDataVersionResponseHeader", {"changed": (B, "?")}),
    "WIPE_WRITE_PERM_OF_BROKER": ("§12", "remoting.header.namesrv.WipeWritePermOfBrokerResponseHeader", {
        "wipeTopicCount": (I, "?"),
    }),
    "ADD_WRITE_PERM_OF_BROKER": ("§12", "remoting.header.namesrv.AddWritePermOfBrokerResponseHeader", {
        "addTopicCount": (I, "?"),
    }),
    "GET_KV_CONFIG": ("§12", "remoting.header.namesrv.GetKVConfigResponseHeader", {"value": (S, "?")}),
    "SEND_MESSAGE": ("§13.1", "remoting.header.broker.SendMessageResponseHeader", {
        "msgId": (S, "R"), "queueId": (I, "R"), "queueOffset": (L, "R"), "transactionId": (S, "O"),
    }),
    "PULL_MESSAGE": ("§14.1", "remoting.header.broker.PullMessageResponseHeader", {
        "suggestWhichBrokerId": (L, "R"), "nextBeginOffset": (L, "R"), "minOffset": (L, "R"),
        "maxOffset": (L, "R"),
    }),
    "QUERY_CONSUMER_OFFSET": ("§14.2", "remoting.header.broker.QueryConsumerOffsetResponseHeader", {
        "offset": (L, "?"),
    }),
    "GET_MAX_OFFSET": ("§14.2", "remoting.header.broker.OffsetResponseHeader", {"offset": (L, "?")}),
    "GET_EARLIEST_MSG_STORETIME": ("§14.2", "remoting.header.broker.GetEarliestMsgStoretimeResponseHeader", {
        "timestamp": (L, "?"),
    }),
    "QUERY_MESSAGE": ("§14.5", "remoting.header.broker.QueryMessageResponseHeader", {
        "indexLastUpdateTimestamp": (L, "?"), "indexLastUpdatePhyoffset": (L, "?"),
    }),
    "GET_BROKER_CONFIG": ("§16", "remoting.header.broker.GetBrokerConfigResponseHeader", {"version": (S, "?")}),
}

# §9 request codes (4.9.7), transcribed.
REQUEST_CODES = {
    "SEND_MESSAGE": 10, "PULL_MESSAGE": 11, "QUERY_MESSAGE": 12, "QUERY_BROKER_OFFSET": 13,
    "QUERY_CONSUMER_OFFSET": 14, "UPDATE_CONSUMER_OFFSET": 15, "UPDATE_AND_CREATE_TOPIC": 17,
    "GET_ALL_TOPIC_CONFIG": 21, "GET_TOPIC_CONFIG_LIST": 22, "GET_TOPIC_NAME_LIST": 23, "UPDATE_BROKER_CONFIG": 25,
    "GET_BROKER_CONFIG": 26, "TRIGGER_DELETE_FILES": 27, "GET_BROKER_RUNTIME_INFO": 28,
    "SEARCH_OFFSET_BY_TIMESTAMP": 29, "GET_MAX_OFFSET": 30, "GET_MIN_OFFSET": 31, "GET_EARLIEST_MSG_STORETIME": 32,
    "VIEW_MESSAGE_BY_ID": 33, "HEART_BEAT": 34, "UNREGISTER_CLIENT": 35, "CONSUMER_SEND_MSG_BACK": 36,
    "END_TRANSACTION": 37, "GET_CONSUMER_LIST_BY_GROUP": 38, "CHECK_TRANSACTION_STATE": 39,
    "NOTIFY_CONSUMER_IDS_CHANGED": 40, "LOCK_BATCH_MQ": 41, "UNLOCK_BATCH_MQ": 42, "GET_ALL_CONSUMER_OFFSET": 43,
    "GET_ALL_DELAY_OFFSET": 45, "CHECK_CLIENT_CONFIG": 46, "UPDATE_AND_CREATE_ACL_CONFIG": 50,
    "DELETE_ACL_CONFIG": 51, "GET_BROKER_CLUSTER_ACL_INFO": 52, "UPDATE_GLOBAL_WHITE_ADDRS_CONFIG": 53,
    "GET_BROKER_CLUSTER_ACL_CONFIG": 54, "PUT_KV_CONFIG": 100, "GET_KV_CONFIG": 101, "DELETE_KV_CONFIG": 102,
    "REGISTER_BROKER": 103, "UNREGISTER_BROKER": 104, "GET_ROUTEINFO_BY_TOPIC": 105, "GET_BROKER_CLUSTER_INFO": 106,
    "UPDATE_AND_CREATE_SUBSCRIPTIONGROUP": 200, "GET_ALL_SUBSCRIPTIONGROUP_CONFIG": 201, "GET_TOPIC_STATS_INFO": 202,
    "GET_CONSUMER_CONNECTION_LIST": 203, "GET_PRODUCER_CONNECTION_LIST": 204, "WIPE_WRITE_PERM_OF_BROKER": 205,
    "GET_ALL_TOPIC_LIST_FROM_NAMESERVER": 206, "DELETE_SUBSCRIPTIONGROUP": 207, "GET_CONSUME_STATS": 208,
    "SUSPEND_CONSUMER": 209, "RESUME_CONSUMER": 210, "RESET_CONSUMER_OFFSET_IN_CONSUMER": 211,
    "RESET_CONSUMER_OFFSET_IN_BROKER": 212, "ADJUST_CONSUMER_THREAD_POOL": 213, "WHO_CONSUME_THE_MESSAGE": 214,
    "DELETE_TOPIC_IN_BROKER": 215, "DELETE_TOPIC_IN_NAMESRV": 216, "GET_KVLIST_BY_NAMESPACE": 219,
    "RESET_CONSUMER_CLIENT_OFFSET": 220, "GET_CONSUMER_STATUS_FROM_CLIENT": 221, "INVOKE_BROKER_TO_RESET_OFFSET": 222,
    "INVOKE_BROKER_TO_GET_CONSUMER_STATUS": 223, "GET_TOPICS_BY_CLUSTER": 224, "QUERY_TOPIC_CONSUME_BY_WHO": 300,
    "REGISTER_FILTER_SERVER": 301, "REGISTER_MESSAGE_FILTER_CLASS": 302, "QUERY_CONSUME_TIME_SPAN": 303,
    "GET_SYSTEM_TOPIC_LIST_FROM_NS": 304, "GET_SYSTEM_TOPIC_LIST_FROM_BROKER": 305, "CLEAN_EXPIRED_CONSUMEQUEUE": 306,
    "GET_CONSUMER_RUNNING_INFO": 307, "QUERY_CORRECTION_OFFSET": 308, "CONSUME_MESSAGE_DIRECTLY": 309,
    "SEND_MESSAGE_V2": 310, "GET_UNIT_TOPIC_LIST": 311, "GET_HAS_UNIT_SUB_TOPIC_LIST": 312,
    "GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST": 313, "CLONE_GROUP_OFFSET": 314, "VIEW_BROKER_STATS_DATA": 315,
    "CLEAN_UNUSED_TOPIC": 316, "GET_BROKER_CONSUME_STATS": 317, "UPDATE_NAMESRV_CONFIG": 318,
    "GET_NAMESRV_CONFIG": 319, "SEND_BATCH_MESSAGE": 320, "QUERY_CONSUME_QUEUE": 321, "QUERY_DATA_VERSION": 322,
    "RESUME_CHECK_HALF_MESSAGE": 323, "SEND_REPLY_MESSAGE": 324, "SEND_REPLY_MESSAGE_V2": 325,
    "PUSH_REPLY_MESSAGE_TO_CLIENT": 326, "ADD_WRITE_PERM_OF_BROKER": 327, "GET_ALL_PRODUCER_INFO": 328,
    "DELETE_EXPIRED_COMMITLOG": 329,
}

# §9 "Handled by" column.
NAMESRV_CODES = [
    "PUT_KV_CONFIG", "GET_KV_CONFIG", "DELETE_KV_CONFIG", "REGISTER_BROKER", "UNREGISTER_BROKER",
    "GET_ROUTEINFO_BY_TOPIC", "GET_BROKER_CLUSTER_INFO", "WIPE_WRITE_PERM_OF_BROKER",
    "GET_ALL_TOPIC_LIST_FROM_NAMESERVER", "DELETE_TOPIC_IN_NAMESRV", "GET_KVLIST_BY_NAMESPACE",
    "GET_TOPICS_BY_CLUSTER", "GET_SYSTEM_TOPIC_LIST_FROM_NS", "GET_UNIT_TOPIC_LIST", "GET_HAS_UNIT_SUB_TOPIC_LIST",
    "GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST", "UPDATE_NAMESRV_CONFIG", "GET_NAMESRV_CONFIG", "QUERY_DATA_VERSION",
    "ADD_WRITE_PERM_OF_BROKER",
]
BROKER_CODES = [
    "SEND_MESSAGE", "PULL_MESSAGE", "QUERY_MESSAGE", "QUERY_CONSUMER_OFFSET", "UPDATE_CONSUMER_OFFSET",
    "UPDATE_AND_CREATE_TOPIC", "GET_ALL_TOPIC_CONFIG", "UPDATE_BROKER_CONFIG", "GET_BROKER_CONFIG",
    "GET_BROKER_RUNTIME_INFO", "SEARCH_OFFSET_BY_TIMESTAMP", "GET_MAX_OFFSET", "GET_MIN_OFFSET",
    "GET_EARLIEST_MSG_STORETIME", "VIEW_MESSAGE_BY_ID", "HEART_BEAT", "UNREGISTER_CLIENT", "CONSUMER_SEND_MSG_BACK",
    "END_TRANSACTION", "GET_CONSUMER_LIST_BY_GROUP", "LOCK_BATCH_MQ", "UNLOCK_BATCH_MQ", "GET_ALL_CONSUMER_OFFSET",
    "GET_ALL_DELAY_OFFSET", "CHECK_CLIENT_CONFIG", "UPDATE_AND_CREATE_ACL_CONFIG", "DELETE_ACL_CONFIG",
    "GET_BROKER_CLUSTER_ACL_INFO", "UPDATE_GLOBAL_WHITE_ADDRS_CONFIG", "GET_BROKER_CLUSTER_ACL_CONFIG",
    "UPDATE_AND_CREATE_SUBSCRIPTIONGROUP", "GET_ALL_SUBSCRIPTIONGROUP_CONFIG", "GET_TOPIC_STATS_INFO",
    "GET_CONSUMER_CONNECTION_LIST", "GET_PRODUCER_CONNECTION_LIST", "DELETE_SUBSCRIPTIONGROUP", "GET_CONSUME_STATS",
    "DELETE_TOPIC_IN_BROKER", "INVOKE_BROKER_TO_RESET_OFFSET", "INVOKE_BROKER_TO_GET_CONSUMER_STATUS",
    "QUERY_TOPIC_CONSUME_BY_WHO", "REGISTER_FILTER_SERVER", "QUERY_CONSUME_TIME_SPAN",
    "GET_SYSTEM_TOPIC_LIST_FROM_BROKER", "CLEAN_EXPIRED_CONSUMEQUEUE", "GET_CONSUMER_RUNNING_INFO",
    "QUERY_CORRECTION_OFFSET", "CONSUME_MESSAGE_DIRECTLY", "SEND_MESSAGE_V2", "CLONE_GROUP_OFFSET",
    "VIEW_BROKER_STATS_DATA", "CLEAN_UNUSED_TOPIC", "GET_BROKER_CONSUME_STATS", "SEND_BATCH_MESSAGE",
    "QUERY_CONSUME_QUEUE", "RESUME_CHECK_HALF_MESSAGE", "SEND_REPLY_MESSAGE", "SEND_REPLY_MESSAGE_V2",
    "GET_ALL_PRODUCER_INFO", "DELETE_EXPIRED_COMMITLOG",
]

# §10 response codes (4.9.7).
RESPONSE_CODES = {
    "SUCCESS": 0, "SYSTEM_ERROR": 1, "SYSTEM_BUSY": 2, "REQUEST_CODE_NOT_SUPPORTED": 3, "TRANSACTION_FAILED": 4,
    "FLUSH_DISK_TIMEOUT": 10, "SLAVE_NOT_AVAILABLE": 11, "FLUSH_SLAVE_TIMEOUT": 12, "MESSAGE_ILLEGAL": 13,
    "SERVICE_NOT_AVAILABLE": 14, "VERSION_NOT_SUPPORTED": 15, "NO_PERMISSION": 16, "TOPIC_NOT_EXIST": 17,
    "TOPIC_EXIST_ALREADY": 18, "PULL_NOT_FOUND": 19, "PULL_RETRY_IMMEDIATELY": 20, "PULL_OFFSET_MOVED": 21,
    "QUERY_NOT_FOUND": 22, "SUBSCRIPTION_PARSE_FAILED": 23, "SUBSCRIPTION_NOT_EXIST": 24,
    "SUBSCRIPTION_NOT_LATEST": 25, "SUBSCRIPTION_GROUP_NOT_EXIST": 26, "FILTER_DATA_NOT_EXIST": 27,
    "FILTER_DATA_NOT_LATEST": 28, "TRANSACTION_SHOULD_COMMIT": 200, "TRANSACTION_SHOULD_ROLLBACK": 201,
    "TRANSACTION_STATE_UNKNOW": 202, "TRANSACTION_STATE_GROUP_WRONG": 203, "NO_BUYER_ID": 204,
    "NOT_IN_CURRENT_UNIT": 205, "CONSUMER_NOT_ONLINE": 206, "CONSUME_MSG_TIMEOUT": 207, "NO_MESSAGE": 208,
    "UPDATE_AND_CREATE_ACL_CONFIG_FAILED": 209, "DELETE_ACL_CONFIG_FAILED": 210,
    "UPDATE_GLOBAL_WHITE_ADDRS_CONFIG_FAILED": 211, "FLOW_CONTROL": 215,
}
