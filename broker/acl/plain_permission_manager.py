"""PlainPermissionManager: the accounts of plain_acl.yml (+ conf/acl/*.yml), validation and remote edits.

Files (acl.md §1): ``<home>/conf/plain_acl.yml`` (relative path overridable) plus every ``*.yml`` /
``*.yaml`` under ``<home>/conf/acl/`` except ``tools.yml``. Each file is parsed on its own and kept
with the fingerprint it was read at: :meth:`reload_changed` re-reads only changed files, and a file
that fails to parse keeps its last good content (the failure is logged). Remote edits (request
codes 50/51/53) rewrite one file atomically with its ``dataVersion`` bumped, then reload it.
"""

from __future__ import annotations

import logging
import os
import tempfile
from dataclasses import dataclass, field
from typing import Any

import yaml

from broker.acl.acl_exception import AclException
from broker.acl.permission import (
    PUB,
    check_permission,
    need_admin_perm,
    parse_perm,
    parse_resource_perms,
)
from broker.acl.remote_address_strategy import RemoteAddressStrategy, get_remote_address_strategy
from common.acl_signer import SIGNATURE, SKIP_BROKER, keyed_states, verify_keyed, verify_signature
from common.mixall import RETRY_GROUP_TOPIC_PREFIX, RMQ_SYS_TRACE_TOPIC
from common.util import now_ms

__all__ = ["PlainPermissionManager", "PlainAccount", "AccessRequest", "acl_home", "DEFAULT_ACL_FILE"]

log = logging.getLogger("broker.acl")

DEFAULT_ACL_FILE = os.path.join("conf", "plain_acl.yml")
ACL_DIR = os.path.join("conf", "acl")
KEY_MIN_LENGTH = 6  # keys must be longer than this
_MAX_GRANTS = 65536
_MAX_WHITE_ADDRS = 4096


def acl_home(rocketmq_home: str) -> str:
    """ROCKETMQ_HOME from the environment, else the broker's ``rocketmqHome``."""
    return os.environ.get("ROCKETMQ_HOME") or rocketmq_home or os.getcwd()


@dataclass(slots=True)
class PlainAccount:
    """One account as loaded (RocketMQ's owned PlainAccessResource)."""

    access_key: str
    secret_key: str
    white: RemoteAddressStrategy
    admin: bool
    default_topic_perm: int
    default_group_perm: int
    perms: dict[str, int]


@dataclass(slots=True)
class AccessRequest:
    """What one request asks for (RocketMQ's parsed PlainAccessResource)."""

    remote_ip: str
    code: int
    access_key: str | None
    signature: str | None
    ext_fields: dict | None
    body: Any
    needs: dict[str, int] | None
    #: what the permission decision depends on (account, code, resource fields) when it may be
    #: remembered: see :meth:`PlainPermissionManager.validate_granted`
    grant: tuple | None = None


@dataclass(slots=True)
class _FileAcl:
    fingerprint: tuple[int, int]
    white: list[RemoteAddressStrategy] = field(default_factory=list)
    accounts: list[PlainAccount] = field(default_factory=list)
    version: dict[str, int] = field(default_factory=lambda: {"timestamp": now_ms(), "counter": 0})


def _fingerprint(path: str) -> tuple[int, int]:
    st = os.stat(path)
    return st.st_mtime_ns, st.st_size


def _check_keys(ak: Any, sk: Any) -> None:
    if ak is None or sk is None or len(str(ak)) <= KEY_MIN_LENGTH or len(str(sk)) <= KEY_MIN_LENGTH:
        raise AclException(
            f"The accessKey={ak} and secretKey={sk} cannot be null and length should longer than 6"
        )


def build_account(conf: dict) -> PlainAccount:
    """An account from its YAML mapping; AclException when a key, pattern or permission is invalid."""
    if not isinstance(conf, dict):
        raise AclException(f"an account must be a mapping, not {type(conf).__name__}")
    ak, sk = conf.get("accessKey"), conf.get("secretKey")
    _check_keys(ak, sk)
    perms = parse_resource_perms(_as_list(conf.get("topicPerms")), True)
    perms.update(parse_resource_perms(_as_list(conf.get("groupPerms")), False))
    admin = conf.get("admin")
    return PlainAccount(
        access_key=str(ak),
        secret_key=str(sk),
        white=get_remote_address_strategy(conf.get("whiteRemoteAddress")),
        admin=admin is True or str(admin).lower() == "true",
        default_topic_perm=parse_perm(conf.get("defaultTopicPerm")),
        default_group_perm=parse_perm(conf.get("defaultGroupPerm")),
        perms=perms,
    )


