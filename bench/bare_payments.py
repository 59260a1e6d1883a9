"""The bare ceiling of `bench/payments`: a payment as plain WSGI and Django's
database layer, nothing else, served by the same gunicorn to the same load.

Not the service: a measuring stick. It does what a payment cannot do without
(the bearer token verified, cached per token as the service caches it; the
caller, its customer and program, the account and the beneficiary read in one
SELECT of the same five tables; one statement that debits the account under the
same funds and daily-limit conditions and inserts the ledger movement and its
two postings, the PENDING request, its event and the Idempotency-Key's record
with the answer) and nothing a deployment adds around it: no middleware, no
framework dispatch, no input rules beyond what the statement needs, no request
budget, no metrics. Its database connection is Django's, configured by the same
settings as the service's (persistent, or the pool with prepared statements).
Its rate, measured beside the route's in the same run, is what the route's
Python and its framework are compared with (`route / ceiling`).

Serve it with `gunicorn --chdir bench bare_payments:application`, in the bench's
production environment (`bench/payments_bench.py` does).
"""

import hashlib
import json
import os
import re
import sys
import time
import uuid
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django  # noqa: E402

django.setup()

import jwt  # noqa: E402
from django.conf import settings  # noqa: E402
from django.db import close_old_connections, connection  # noqa: E402

from authn.keys import verification_keys  # noqa: E402
from payments.ledger import system_account_for  # noqa: E402
from payments.models import SystemAccount  # noqa: E402

PATH = re.compile(r"/v1/customers/([0-9a-f-]{36})/accounts/([0-9a-f-]{36})/payments")
CENT = Decimal("0.01")

READ = """
SELECT u.id, u.token_version, u.program_id, u.sandbox, u.role, u.customer_id, u.email, u.is_staff,
       c.id, c.name, c.kind, c.program_id,
       p.id, p.per_payment_limit, p.daily_outbound_limit, p.review_threshold, p.fee_per_payment,
       p.require_idempotency_key,
       a.id, a.currency, a.balance, a.held, a.outbound_day, a.outbound_total, a.reference_max,
       a.reference_min, a.reference_charset, a.name, a.sort_code, a.account_number, a.iban,
       r.id, r.name, r.account_kind, r.sort_code, r.account_number, r.iban, r.bic, r.payee_type
FROM authn_user u
LEFT JOIN bankapi_customer c ON c.id = u.customer_id
LEFT JOIN bankapi_program p ON p.id = u.program_id
LEFT JOIN bankapi_account a ON a.id = %s AND c.id = %s AND a.customer_id = c.id
  AND a.program_id = u.program_id AND a.sandbox = u.sandbox
LEFT JOIN payments_beneficiary r ON r.id = %s AND r.customer_id = c.id
  AND r.program_id = c.program_id AND r.sandbox = c.sandbox
WHERE u.id = %s AND u.is_active = TRUE
"""

WRITE = """
WITH debit AS (
  UPDATE bankapi_account SET balance = balance - %(amount)s,
    last_booked_at = GREATEST(last_booked_at, %(now)s),
    outbound_total = (CASE WHEN outbound_day = %(day)s THEN outbound_total ELSE 0 END) + %(amount)s,
    outbound_day = %(day)s
  WHERE id = %(account)s AND balance - held >= %(amount)s
    AND (CASE WHEN outbound_day = %(day)s THEN outbound_total ELSE 0 END) <= %(room)s
  RETURNING balance, last_booked_at
), movement AS (
  INSERT INTO payments_ledgertransaction (id, program_id, sandbox, kind, key, memo, created_at, updated_at)
  SELECT %(movement)s, %(program)s, FALSE, 'PAYMENT', NULL, %(reference)s, %(now)s, %(now)s FROM debit
), postings AS (
  INSERT INTO payments_ledgerposting (transaction_id, account_id, system_account_id, currency, amount,
    balance_after, created_at, kind, request_id, reference, description, end_to_end_id, counterparty_name,
    counterparty_iban)
  SELECT %(movement)s, %(account)s, NULL, %(currency)s, -%(amount)s, debit.balance, debit.last_booked_at,
    'PAYMENT', %(request)s, %(reference)s, 'Payment', '', '', '' FROM debit
  UNION ALL
  SELECT %(movement)s, NULL, %(clearing)s, %(currency)s, %(amount)s, NULL, %(now)s, '', NULL, '', '', '', '',
    '' FROM debit
), request AS (
  INSERT INTO payments_paymentrequest (id, program_id, sandbox, customer_id, account_id, status, amount,
    currency, debit_amount, fee, fee_waived, reference, purpose, charge_bearer, beneficiary_id, payee,
    virtual_iban, schedule_id, fx_quote_id, acceptance_id, reversal_id, return_movement_id,
    failure_reason, settled_at, created_at, updated_at)
  SELECT %(request)s, %(program)s, FALSE, %(customer)s, %(account)s, 'PENDING', %(amount)s, %(currency)s,
    %(amount)s, 0, FALSE, %(reference)s, '', '', %(beneficiary)s, CAST(%(payee)s AS jsonb), '', NULL, NULL,
    %(movement)s, NULL, NULL, '', NULL, %(now)s, %(now)s FROM debit
), event AS (
  INSERT INTO events_event (program_id, sandbox, created_at, updated_at, event_id, type, customer_id,
    custodian_id, resource_type, resource_id, data, fanned_out, request_id, written_at)
  SELECT %(program)s, FALSE, %(now)s, %(now)s, %(event)s, 'payment_request.accepted', %(customer)s, NULL,
    'payment_request', %(request_text)s, CAST(%(event_data)s AS jsonb), FALSE, %(request_id)s, %(now)s
    FROM debit
), record AS (
  INSERT INTO bankapi_idempotencyrecord (program_id, sandbox, created_at, updated_at, owner_kind, owner_id,
    operation, key, fingerprint, state, claim_token, claimed_at, response_status, response_body)
  SELECT %(program)s, FALSE, %(now)s, %(now)s, 'customer', %(customer)s, 'payments.create', %(key)s,
    CAST(%(fingerprint)s AS jsonb), 'COMPLETED', %(claim)s, %(now)s, 200, %(answer)s FROM debit
)
SELECT debit.balance FROM (SELECT 1) one LEFT JOIN debit ON TRUE
"""

