"""mqadmin ACL 1.0 commands (updateAclConfig, deleteAclConfig, updateGlobalWhiteAddr,
clusterAclConfigVersion, getAclConfig) and the tool's own credentials.

Credentials, as the Java tool: ``$ROCKETMQ_HOME/conf/tools.yml`` (``accessKey``/``secretKey``) signs
every request when present; ``--accessKey/--secretKey`` on the command line take precedence (the
short ``-a``/``-s`` letters already name the account being configured by updateAclConfig).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os

import yaml

from client.acl import SessionCredentials
from client.admin import MQAdmin
from client.mq_client_api import check, request
from remoting import RequestCode
from tools.mqadmin_command import UsageError, _bool, _target_addrs, command

__all__ = ["credentials_from", "add_global_options"]

TOOLS_FILE = os.path.join("conf", "tools.yml")


def add_global_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--accessKey", dest="aclAccessKey", help="sign requests with this ACL access key")
    p.add_argument("--secretKey", dest="aclSecretKey", help="ACL secret key for --accessKey")
    p.add_argument("--useTLS", dest="useTLS", action="store_true", help="connect with TLS")


def credentials_from(args: argparse.Namespace) -> SessionCredentials | None:
    """``--accessKey/--secretKey``, else ``$ROCKETMQ_HOME/conf/tools.yml``, else None (unsigned)."""
    ak, sk = getattr(args, "aclAccessKey", None), getattr(args, "aclSecretKey", None)
    if ak or sk:
        if not (ak and sk):
            raise UsageError("--accessKey and --secretKey go together")
        return SessionCredentials(ak, sk)
    home = os.environ.get("ROCKETMQ_HOME")
    if not home:
        return None
    path = os.path.join(home, TOOLS_FILE)
    try:
        with open(path, encoding="utf-8") as f:
            data = yaml.safe_load(f)
    except FileNotFoundError:
        return None
    except (OSError, yaml.YAMLError) as e:
        raise UsageError(f"cannot read {path}: {e}") from None
    if not isinstance(data, dict) or not data.get("accessKey") or not data.get("secretKey"):
        return None
    return SessionCredentials(str(data["accessKey"]), str(data["secretKey"]))


async def _invoke(admin: MQAdmin, addr: str, code: int, header=None):
    return check(await admin.api.invoke(addr, request(code, header), admin.timeout), addr)


def _targets(p: argparse.ArgumentParser) -> None:
    p.add_argument("-b", dest="brokerAddr", help="update which broker")
    p.add_argument("-c", dest="clusterName", help="update which cluster")


def _setup_update(p):
    _targets(p)
    p.add_argument("-a", dest="accessKey", required=True, help="set accessKey in acl config file")
    p.add_argument("-s", dest="secretKey", required=True, help="set secretKey in acl config file")
    p.add_argument("-w", dest="whiteRemoteAddress", help="set white ip Address for account in acl config file")
    p.add_argument("-i", dest="defaultTopicPerm", help="set default topicPerm in acl config file")
    p.add_argument("-u", dest="defaultGroupPerm", help="set default GroupPerm in acl config file")
    p.add_argument("-t", dest="topicPerms", help="set topicPerms list, eg: topicA=DENY,topicD=SUB")
    p.add_argument("-g", dest="groupPerms", help="set groupPerms list, eg: groupD=DENY,groupD=SUB")
    p.add_argument("-m", dest="admin", type=_bool, default=False, help="set admin flag in acl config file")


@command("updateAclConfig", "Update acl config yaml file in broker", _setup_update)
async def update_acl_config(admin: MQAdmin, args) -> None:
    if len(args.accessKey) <= 6 or len(args.secretKey) <= 6:
        raise UsageError("accessKey and secretKey must be longer than 6 characters")
    header = {
        "accessKey": args.accessKey, "secretKey": args.secretKey, "admin": args.admin,
        "whiteRemoteAddress": args.whiteRemoteAddress, "defaultTopicPerm": args.defaultTopicPerm,
        "defaultGroupPerm": args.defaultGroupPerm, "topicPerms": args.topicPerms, "groupPerms": args.groupPerms,
    }
    for addr in await _target_addrs(admin, args):
        await _invoke(admin, addr, RequestCode.UPDATE_AND_CREATE_ACL_CONFIG, header)
        print(f"create or update plain access config to {addr} success.")


def _setup_delete(p):
    _targets(p)
    p.add_argument("-a", dest="accessKey", required=True, help="set accessKey in acl config file")


@command("deleteAclConfig", "Delete Acl Config Account in broker", _setup_delete)
async def delete_acl_config(admin: MQAdmin, args) -> None:
    for addr in await _target_addrs(admin, args):
        await _invoke(admin, addr, RequestCode.DELETE_ACL_CONFIG, {"accessKey": args.accessKey})
        print(f"delete plain access config account from {addr} success.")


def _setup_white(p):
    _targets(p)
    p.add_argument("-g", dest="globalWhiteRemoteAddresses", required=True,
                   help="set globalWhiteRemoteAddress list,eg: 10.10.103.*,192.168.0.*")
    p.add_argument("-p", dest="aclFileFullPath", default="", help="the ACL file to change (default: the main file)")


@command("updateGlobalWhiteAddr", "Update global white address for acl Config File in broker", _setup_white)
async def update_global_white_addr(admin: MQAdmin, args) -> None:
    header = {"globalWhiteAddrs": args.globalWhiteRemoteAddresses, "aclFileFullPath": args.aclFileFullPath}
    for addr in await _target_addrs(admin, args):
        await _invoke(admin, addr, RequestCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG, header)
        print(f"update global white remote addresses to {addr} success.")


def _fmt_ms(ms: int) -> str:
    return datetime.datetime.fromtimestamp(ms / 1000).strftime("%Y-%m-%d %H:%M:%S") if ms > 0 else "-"


@command("clusterAclConfigVersion", "List all of acl config version information in cluster", _targets)
async def cluster_acl_config_version(admin: MQAdmin, args) -> None:
    print(f"{'#Cluster Name':<20s}  {'#Broker Name':<20s}  {'#Broker Addr':<22s}  {'#AclFilePath':<50s}  "
          f"{'#AclConfigVersionNum':<20s}  #AclLastUpdateTime")
    for addr in await _target_addrs(admin, args):
        h = (await _invoke(admin, addr, RequestCode.GET_BROKER_CLUSTER_ACL_INFO)).ext_fields or {}
        versions = json.loads(h.get("allAclFileVersion") or "{}") or {"": json.loads(h.get("version") or "{}")}
        for path, v in versions.items():
            print(f"{h.get('clusterName', ''):<20s}  {h.get('brokerName', ''):<20s}  {h.get('brokerAddr', addr):<22s}  "
                  f"{path:<50s}  {v.get('counter', 0):<20d}  {_fmt_ms(int(v.get('timestamp', 0)))}")


@command("getAclConfig", "List all of acl config information in cluster", _targets)
async def get_acl_config(admin: MQAdmin, args) -> None:
    for addr in await _target_addrs(admin, args):
        body = (await _invoke(admin, addr, RequestCode.GET_BROKER_CLUSTER_ACL_CONFIG)).body or b"{}"
        conf = json.loads(body)
        print(f"\n{addr}")
        print(f"{'globalWhiteRemoteAddresses:':<30s}{conf.get('globalWhiteAddrs')}")
        for a in conf.get("plainAccessConfigs") or ():
            print("accounts:")
            for key in ("accessKey", "secretKey", "whiteRemoteAddress", "admin", "defaultTopicPerm",
                        "defaultGroupPerm", "topicPerms", "groupPerms"):
                print(f"    {key + ':':<26s}{a.get(key)}")
