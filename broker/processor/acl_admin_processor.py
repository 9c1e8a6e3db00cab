"""ACL 1.0 management requests: UPDATE_AND_CREATE_ACL_CONFIG (50), DELETE_ACL_CONFIG (51),
GET_BROKER_CLUSTER_ACL_INFO (52), UPDATE_GLOBAL_WHITE_ADDRS_CONFIG (53), GET_BROKER_CLUSTER_ACL_CONFIG (54).

With ``aclEnable=true`` they edit and report the PlainPermissionManager's files (acl.md §7), with
4.9.7's codes and remarks. Without ACL the header is decoded first (a missing ``@CFNotNull`` field
answers SYSTEM_ERROR), then:

* 50/51/53 answer their own failure codes 209/210/211 (4.9.7: remark null; 5.x up to
  5.3.2: "The broker does not enable acl.", which we send as the remark);
* 52/54: 4.9.7 swallows the error and sends no answer at all, so the caller waits for
  its timeout; we answer SYSTEM_ERROR "The broker does not enable acl." at once, as
  5.0-5.3.2 brokers do.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any, Protocol

from broker.config import BrokerConfig
from remoting.codes import ResponseCode
from remoting.command import RemotingCommand
from remoting.connection import Connection
from remoting.header.admin_extra import (
    CreateAccessConfigRequestHeader,
    DeleteAccessConfigRequestHeader,
    GetBrokerAclConfigResponseHeader,
    UpdateGlobalWhiteAddrsConfigRequestHeader,
)

__all__ = ["AclAdminProcessor", "ACL_NOT_ENABLED", "AclConfigStore"]

log = logging.getLogger("broker.acl")

ACL_NOT_ENABLED = "The broker does not enable acl."


class AclConfigStore(Protocol):
    """What the processor needs from broker.acl.plain_permission_manager.PlainPermissionManager."""

    def update_account(self, conf: dict) -> None: ...

    def delete_account(self, access_key: str) -> bool: ...

    def update_global_white_addrs(self, addrs: list[str], file_name: str | None) -> bool: ...

    def data_version(self, path: str | None = None) -> dict[str, int]: ...

    def all_data_versions(self) -> dict[str, dict[str, int]]: ...

    def all_acl_config(self) -> dict: ...


def _split(text: str | None) -> list[str] | None:
    """UtilAll.split: None stays None, blank is empty, else the trimmed non-empty items."""
    if text is None:
        return None
    return [p.strip() for p in text.split(",") if p.strip()]


def _has_line_break(*values: Any) -> bool:
    return any(isinstance(v, str) and ("\n" in v or "\r" in v) for v in values)


def _change(req: RemotingCommand, failed: int, apply: Callable[[], bool], refused: str) -> RemotingCommand | None:
    """Apply an ACL file change: None when it went in; else the ``failed`` answer with the error's
    text, or with ``refused`` when the store said no (4.9.7's remarks)."""
    try:
        ok = apply()
    except Exception as e:  # AclException or an I/O error: the file is unchanged
        return req.response_to(failed, str(e))
    if not ok:
        return req.response_to(failed, refused)
    return None


class AclAdminProcessor:
    """See the module docstring; ``acl`` is None when the broker runs without ACL."""

    def __init__(self, broker_config: BrokerConfig, acl: AclConfigStore | None = None, broker_addr: str = ""):
        self.broker_config = broker_config
        self.acl = acl
        self.broker_addr = broker_addr

    def update_and_create_acl_config(self, req: RemotingCommand, conn: Connection) -> RemotingCommand:
        h = req.decode_header(CreateAccessConfigRequestHeader)
        failed = ResponseCode.UPDATE_AND_CREATE_ACL_CONFIG_FAILED
        if self.acl is None:
            return req.response_to(failed, ACL_NOT_ENABLED)
        conf = {
            "accessKey": h.accessKey,
            "secretKey": h.secretKey,
            "whiteRemoteAddress": h.whiteRemoteAddress,
            "admin": h.admin,
            "defaultTopicPerm": h.defaultTopicPerm,
            "defaultGroupPerm": h.defaultGroupPerm,
            "topicPerms": _split(h.topicPerms),
            "groupPerms": _split(h.groupPerms),
        }
        if _has_line_break(*conf.values(), h.topicPerms, h.groupPerms):
            return req.response_to(failed, "ACL values must not contain line breaks")
        try:
            self.acl.update_account(conf)
        except Exception as e:  # AclException or an I/O error: the file is unchanged
            log.warning("updateAclConfig %s from %s failed: %s", h.accessKey, conn.remote_addr, e)
            return req.response_to(failed, str(e))
        log.info("ACL account %s updated by %s", h.accessKey, conn.remote_addr)
        return req.response_to(ResponseCode.SUCCESS)

    def delete_acl_config(self, req: RemotingCommand, conn: Connection) -> RemotingCommand:
        h = req.decode_header(DeleteAccessConfigRequestHeader)
        failed = ResponseCode.DELETE_ACL_CONFIG_FAILED
        if self.acl is None:
            return req.response_to(failed, ACL_NOT_ENABLED)
        acl = self.acl
        err = _change(req, failed, lambda: acl.delete_account(h.accessKey),
                      f"The accessKey[{h.accessKey}] corresponding to accessConfig has been deleted failed.")
        if err is not None:
            return err
        log.info("ACL account %s deleted by %s", h.accessKey, conn.remote_addr)
        return req.response_to(ResponseCode.SUCCESS)

    def update_global_white_addrs_config(self, req: RemotingCommand, conn: Connection) -> RemotingCommand:
        h = req.decode_header(UpdateGlobalWhiteAddrsConfigRequestHeader)
        failed = ResponseCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG_FAILED
        if self.acl is None:
            return req.response_to(failed, ACL_NOT_ENABLED)
        if _has_line_break(h.globalWhiteAddrs, h.aclFileFullPath):
            return req.response_to(failed, "ACL values must not contain line breaks")
        acl = self.acl
        err = _change(req, failed,
                      lambda: acl.update_global_white_addrs(_split(h.globalWhiteAddrs) or [], h.aclFileFullPath or None),
                      f"The globalWhiteAddresses[{h.globalWhiteAddrs}] has been updated failed.")
        return err if err is not None else req.response_to(ResponseCode.SUCCESS)

    def get_broker_cluster_acl_info(self, req: RemotingCommand, conn: Connection) -> RemotingCommand:
        if self.acl is None:
            return req.response_to(ResponseCode.SYSTEM_ERROR, ACL_NOT_ENABLED)
        bc = self.broker_config
        header = GetBrokerAclConfigResponseHeader(
            version=json.dumps(self.acl.data_version(), separators=(",", ":")),
            brokerName=bc.brokerName,
            brokerAddr=self.broker_addr,
            clusterName=bc.brokerClusterName,
            allAclFileVersion=json.dumps(self.acl.all_data_versions(), separators=(",", ":")),
        )
        return req.response_to(ResponseCode.SUCCESS, header=header)

    def get_broker_cluster_acl_config(self, req: RemotingCommand, conn: Connection) -> RemotingCommand:
        if self.acl is None:
            return req.response_to(ResponseCode.SYSTEM_ERROR, ACL_NOT_ENABLED)
        body = json.dumps(self.acl.all_acl_config(), separators=(",", ":"), ensure_ascii=False).encode("utf-8")
        return req.response_to(ResponseCode.SUCCESS, body=body)
