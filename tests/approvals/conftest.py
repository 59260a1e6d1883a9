"""A business customer whose policy holds payments from 1,000.00 (one other user)
and from 5,000.00 (two), with the initiator and three approvers of its own."""

from dataclasses import dataclass

import pyotp
import pytest

from approvals.models import ApprovalPolicy
from bankapi.models import Account, Customer, Program
from tests.support.factories import ProgramFactory, SignedIn, UserFactory, funded_account, uk_account

PAYEE = {
    "name": "Acme Supplies",
    "account": {"type": "uk", "sortCode": "200000", "accountNumber": "55779911"},
}


@dataclass
class Business:
    program: Program
    customer: Customer
    account: Account
    initiator: SignedIn
    approvers: list[SignedIn]
    policy: ApprovalPolicy

    @property
    def payments_url(self) -> str:
        return f"/v1/customers/{self.customer.id}/accounts/{self.account.id}/payments"


def code_of(person: SignedIn) -> str:
    return pyotp.TOTP(person.user.totp_secret).now()


def business_make(balance: str = "100000.00", **policy) -> Business:
    program = ProgramFactory(account_type=Program.AccountType.BUSINESS)
    customer = Customer.objects.create(
        program=program, sandbox=True, name="Held Ltd", kind=Customer.Kind.COMPANY
    )
    people = [
        SignedIn(UserFactory(program_id=program.id, customer=customer, with_totp=True)) for _ in range(4)
    ]
    account = funded_account(customer, balance, **uk_account())
    made = ApprovalPolicy.objects.create(
        program=program,
        sandbox=True,
        customer=customer,
        tiers=policy.pop(
            "tiers", [{"minAmount": "1000.00", "approvers": 1}, {"minAmount": "5000.00", "approvers": 2}]
        ),
        passkey_required=policy.pop("passkey_required", False),
        **policy,
    )
    return Business(program, customer, account, people[0], people[1:], made)


@pytest.fixture
def business(db) -> Business:
    return business_make()


def pay(api, business: Business, amount: str, *, headers=None, **fields):
    body = {"amount": amount, "currency": "GBP", "reference": "Invoice 42", "payee": PAYEE, **fields}
    return api.post(business.payments_url, body, format="json", **(headers or business.initiator.access))


def approve_totp(api, person: SignedIn, approval_id: str, code: str | None = None):
    body = {"confirmation": {"method": "totp", "code": code or code_of(person)}}
    return api.post(f"/v1/approvals/{approval_id}/approve", body, format="json", **person.access)
