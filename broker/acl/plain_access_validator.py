"""PlainAccessValidator: which resources a request needs (acl.md §4) and the broker's RPC hook.

:class:`AclRpcHook` runs before any processor (``Endpoint.add_rpc_hook``); a refused request is
answered SYSTEM_ERROR with RocketMQ's ``AclException: <reason>`` remark and never reaches a processor
or the store.
"""

from __future__ import annotations

import logging
from typing import Any, Protocol

from broker.acl.acl_exception import AclException
from broker.acl.permission import PUB, SUB
from broker.acl.plain_permission_manager import AccessRequest
from common.acl_signer import ACCESS_KEY, SIGNATURE
from common.mixall import RETRY_GROUP_TOPIC_PREFIX
from remoting.body.heartbeat import HeartbeatData
from remoting.codes import RequestCode, ResponseCode
from remoting.command import RemotingCommand
from remoting.connection import Connection

__all__ = ["PlainAccessValidator", "AclRpcHook", "Validator"]

log = logging.getLogger("broker.acl")

_SYSTEM_ERROR = int(ResponseCode.SYSTEM_ERROR)


class Validator(Protocol):
    def validate(self, req: AccessRequest) -> None: ...

    def validate_granted(self, remote_addr: str, ext: dict, body: Any, grant: tuple) -> bool: ...


def _retry(group: str | None) -> str | None:
    return None if group is None else RETRY_GROUP_TOPIC_PREFIX + group


def _needs_send(ext: dict, topic_key: str, group_key: str) -> dict[str, int] | None:
    topic = ext.get(topic_key)
    if topic is None:
        return None
    if topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
        r = _retry(ext.get(group_key))
        return None if r is None else {r: SUB}
    return {topic: PUB}


def _needs_heartbeat(body: Any) -> dict[str, int]:
    data = HeartbeatData.from_json(body)
    out: dict[str, int] = {}
    for c in data.consumerDataSet:
        out[RETRY_GROUP_TOPIC_PREFIX + c.groupName] = SUB
        for s in c.subscriptionDataSet:
            out[s.topic] = SUB
    return out


def _add(out: dict[str, int], resource: str | None, perm: int) -> None:
    if resource is not None:
        out[resource] = perm


def needed_resources(code: int, ext: dict, body: Any) -> dict[str, int] | None:
    """{resource: perm} a request needs, per 4.9.7's PlainAccessValidator.parse (None: no resource)."""
    if code == _SEND_V2:
        return _needs_send(ext, "b", "a")
    if code == _SEND:
        return _needs_send(ext, "topic", "group")
    out: dict[str, int] = {}
    if code == _PULL:
        _add(out, ext.get("topic"), SUB)
        _add(out, _retry(ext.get("consumerGroup")), SUB)
    elif code == _SEND_BACK:
        _add(out, _retry(ext.get("group")), SUB)
    elif code == _QUERY:
        _add(out, ext.get("topic"), SUB)
    elif code == _HEART_BEAT:
        return _needs_heartbeat(body)
    elif code in (_UNREGISTER, _CONSUMER_LIST):
        _add(out, _retry(ext.get("consumerGroup")), SUB)
    elif code == _UPDATE_OFFSET:
        _add(out, _retry(ext.get("consumerGroup")), SUB)
        _add(out, ext.get("topic"), SUB)
    return out or None


_SEND = int(RequestCode.SEND_MESSAGE)
_SEND_V2 = int(RequestCode.SEND_MESSAGE_V2)
_PULL = int(RequestCode.PULL_MESSAGE)
_SEND_BACK = int(RequestCode.CONSUMER_SEND_MSG_BACK)
_QUERY = int(RequestCode.QUERY_MESSAGE)
_HEART_BEAT = int(RequestCode.HEART_BEAT)
_UNREGISTER = int(RequestCode.UNREGISTER_CLIENT)
_CONSUMER_LIST = int(RequestCode.GET_CONSUMER_LIST_BY_GROUP)
_UPDATE_OFFSET = int(RequestCode.UPDATE_CONSUMER_OFFSET)

#: The hot codes: the header fields their resources come from (see needed_resources). Their
#: permission decision is remembered per (access key, code, these fields' values).
_GRANT_FIELDS = {
    _SEND_V2: ("b", "a"),
    _SEND: ("topic", "group"),
    _PULL: ("topic", "consumerGroup"),
}


class PlainAccessValidator:
    """Parses a request into an :class:`AccessRequest` and asks the permission manager."""

    def __init__(self, manager: Validator):
        self.manager = manager

    def parse(self, req: RemotingCommand, remote_addr: str) -> AccessRequest:
        ip = remote_addr.rpartition(":")[0] if ":" in remote_addr else remote_addr
        ext = req.ext_fields
        if ext is None:  # only a white-listed address can pass
            return AccessRequest(ip, req.code, None, None, None, None, None)
        try:
            needs = needed_resources(req.code, ext, req.body)
        except Exception as e:  # a body that does not parse is a refusal, as in RocketMQ
            raise AclException(str(e) or type(e).__name__) from e
        ak = ext.get(ACCESS_KEY)
        fields = _GRANT_FIELDS.get(req.code)
        grant = None if fields is None else (ak, req.code, ext.get(fields[0]), ext.get(fields[1]))
        return AccessRequest(ip, req.code, ak, ext.get(SIGNATURE), ext, req.body, needs, grant)

    def validate(self, req: RemotingCommand, remote_addr: str) -> None:
        if not self.validate_granted(req, remote_addr):
            self.manager.validate(self.parse(req, remote_addr))

    def validate_granted(self, req: RemotingCommand, remote_addr: str) -> bool:
        """True when a send or a pull may run by what the manager remembers (its signature checked);
        False: not decided here, :meth:`validate` decides (and gives the exact refusal)."""
        ext = req.ext_fields
        fields = _GRANT_FIELDS.get(req.code)
        if fields is None or type(ext) is not dict:
            return False
        grant = (ext.get(ACCESS_KEY), req.code, ext.get(fields[0]), ext.get(fields[1]))
        return self.manager.validate_granted(remote_addr, ext, req.body, grant)


class AclRpcHook:
    """Server-side RPC hook: refuses what the validator refuses (see the module docstring)."""

    def __init__(self, validator: PlainAccessValidator):
        self.validator = validator
        self._granted = validator.manager.validate_granted

    def do_before_request(self, conn: Connection, request: RemotingCommand) -> RemotingCommand | None:
        # PlainAccessValidator.validate_granted inlined: one call less on every send and pull
        ext = request.ext_fields
        fields = _GRANT_FIELDS.get(request.code)
        if fields is not None and type(ext) is dict and self._granted(
                conn.remote_addr, ext, request.body,
                (ext.get(ACCESS_KEY), request.code, ext.get(fields[0]), ext.get(fields[1]))):
            return None
        try:
            self.validator.validate(request, conn.remote_addr)
        except AclException as e:
            log.warning("ACL refused code %s from %s: %s", request.code, conn.remote_addr, e)
            return RemotingCommand.response(_SYSTEM_ERROR, e.remark)
        return None

    def do_after_response(self, conn: Connection, request: RemotingCommand | None, response: RemotingCommand) -> None:
        return None
