"""AclException: why a request was refused or an ACL file could not be used."""

from __future__ import annotations

__all__ = ["AclException", "JAVA_NAME"]

#: Java class name; a refusal's remark starts with it as RocketMQ's exceptionSimpleDesc writes it.
JAVA_NAME = "org.apache.rocketmq.acl.common.AclException"


class AclException(Exception):
    """A refusal (answered SYSTEM_ERROR with ``remark``) or an invalid ACL configuration."""

    @property
    def remark(self) -> str:
        return f"{JAVA_NAME}: {self}"
