"""Client credentials and request signing for ACL 1.0 brokers (Java SessionCredentials, AclClientRPCHook).

``ClientConfig(credentials=SessionCredentials("ak", "sk"))`` makes every request of that client
carry ``AccessKey`` and a ``Signature`` (see common.acl_signer), as the Java client's hook does.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from common.acl_signer import sign_fields
from common.config import load_properties_file
from remoting.command import RemotingCommand

__all__ = ["SessionCredentials", "AclClientRPCHook", "ClientRPCHook"]


@dataclass(frozen=True, slots=True)
class SessionCredentials:
    """Access key, secret key and optional security token (not checked by the plain validator)."""

    access_key: str
    secret_key: str
    security_token: str | None = None

    def __repr__(self) -> str:  # never print the secret
        return f"SessionCredentials(access_key={self.access_key!r}, secret_key='***')"

    @classmethod
    def from_key_file(cls, path: str | None = None) -> SessionCredentials | None:
        """Java's default file: ``$HOME/key`` (or ``rocketmq.client.keyFile``) with AccessKey/SecretKey."""
        path = path or os.environ.get("rocketmq.client.keyFile") or os.path.join(os.path.expanduser("~"), "key")
        try:
            props = load_properties_file(path)
        except OSError:
            return None
        ak, sk = props.get("AccessKey"), props.get("SecretKey")
        if not ak or not sk:
            return None
        return cls(ak.strip(), sk.strip(), (props.get("SecurityToken") or "").strip() or None)


class ClientRPCHook:
    """Runs on every request a client sends, before it is encoded (Java RPCHook.doBeforeRequest)."""

    def do_before_request(self, addr: str, request: RemotingCommand) -> None: ...


class AclClientRPCHook(ClientRPCHook):
    """Signs each request with the credentials (adds AccessKey, SecurityToken and Signature extFields)."""

    __slots__ = ("credentials",)

    def __init__(self, credentials: SessionCredentials):
        self.credentials = credentials

    def do_before_request(self, addr: str, request: RemotingCommand) -> None:
        if request.ext_fields is None:
            request.ext_fields = {}
        c = self.credentials
        sign_fields(request.ext_fields, request.body, c.access_key, c.secret_key, c.security_token)
