"""Hostile input for the SQL92 selector, the heartbeat body, and the ACL parts that read the wire: random text
and random token sequences end in FilterParseError / BodyError / AclException, never another exception."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from broker.acl.acl_exception import AclException
from broker.acl.plain_access_validator import PlainAccessValidator, needed_resources
from broker.acl.plain_permission_manager import AccessRequest
from broker.acl.remote_address_strategy import get_remote_address_strategy
from broker.filter.expression import compile_expression
from broker.filter.selector_parser import FilterParseError
from common.acl_signer import combine_request_content, request_signature
from remoting.body import BodyError
from remoting.body.heartbeat import HeartbeatData
from remoting.codes import RequestCode
from remoting.command import RemotingCommand

TOKENS = ["a", "b", "TAGS", "'x'", "'", "1", "-1", "2.5", "1e400", "9223372036854775808", "(", ")", "AND", "OR",
          "NOT", "=", "<>", ">", ">=", "<", "<=", "IS", "NULL", "BETWEEN", "IN", ",", "LIKE", "TRUE", "FALSE",
          "CONTAINS", "STARTSWITH", "ENDSWITH", "ESCAPE", "%", "_", "\x00", "?", "\"", "$"]


@given(st.text(max_size=120))
def test_selector_on_random_text(expr):
    try:
        e = compile_expression("SQL92", expr)
    except FilterParseError:
        return
    assert e.evaluate({"a": "1"}) in (True, False)


@given(st.lists(st.sampled_from(TOKENS), min_size=1, max_size=25), st.dictionaries(
    st.sampled_from(["a", "b", "TAGS"]), st.text(max_size=5), max_size=3))
def test_selector_on_token_soup(tokens, props):
    try:
        e = compile_expression("SQL92", " ".join(tokens))
    except FilterParseError:
        return
    assert e.evaluate(props) in (True, False)


def test_deeply_nested_selector_is_refused_not_crashed():
    for expr in ("NOT " * 5000 + "a = 1", "(" * 3000 + "a = 1" + ")" * 3000):
        try:
            compile_expression("SQL92", expr)
        except FilterParseError:
            pass


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=10),
    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.sampled_from(
        ["clientID", "consumerDataSet", "producerDataSet", "groupName", "subscriptionDataSet", "topic",
         "subString", "tagsSet", "codeSet", "subVersion", "expressionType"]), c, max_size=4),
    max_leaves=15,
)


class _Rejecting:
    def validate(self, req: AccessRequest) -> None:
        raise AclException("refused")

    def validate_granted(self, remote_addr: str, ext: dict, body: object, grant: tuple) -> bool:
        return False  # nothing remembered: every request goes through validate


@given(json_values, st.sampled_from([int(RequestCode.HEART_BEAT), int(RequestCode.SEND_MESSAGE_V2),
                                     int(RequestCode.PULL_MESSAGE), int(RequestCode.SEND_MESSAGE)]),
       st.dictionaries(st.sampled_from(["a", "b", "topic", "group", "consumerGroup", "AccessKey", "Signature"]),
                       st.text(max_size=10), max_size=5))
def test_acl_request_parsing(body_obj, code, ext):
    body = json.dumps(body_obj).encode()
    try:
        HeartbeatData.from_json(body)
    except BodyError:
        pass
    validator = PlainAccessValidator(_Rejecting())
    cmd = RemotingCommand(code, ext_fields=ext, body=body)
    try:
        validator.validate(cmd, "127.0.0.1:1234")
    except AclException:
        pass
    needs = None
    try:
        needs = needed_resources(code, ext, body)
    except Exception:  # noqa: BLE001 - the validator turns these into AclException (checked above)
        pass
    assert needs is None or all(type(k) is str and v in (4, 8) for k, v in needs.items())
    assert request_signature(ext, body, "secret12") == request_signature(
        ext, None, "secret12") if not body else True
    assert combine_request_content(ext, body).endswith(body)


@given(st.text(alphabet="0123456789abcdef.:*{},- ", max_size=40), st.text(alphabet="0123456789abcdef.:", max_size=40))
def test_white_address_patterns(pattern, addr):
    try:
        match = get_remote_address_strategy(pattern)
    except AclException:
        return
    assert match(addr) in (True, False)