_verified: dict[bytes, dict] = {}
_clearing: dict[tuple[uuid.UUID, str], uuid.UUID] = {}


def claims_of(token: str) -> dict | None:
    digest = hashlib.sha256(token.encode()).digest()
    claims = _verified.get(digest)
    if claims is None:
        try:
            kid = jwt.get_unverified_header(token).get("kid", "")
            key = verification_keys().get(kid)
            if key is None:
                return None
            claims = jwt.decode(token, key, algorithms=["RS256"], issuer=settings.JWT_ISSUER)
        except jwt.PyJWTError:
            return None
        _verified[digest] = claims
    return claims if time.time() < claims["exp"] else None


def clearing_account(program_id: uuid.UUID, currency: str) -> uuid.UUID:
    """The program's clearing account (immutable: looked up, or made, once per process)."""
    slot = (program_id, currency)
    if slot not in _clearing:
        _clearing[slot] = system_account_for(program_id, False, SystemAccount.Kind.CLEARING, currency).id
    return _clearing[slot]


def answer(start_response: Any, status: str, body: bytes) -> list[bytes]:
    start_response(status, [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
    return [body]


def pay(environ: dict, start_response: Any) -> list[bytes]:
    found = PATH.fullmatch(environ.get("PATH_INFO", ""))
    bearer = environ.get("HTTP_AUTHORIZATION", "")
    claims = claims_of(bearer[7:]) if found and bearer.startswith("Bearer ") else None
    if claims is None:
        return answer(start_response, "401 Unauthorized", b'{"success": false, "code": "UNAUTHORIZED"}')
    body = json.loads(environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0)))
    amount = Decimal(body["amount"]).quantize(CENT)
    reference, beneficiary_id = body["reference"], body["beneficiaryId"]
    customer_id, account_id = found.group(1), found.group(2)
    with connection.cursor() as cursor:
        ids = [account_id, customer_id, beneficiary_id, claims["sub"]]
        cursor.execute(READ, [uuid.UUID(value) for value in ids])
        row = cursor.fetchone()
    if row is None or row[1] != claims["ver"] or row[18] is None or row[31] is None:
        return answer(start_response, "404 Not Found", b'{"success": false, "code": "RESOURCE_NOT_FOUND"}')
    program_id, currency, daily_limit = row[12], row[19], row[14]
    now = datetime.now(UTC)
    request_id = uuid.uuid4()
    response = json.dumps(
        {"success": True, "data": {"bankTransfer": {"status": "success", "requestId": str(request_id)}}},
        separators=(",", ":"),
    ).encode()
    stamp = now.isoformat()
    event_data = {
        "requestId": str(request_id),
        "status": "PENDING",
        "amount": f"{amount:.2f}",
        "currency": currency,
        "reference": reference,
        "beneficiaryId": beneficiary_id,
        "scheduleId": None,
        "failureReason": None,
        "createdDateTime": stamp,
        "updatedAt": stamp,
    }
    payee = {"name": row[32], "account": {"kind": "uk", "sort_code": row[34], "account_number": row[35]}}
    fingerprint = {
        "version": 1,
        "fields": {"amount": f"{amount:.2f}", "account_id": account_id, "beneficiary_id": beneficiary_id},
    }
    with connection.cursor() as cursor:
        cursor.execute(
            WRITE,
            {
                "amount": amount,
                "now": now,
                "day": now.date(),
                "room": (daily_limit if daily_limit is not None else Decimal("1e15")) - amount,
                "account": row[18],
                "movement": uuid.uuid4(),
                "program": program_id,
                "reference": reference,
                "currency": currency,
                "request": request_id,
                "clearing": clearing_account(program_id, currency),
                "customer": row[8],
                "beneficiary": row[31],
                "payee": json.dumps(payee),
                "event": uuid.uuid4(),
                "request_text": str(request_id),
                "event_data": json.dumps(event_data),
                "request_id": str(uuid.uuid4()),
                "key": uuid.UUID(environ["HTTP_IDEMPOTENCY_KEY"]),
                "fingerprint": json.dumps(fingerprint),
                "claim": uuid.uuid4(),
                "answer": response,
            },
        )
        (balance,) = cursor.fetchone()
    if balance is None:
        return answer(start_response, "422 Unprocessable Entity", b'{"success": false, "code": "REFUSED"}')
    return answer(start_response, "200 OK", response)


def application(environ: dict, start_response: Any) -> list[bytes]:
    # What Django's request_started and request_finished signals do for the
    # database: a connection past its age (or, with the pool, the request's
    # connection) is closed, or given back, between requests.
    close_old_connections()
    try:
        return pay(environ, start_response)
    finally:
        close_old_connections()
