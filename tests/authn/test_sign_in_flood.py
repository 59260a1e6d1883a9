"""A flood of failed sign-ins from many addresses does not starve payments.

Real gunicorn (one process, eight threads) on the test database, with the
production password hasher (Argon2 at its full cost). Flooders send wrong
passwords for unknown e-mails, each request from an address of its own (through
a trusted proxy's X-Forwarded-For), so that no per-e-mail lockout, per-client
throttle or address budget ever stops them: only the bound on password checks
in flight can. Meanwhile two customers' clients keep paying.

Every payment answers 200; the flood answers 401, or 429 with Retry-After once
the server sheds sign-ins it has no check slot for, never a 5xx. The server is
given one slot and no wait so that the shedding shows in a short run.
"""

import threading
import uuid
from collections import Counter

from tests.conftest import requires_postgres
from tests.proof.processes import Gunicorn, request, server_environment
from tests.support.auth import tokens_for

FLOODERS = 10
PAYERS = 2
PAYMENTS_EACH = 8
MINIMUM_FLOOD = 60


class Flood:
    def __init__(self, port: int, program_id: str):
        self.port, self.program_id = port, program_id
        self.lock = threading.Lock()
        self.statuses: Counter = Counter()
        self.retry_after_missing = 0
        self.sent = 0
        self.payments_done = threading.Event()

    def run(self) -> None:
        while not (self.payments_done.is_set() and self.sent >= MINIMUM_FLOOD):
            status, headers, _ = request(
                self.port,
                "POST",
                "/v1/auth/login",
                {"email": f"nobody-{uuid.uuid4().hex}@example.com", "password": "not the password 42"},
                {"X-Program-Id": self.program_id, "X-Forwarded-For": f"2001:db8::{uuid.uuid4().hex[:4]}"},
            )
            with self.lock:
                self.sent += 1
                self.statuses[status] += 1
                if status == 429 and not headers.get("Retry-After"):
                    self.retry_after_missing += 1


def pay(port: int, path: str, token: str, beneficiary: str, statuses: list[int]) -> None:
    for _ in range(PAYMENTS_EACH):
        status, _, _ = request(
            port,
            "POST",
            path,
            {"amount": "1.00", "reference": "Flood", "beneficiaryId": beneficiary},
            {"Authorization": f"Bearer {token}", "Idempotency-Key": str(uuid.uuid4())},
        )
        statuses.append(status)


@requires_postgres
def test_payments_keep_answering_200_through_a_failed_sign_in_flood(
    transactional_db, payer, account, beneficiary, tmp_path
):
    program = str(payer.program_id)
    path = f"/v1/customers/{payer.customer.id}/accounts/{account.id}/payments"
    tokens = [tokens_for(payer.email, program).access_token for _ in range(PAYERS)]
    env = server_environment(
        TRUSTED_PROXY_COUNT="1", PASSWORD_CHECKS_IN_FLIGHT="1", PASSWORD_CHECK_WAIT_SECONDS="0"
    )
    # Tasks run in the server's process, as on the embedded default: no worker here drains a queue.
    env.pop("REDIS_URL", None)
    server = Gunicorn(env, 1, tmp_path / "gunicorn.log", threads=8)
    flood = Flood(server.port, program)
    payments: list[list[int]] = [[] for _ in range(PAYERS)]
    try:
        flooders = [threading.Thread(target=flood.run) for _ in range(FLOODERS)]
        payers = [
            threading.Thread(target=pay, args=(server.port, path, token, str(beneficiary.id), answers))
            for token, answers in zip(tokens, payments, strict=True)
        ]
        for thread in flooders + payers:
            thread.start()
        for thread in payers:
            thread.join()
        flood.payments_done.set()
        for thread in flooders:
            thread.join()
    finally:
        server.stop()

    assert payments == [[200] * PAYMENTS_EACH] * PAYERS
    assert set(flood.statuses) <= {401, 429}, flood.statuses
    assert flood.statuses[429] > 0, f"no sign-in was shed: {flood.statuses}"
    assert flood.retry_after_missing == 0
