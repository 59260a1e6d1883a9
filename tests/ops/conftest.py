import io
import logging

import pytest
from django.db import connection

from bankapi.ops.logs import JsonLineFormatter, RedactFilter


class Console:
    """What the service's console handler writes, captured."""

    def __init__(self, handler: logging.Handler, stream: io.StringIO):
        self.handler, self.stream = handler, stream

    def text(self) -> str:
        return self.stream.getvalue()

    def lines(self) -> list[str]:
        return [line for line in self.text().splitlines() if line.strip()]

    def as_json(self) -> None:
        self.handler.setFormatter(JsonLineFormatter())


@pytest.fixture
def console():
    """The console handler of the logging settings, writing to a buffer, with every
    logger at DEBUG and SQL logged with its parameters."""
    handler = next(
        handler
        for handler in logging.getLogger().handlers
        if any(isinstance(found, RedactFilter) for found in handler.filters)
    )
    written = io.StringIO()
    # Swapped, not set with setStream(): that flushes the stream it replaces,
    # which may be an output pytest has closed since logging was configured.
    previous_stream, previous_formatter = handler.stream, handler.formatter
    handler.stream = written
    levels = {name: logging.getLogger(name).level for name in ("", "django", "django.db.backends")}
    for name in levels:
        logging.getLogger(name).setLevel(logging.DEBUG)
    connection.force_debug_cursor = True
    yield Console(handler, written)
    connection.force_debug_cursor = False
    for name, level in levels.items():
        logging.getLogger(name).setLevel(level)
    handler.stream = previous_stream
    handler.setFormatter(previous_formatter)
