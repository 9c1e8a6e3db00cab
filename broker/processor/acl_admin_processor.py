"""ACL 1.0 management requests on a broker without ACL: UPDATE_AND_CREATE_ACL_CONFIG (50), DELETE_ACL_CONFIG (51),
GET_BROKER_CLUSTER_ACL_INFO (52), UPDATE_GLOBAL_WHITE_ADDRS_CONFIG (53), GET_BROKER_CLUSTER_ACL_CONFIG (54).

This broker has no access validator (acl.md is not built), which is the state of a
RocketMQ 4.9.7 broker with ``aclEnable=false``. There the request header is decoded
first (a missing ``@CFNotNull`` field answers SYSTEM_ERROR), then the missing
validator fails the request:

* 50/51/53 answer their own failure codes 209/210/211 (4.9.7: remark null; 5.x up to
  5.3.2: "The broker does not enable acl.", which we send as the remark);
* 52/54: 4.9.7 swallows the error and sends no answer at all, so the caller waits for
  its timeout; we answer SYSTEM_ERROR "The broker does not enable acl." at once, as
  5.0-5.3.2 brokers do.
"""

from __future__ import annotations

from typing import Any

from broker.config import BrokerConfig
from remoting.codes import ResponseCode
from remoting.command import RemotingCommand
from remoting.header.admin_extra import (
    CreateAccessConfigRequestHeader,
    DeleteAccessConfigRequestHeader,
    UpdateGlobalWhiteAddrsConfigRequestHeader,
)

__all__ = ["AclAdminProcessor", "ACL_NOT_ENABLED"]

ACL_NOT_ENABLED = "The broker does not enable acl."
_ACL_NOT_BUILT = "The broker does not support acl: aclEnable is set but no access validator is available."


class AclAdminProcessor:
    """Answers the ACL admin codes of a broker that has no access validator."""

    def __init__(self, broker_config: BrokerConfig):
        self.broker_config = broker_config

    def _reason(self) -> str:
        return _ACL_NOT_BUILT if self.broker_config.aclEnable else ACL_NOT_ENABLED

    def update_and_create_acl_config(self, req: RemotingCommand, conn: Any) -> RemotingCommand:
        """UPDATE_AND_CREATE_ACL_CONFIG (50): UPDATE_AND_CREATE_ACL_CONFIG_FAILED (209); nothing is written."""
        req.decode_header(CreateAccessConfigRequestHeader)
        return req.response_to(ResponseCode.UPDATE_AND_CREATE_ACL_CONFIG_FAILED, self._reason())

    def delete_acl_config(self, req: RemotingCommand, conn: Any) -> RemotingCommand:
        """DELETE_ACL_CONFIG (51): DELETE_ACL_CONFIG_FAILED (210)."""
        req.decode_header(DeleteAccessConfigRequestHeader)
        return req.response_to(ResponseCode.DELETE_ACL_CONFIG_FAILED, self._reason())

    def update_global_white_addrs_config(self, req: RemotingCommand, conn: Any) -> RemotingCommand:
        """UPDATE_GLOBAL_WHITE_ADDRS_CONFIG (53): UPDATE_GLOBAL_WHITE_ADDRS_CONFIG_FAILED (211)."""
        req.decode_header(UpdateGlobalWhiteAddrsConfigRequestHeader)
        return req.response_to(ResponseCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG_FAILED, self._reason())

    def get_broker_cluster_acl_info(self, req: RemotingCommand, conn: Any) -> RemotingCommand:
        """GET_BROKER_CLUSTER_ACL_INFO (52): SYSTEM_ERROR (no ACL versions to report)."""
        return req.response_to(ResponseCode.SYSTEM_ERROR, self._reason())

    def get_broker_cluster_acl_config(self, req: RemotingCommand, conn: Any) -> RemotingCommand:
        """GET_BROKER_CLUSTER_ACL_CONFIG (54): SYSTEM_ERROR (no accounts to report)."""
        return req.response_to(ResponseCode.SYSTEM_ERROR, self._reason())
