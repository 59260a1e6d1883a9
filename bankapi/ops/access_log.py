"""gunicorn's access lines, written for less: `deploy/gunicorn.conf.py` sets it as
gunicorn's `logger_class`.

Free of Django (gunicorn's master makes its logger before it loads the
application). gunicorn writes each access line by first building a table of
every atom its format language knows (each request header among them), then
formatting its format against that table. For its default format, the
combined log format the service deploys, that table cost the web worker about a
tenth of a payment's CPU. This logger writes the same line from the few values
it shows; any other `access_log_format` goes to gunicorn's own code.
"""

import traceback
from datetime import timedelta
from typing import Any

from gunicorn.config import AccessLogFormat
from gunicorn.glogging import Logger

COMBINED = AccessLogFormat.default


def _quoted(value: str) -> str:
    # As gunicorn's SafeAtoms: a double quote inside a value is escaped.
    return value.replace('"', '\\"')


class CombinedAccessLog(Logger):  # type: ignore[misc]
    def access(self, resp: Any, req: Any, environ: dict[str, Any], request_time: timedelta) -> None:
        if not self.access_log_enabled:
            return
        if self.cfg.access_log_format != COMBINED:
            super().access(resp, req, environ, request_time)
            return
        status = resp.status
        if isinstance(status, str):
            status = _quoted(status.split(None, 1)[0])
        sent = getattr(resp, "sent", None)
        request_line = f"{environ['REQUEST_METHOD']} {environ['RAW_URI']} {environ['SERVER_PROTOCOL']}"
        fields = (
            _quoted(environ.get("REMOTE_ADDR", "-")),
            "-",
            _quoted(self._get_user(environ) or "-"),
            self.now(),
            _quoted(request_line),
            status,
            sent is not None and str(sent) or "-",
            _quoted(environ.get("HTTP_REFERER", "-")),
            _quoted(environ.get("HTTP_USER_AGENT", "-")),
        )
        try:
            self.access_log.info('%s %s %s %s "%s" %s %s "%s" "%s"', *fields)
        except Exception:  # noqa: BLE001 - as gunicorn's own: a line not written must not fail the request
            self.error(traceback.format_exc())
