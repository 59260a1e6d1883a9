"""The payment rules a payment must meet on the day it is paid.

Checked when a payment is created (the request body, then the service) and again
on each run of a schedule, against the account and the beneficiary as they are
that day: an account's reference rules or a beneficiary's details may have
changed since the schedule was made.
"""

import functools
import re

from bankapi.formats import single_line_text_problem
from bankapi.models import Account
from payments.formats import REFERENCE_MAX
from payments.payees import Payee


@functools.cache
def _reference_charset(pattern: str) -> re.Pattern:
    # The pattern is written `^...$` for clients; matched whole here, since `$`
    # alone would let a trailing newline through. Cached: a batch checks one
    # account's pattern for each of up to 10,000 items.
    return re.compile(pattern)


def account_reference_error(account: Account | None, reference: str) -> str | None:
    """Why the account refuses this statement reference, if it does: the rule of
    every payment from it, single, scheduled or in a batch. No account takes
    more than the REFERENCE_MAX characters a payment carries, whatever its own
    maximum says. Without an account (a batch item whose payer is unknown, a
    reason of its own) only what every account refuses is refused."""
    if account is None:
        if len(reference) > REFERENCE_MAX:
            return f"Must be at most {REFERENCE_MAX} characters."
        return single_line_text_problem(reference)
    longest = min(account.reference_max, REFERENCE_MAX)
    if not account.reference_min <= len(reference) <= longest:
        return f"Must be {account.reference_min} to {longest} characters for this account."
    problem = single_line_text_problem(reference)
    if problem:
        return problem
    if not _reference_charset(account.reference_pattern).fullmatch(reference):
        return f"Contains characters this account does not accept ({account.reference_pattern})."
    return None


def virtual_iban_error(*, virtual_iban: str, currency: str, payee: Payee | None) -> str | None:
    """A domestic GBP payment (to a UK sort code and account number) must come
    from a GB virtual IBAN. `payee` is the payee as paid (None: a crypto-funded payment)."""
    if not virtual_iban or currency != "GBP" or payee is None:
        return None
    if payee.is_uk and not virtual_iban.startswith("GB"):
        return "A domestic GBP payment must come from a GB virtual IBAN."
    return None