def _as_list(v: Any) -> list | None:
    if v is None:
        return None
    if not isinstance(v, list):
        raise AclException(f"expected a list, got {v!r}")
    return v


def _print_resource(resource: str) -> str:
    if resource.startswith(RETRY_GROUP_TOPIC_PREFIX):
        return f"group:{resource[len(RETRY_GROUP_TOPIC_PREFIX):]}"
    return f"topic:{resource}"


class PlainPermissionManager:
    """See the module docstring. ``home`` is the RocketMQ home the ``conf`` paths are under."""

    def __init__(self, home: str, acl_file: str | None = None):
        self.home = os.path.abspath(home)
        rel = acl_file or os.environ.get("rocketmq.acl.plain.file") or DEFAULT_ACL_FILE
        self.default_file = os.path.normpath(os.path.join(self.home, rel))
        self.acl_dir = os.path.join(self.home, ACL_DIR)
        self._files: dict[str, _FileAcl] = {}
        self._global_white: list[RemoteAddressStrategy] = []
        self._accounts: dict[str, PlainAccount] = {}
        self._account_file: dict[str, str] = {}
        # Decisions remembered for the hot requests (sends, pulls), dropped whenever the accounts or
        # white lists change (_rebuild): remote address -> globally white-listed, and the grant keys
        # whose permission check passed -> the account's keyed HMAC states (the signature is still
        # checked on every request). Both bounded: addresses and resource names come from outside.
        self._white_addrs: dict[str, bool] = {}
        self._granted: dict[tuple, tuple | bytes] = {}

    # -- loading -------------------------------------------------------------------------------

    def file_list(self) -> list[str]:
        """The ACL files in load order: conf/acl/** first (sorted), then the main file (as RocketMQ)."""
        found: list[str] = []
        if os.path.isdir(self.acl_dir):
            for root, _dirs, names in os.walk(self.acl_dir):
                for n in names:
                    if (n.endswith(".yml") or n.endswith(".yaml")) and n != "tools.yml":
                        found.append(os.path.join(root, n))
        found.sort()
        if os.path.isfile(self.default_file) and self.default_file not in found:
            found.append(self.default_file)
        return found

    @staticmethod
    def _parse_file(path: str) -> _FileAcl:
        fp = _fingerprint(path)
        with open(path, encoding="utf-8") as f:
            try:
                data = yaml.safe_load(f)
            except yaml.YAMLError as e:
                raise AclException(f"{path} is not valid YAML: {e}") from None
        out = _FileAcl(fp)
        if data is None:
            return out
        if not isinstance(data, dict):
            raise AclException(f"{path}: the top level must be a mapping")
        for pattern in _as_list(data.get("globalWhiteRemoteAddresses")) or ():
            out.white.append(get_remote_address_strategy(None if pattern is None else str(pattern)))
        seen: set[str] = set()
        for conf in _as_list(data.get("accounts")) or ():
            acct = build_account(conf)
            if acct.access_key not in seen:
                seen.add(acct.access_key)
                out.accounts.append(acct)
        dv = _as_list(data.get("dataVersion"))
        if dv and isinstance(dv[0], dict):
            try:
                out.version = {"timestamp": int(dv[0].get("timestamp", 0)), "counter": int(dv[0].get("counter", 0))}
            except (TypeError, ValueError):
                raise AclException(f"{path}: bad dataVersion {dv[0]!r}") from None
        return out

    def load(self) -> None:
        """Read every file; AclException when one cannot be used (nothing is changed then)."""
        files = {}
        for path in self.file_list():
            try:
                files[path] = self._parse_file(path)
            except AclException as e:
                raise AclException(f"{path}: {e}") from None
            except OSError as e:
                raise AclException(f"cannot read {path}: {e}") from None
        self._files = files
        self._rebuild()

    def reload_changed(self) -> bool:
        """Re-read added/changed files, drop removed ones; True when something was reloaded.

        A file that fails keeps its last good content and the failure is logged.
        """
        current = self.file_list()
        changed = False
        files = dict(self._files)
        for path in list(files):
            if path not in current:
                del files[path]
                changed = True
                log.info("ACL file %s removed: its accounts are gone", path)
        for path in current:
            try:
                fp = _fingerprint(path)
            except OSError:
                continue
            old = files.get(path)
            if old is not None and old.fingerprint == fp:
                continue
            try:
                files[path] = self._parse_file(path)
                changed = True
                log.info("ACL file %s (re)loaded", path)
            except (AclException, OSError) as e:
                if old is not None:
                    old.fingerprint = fp  # do not retry the same bad content every period
                log.error("ACL file %s not loaded, keeping its last good content: %s", path, e)
        if changed:
            self._files = files
            self._rebuild()
        return changed

    def _rebuild(self) -> None:
        white: list[RemoteAddressStrategy] = []
        accounts: dict[str, PlainAccount] = {}
        where: dict[str, str] = {}
        for path in self.file_list_loaded():
            acl = self._files[path]
            white.extend(acl.white)
            for a in acl.accounts:
                if a.access_key not in accounts:  # the first file loaded wins
                    accounts[a.access_key] = a
                    where[a.access_key] = path
        self._global_white, self._accounts, self._account_file = white, accounts, where
        self._white_addrs = {}
        self._granted = {}

    def file_list_loaded(self) -> list[str]:
        order = self.file_list()
        return [p for p in order if p in self._files] + [p for p in self._files if p not in order]

    # -- validation ----------------------------------------------------------------------------

    def validate(self, req: AccessRequest) -> None:
        """Raise AclException unless ``req`` may run (acl.md §6)."""
        ip = req.remote_ip
        for match in self._global_white:
            if match(ip):
                return
        ak = req.access_key
        if ak is None:
            raise AclException("No accessKey is configured")
        owned = self._accounts.get(ak)
        if owned is None:
            raise AclException(f"No acl config for {ak}")
        if owned.white(ip):
            return
        if not verify_signature(req.ext_fields, req.body, owned.secret_key, req.signature, SKIP_BROKER):
            raise AclException(f"Check signature failed for accessKey={ak}")
        self._authorize(owned, req)
        grant = req.grant
        if grant is not None:
            if len(self._granted) >= _MAX_GRANTS:
                self._granted.clear()
            self._granted[grant] = keyed_states(owned.secret_key)

    def validate_granted(self, remote_addr: str, ext: dict, body: Any, grant: tuple) -> bool:
        """The hot path (sends, pulls): True when the request may run, decided with what is remembered.

        ``grant`` is (access key, request code, the values of the header fields its resources come
        from): the permission decision depends on nothing else, so once :meth:`validate` passed it, only
        the caller's address and the signature still need checking. False means "not decided here":
        run :meth:`validate`, which also gives the exact refusal.
        """
        white = self._white_addrs.get(remote_addr)
        if white is None:
            white = self._is_global_white(remote_addr)
        if white:
            return True
        keyed = self._granted.get(grant)
        return keyed is not None and verify_keyed(keyed, ext, body, ext.get(SIGNATURE))

    def _is_global_white(self, remote_addr: str) -> bool:
        ip = remote_addr.rpartition(":")[0] if ":" in remote_addr else remote_addr
        white = any(match(ip) for match in self._global_white)
        if len(self._white_addrs) >= _MAX_WHITE_ADDRS:
            self._white_addrs.clear()
        self._white_addrs[remote_addr] = white
        return white

    def _authorize(self, owned: PlainAccount, req: AccessRequest) -> None:
        ak = owned.access_key
        needs = req.needs
        if needs and needs.get(RMQ_SYS_TRACE_TOPIC) == PUB:
            return  # message trace data may always be written
        if need_admin_perm(req.code) and not owned.admin:
            raise AclException(f"Need admin permission for request code={req.code}, but accessKey={ak} is not")
        if not needs:
            return
        if not owned.perms and owned.admin:
            return
        for resource, needed in needs.items():
            has = owned.perms.get(resource)
            if has is None:
                is_group = resource.startswith(RETRY_GROUP_TOPIC_PREFIX)
                has = owned.default_group_perm if is_group else owned.default_topic_perm
            if not check_permission(needed, has):
                raise AclException(f"No default permission for {_print_resource(resource)}")

    # -- remote edits (request codes 50, 51, 53) -----------------------------------------------

    def update_account(self, conf: dict) -> None:
        """Create or replace an account (new accounts go to the main file); AclException when invalid."""
        _check_keys(conf.get("accessKey"), conf.get("secretKey"))
        ak = conf["accessKey"]
        path = self._account_file.get(ak, self.default_file)
        data = self._read_yaml(path)
        accounts = data.get("accounts")
        if not isinstance(accounts, list):
            accounts = []
        entry: dict[str, Any] = {}
        rest = []
        for a in accounts:
            if isinstance(a, dict) and a.get("accessKey") == ak and not entry:
                entry = dict(a)
            else:
                rest.append(a)
        entry["accessKey"] = ak
        for key in ("secretKey", "defaultTopicPerm", "defaultGroupPerm"):
            if conf.get(key):
                entry[key] = conf[key]
        if conf.get("whiteRemoteAddress") is not None:
            entry["whiteRemoteAddress"] = conf["whiteRemoteAddress"]
        entry["admin"] = bool(conf.get("admin"))
        for key in ("topicPerms", "groupPerms"):
            if conf.get(key) is not None:
                entry[key] = list(conf[key])
        build_account(entry)  # refuse what would not load before anything is written
        rest.append(entry)
        data["accounts"] = rest
        self._write(path, data)

    def delete_account(self, access_key: str) -> bool:
        path = self._account_file.get(access_key)
        if not access_key or path is None:
            return False
        data = self._read_yaml(path)
        accounts = data.get("accounts") or []
        kept = [a for a in accounts if not (isinstance(a, dict) and a.get("accessKey") == access_key)]
        if len(kept) == len(accounts):
            return False
        data["accounts"] = kept
        self._write(path, data)
        return True

    def update_global_white_addrs(self, addrs: list[str], file_name: str | None) -> bool:
        """Replace ``globalWhiteRemoteAddresses`` of one loaded ACL file (the main file when none is named).

        The path comes from the wire: only a file this manager already loads (or the main file) is
        accepted, after resolving links, so no other file can be written.
        """
        path = self.default_file if not file_name else os.path.realpath(file_name)
        allowed = {os.path.realpath(p): p for p in (*self._files, self.default_file)}
        if path not in allowed and os.path.realpath(path) not in allowed:
            log.warning("updateGlobalWhiteAddrsConfig refused: %r is not a loaded ACL file", file_name)
            return False
        path = allowed.get(os.path.realpath(path), path)
        for a in addrs:
            get_remote_address_strategy(a)  # AclException for an invalid pattern
        data = self._read_yaml(path)
        data["globalWhiteRemoteAddresses"] = list(addrs)
        self._write(path, data)
        return True

    def _read_yaml(self, path: str) -> dict:
        try:
            with open(path, encoding="utf-8") as f:
                data = yaml.safe_load(f)
        except FileNotFoundError:
            return {}
        except (OSError, yaml.YAMLError) as e:
            raise AclException(f"cannot read {path}: {e}") from None
        return data if isinstance(data, dict) else {}

    def _write(self, path: str, data: dict) -> None:
        """Bump the file's dataVersion and replace it atomically (temp file, fsync, rename), then reload it."""
        old = self._files.get(path)
        counter = old.version["counter"] if old else 0
        data["dataVersion"] = [{"counter": counter + 1, "timestamp": now_ms()}]
        text = yaml.safe_dump(data, sort_keys=False, allow_unicode=True, default_flow_style=False)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".plain_acl.", suffix=".tmp", dir=os.path.dirname(path))
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(text)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
        self._files[path] = self._parse_file(path)
        self._rebuild()

    # -- reports (request codes 52, 54) --------------------------------------------------------

    def data_version(self, path: str | None = None) -> dict[str, int]:
        acl = self._files.get(path or self.default_file)
        return dict(acl.version) if acl else {"timestamp": 0, "counter": 0}

    def all_data_versions(self) -> dict[str, dict[str, int]]:
        return {p: dict(self._files[p].version) for p in self.file_list_loaded()}

    def all_acl_config(self) -> dict:
        """The GET_BROKER_CLUSTER_ACL_CONFIG body: global white addresses and every account as written."""
        white: list[str] = []
        configs: list[dict] = []
        seen: set[str] = set()
        for path in self.file_list_loaded():
            data = self._read_yaml(path)
            white.extend(str(a) for a in (data.get("globalWhiteRemoteAddresses") or ()))
            for a in data.get("accounts") or ():
                if not isinstance(a, dict) or a.get("accessKey") in seen:
                    continue
                seen.add(a.get("accessKey"))
                configs.append({
                    "accessKey": a.get("accessKey"),
                    "secretKey": a.get("secretKey"),
                    "whiteRemoteAddress": a.get("whiteRemoteAddress"),
                    "admin": bool(a.get("admin")),
                    "defaultTopicPerm": a.get("defaultTopicPerm"),
                    "defaultGroupPerm": a.get("defaultGroupPerm"),
                    "topicPerms": a.get("topicPerms"),
                    "groupPerms": a.get("groupPerms"),
                })
        return {"globalWhiteAddrs": white, "plainAccessConfigs": configs}

    @property
    def account_count(self) -> int:
        return len(self._accounts)

