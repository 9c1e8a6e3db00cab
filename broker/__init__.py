"""rocketmq-py broker: ``bin/mqbroker`` (``python -m broker``).

How the parts fit (composed by :class:`broker.broker_controller.BrokerController`):

* configs: :mod:`broker.config` (BrokerConfig, NettyServerConfig, NettyClientConfig) plus the store's
  MessageStoreConfig, all filled from one ``-c`` properties file (:mod:`broker.broker_startup`); the live role in one
  :class:`~broker.role_state.RoleState`;
* metadata managers persisted under ``<storePathRootDir>/config/`` in fastjson's pretty format
  (:mod:`broker.config_manager`): :mod:`~broker.topic_config_manager` (topics.json),
  :mod:`~broker.subscription_group_manager` (subscriptionGroup.json),
  :mod:`~broker.consumer_offset_manager` (consumerOffset.json);
* client registries fed by heartbeats: :mod:`~broker.consumer_manager`, :mod:`~broker.producer_manager`;
* request processors in :mod:`broker.processor` (made and routed by :mod:`broker.broker_processors`: send, pull with long polling
  (:mod:`~broker.pull_request_hold_service`), offsets, admin, queries), each given only its collaborators;
* NameServer registration (:mod:`~broker.broker_outer_api`), slave metadata sync
  (:mod:`~broker.slave_synchronize`) and CommitLog replication (:mod:`~broker.ha_service`);
* filtering in :mod:`broker.filter`; retry/DLQ, delay levels, transactions and orderly locks are built
  by :mod:`broker.semantics`.
"""
