"""Ids that sort in the order rows were written: UUID version 7 (RFC 9562).

Lists are newest first by a time and then by id. Objects of a sandbox
customer on a test clock share one time (the clock's), so their order among
themselves is their ids': these ids rise with the real time they were made
(milliseconds, then a counter within the millisecond, per process), so that
order is the order they were written in.
"""

import os
import threading
import time
import uuid

_lock = threading.Lock()
_last = (0, 0)


def write_ordered_uuid() -> uuid.UUID:
    """A UUIDv7: 48 bits of Unix milliseconds, the version, 12 bits of a counter
    that rises within a millisecond, the variant and 62 random bits."""
    global _last
    with _lock:
        millis, counter = time.time_ns() // 1_000_000, 0
        if millis <= _last[0]:
            millis, counter = _last[0], _last[1] + 1
            if counter > 0xFFF:
                millis, counter = millis + 1, 0
        _last = (millis, counter)
    random_bits = int.from_bytes(os.urandom(8), "big") & ((1 << 62) - 1)
    value = (millis << 80) | (0x7 << 76) | (counter << 64) | (0b10 << 62) | random_bits
    return uuid.UUID(int=value)
