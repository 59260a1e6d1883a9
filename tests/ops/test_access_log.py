"""The web node's access lines: `bankapi.ops.access_log.CombinedAccessLog` writes the
line gunicorn's own logger writes, byte for byte, for the requests a node sees
(quotes and Basic credentials in headers, no body sent, a proxy's address), and
leaves any other format to gunicorn."""

import runpy
from datetime import timedelta
from pathlib import Path
from types import SimpleNamespace

import pytest
from gunicorn.config import Config
from gunicorn.glogging import Logger

from bankapi.ops.access_log import CombinedAccessLog

ROOT = Path(__file__).resolve().parents[2]
NOW = "[28/Nov/2026:16:30:00 +0000]"


def _environ(**overrides: str) -> dict[str, str]:
    return {
        "REMOTE_ADDR": "127.0.0.1",
        "REQUEST_METHOD": "POST",
        "RAW_URI": "/v1/customers/c1/accounts/a1/payments?x=1",
        "SERVER_PROTOCOL": "HTTP/1.1",
        **overrides,
    }


def _line(logger_class: type, tmp_path: Path, name: str, access_format: str | None, *, environ, resp) -> str:
    config = Config()
    config.set("accesslog", str(tmp_path / name))
    if access_format is not None:
        config.set("access_log_format", access_format)
    logger = logger_class(config)
    logger.now = lambda: NOW
    request = SimpleNamespace(headers=[("HOST", "bank.example"), ("X-REQUEST-ID", 'a"b')])
    logger.access(resp, request, environ, timedelta(seconds=1, microseconds=2345))
    for handler in logger.access_log.handlers:
        handler.flush()
    return (tmp_path / name).read_text()


CASES = {
    "a payment": (
        _environ(),
        SimpleNamespace(status="200 OK", sent=112, headers=[("Content-Type", "application/json")]),
    ),
    "quotes in the agent and referer": (
        _environ(HTTP_USER_AGENT='curl "8"', HTTP_REFERER='https://x.example/"a"'),
        SimpleNamespace(status="201 Created", sent=0, headers=[]),
    ),
    "Basic credentials name the user": (
        _environ(HTTP_AUTHORIZATION="Basic YWxpY2U6c2VjcmV0"),
        SimpleNamespace(status="401 Unauthorized", sent=None, headers=[]),
    ),
    "an integer status, no address": (
        {key: value for key, value in _environ().items() if key != "REMOTE_ADDR"},
        SimpleNamespace(status=204, headers=[]),
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_the_line_is_gunicorns_own(tmp_path, case):
    environ, resp = CASES[case]

    ours = _line(CombinedAccessLog, tmp_path, "ours.log", None, environ=environ, resp=resp)
    theirs = _line(Logger, tmp_path, "theirs.log", None, environ=environ, resp=resp)

    assert ours == theirs
    assert ours.count("\n") == 1 and NOW in ours


def test_another_format_is_gunicorns_to_write(tmp_path):
    environ, resp = CASES["a payment"]
    custom = '%(h)s "%(r)s" %(s)s %(D)s %({x-request-id}i)s'

    ours = _line(CombinedAccessLog, tmp_path, "ours.log", custom, environ=environ, resp=resp)
    theirs = _line(Logger, tmp_path, "theirs.log", custom, environ=environ, resp=resp)

    assert ours == theirs
    assert ours == '127.0.0.1 "POST /v1/customers/c1/accounts/a1/payments?x=1 HTTP/1.1" 200 1002345 a\\"b\n'


def test_the_deployed_configuration_uses_it():
    settings = runpy.run_path(str(ROOT / "deploy" / "gunicorn.conf.py"))
    config = Config()
    config.set("logger_class", settings["logger_class"])
    config.set("accesslog", settings["accesslog"])

    assert config.logger_class is CombinedAccessLog
    assert config.access_log_format == Config().access_log_format
