import io
import json
from decimal import Decimal

from django.core.management import call_command

from authn.models import User
from bankapi.codes import iban_problem
from bankapi.models import Account, Customer, Program

ACCOUNT_KEYS = {"customerId", "accountId", "shortRefAccountId", "lowBalanceAccountId", "eurAccountId"}
USER_KEYS = {"email", "password", "totpSecret"}


def run_bootstrap() -> dict:
    out = io.StringIO()
    call_command("bootstrap_sandbox", "--json", stdout=out)
    text = out.getvalue().strip()
    assert "\n" not in text, "--json prints exactly one line: one JSON object"
    return json.loads(text)


def test_output_has_every_key_of_the_contract(sandbox):
    output = run_bootstrap()
    assert list(output) == [
        "consumerProgramId",
        "businessProgramId",
        "customer",
        "customer2",
        "business",
        "custodian",
        "management",
        "newUser",
        "passkeyUser",
        "spareUser",
        "operator",
        "limits",
        "businessApprover",
        "custodianApprover",
    ]
    for key in ("customer", "customer2", "business"):
        assert USER_KEYS | ACCOUNT_KEYS <= set(output[key])
    assert set(output["custodian"]) >= USER_KEYS | {"programId", "customerIds", "accounts"}
    assert set(output["management"]) == USER_KEYS
    assert set(output["newUser"]) == {"email", "temporaryPassword", "programId"}
    assert set(output["passkeyUser"]) == {"email", "password", "programId"}
    assert set(output["spareUser"]) == USER_KEYS | {"programId"}
    assert set(output["operator"]) == {"email", "password"}
    assert set(output["businessApprover"]) == USER_KEYS | {"programId"}
    assert set(output["custodianApprover"]) == USER_KEYS | {"programId"}
    assert output["limits"] == {
        "perPayment": "25000.00",
        "dailyOutbound": "500000.00",
        "reviewThreshold": "10000.00",
        "fee": "0.00",
    }


def test_programs_are_configured_as_the_contract_says(sandbox):
    output = run_bootstrap()
    consumer = Program.objects.get(id=output["consumerProgramId"])
    business = Program.objects.get(id=output["businessProgramId"])
    assert (consumer.account_type, consumer.international_payments_enabled, consumer.cardholders_enabled) == (
        "consumer",
        True,
        False,
    )
    assert (
        business.account_type,
        business.international_payments_enabled,
        business.cardholders_enabled,
        business.pin_confirmation_enabled,
    ) == ("business", False, True, True)
    for program in (consumer, business):
        assert program.per_payment_limit == Decimal("25000.00")
        assert program.daily_outbound_limit == Decimal("500000.00")
        assert program.review_threshold == Decimal("10000.00")
        assert program.fee_per_payment == Decimal("0.00")


def test_accounts_have_the_listed_balances_and_reference_limits(sandbox):
    output = run_bootstrap()
    for key, program_key in (
        ("customer", "consumerProgramId"),
        ("customer2", "consumerProgramId"),
        ("business", "businessProgramId"),
    ):
        entry = output[key]
        customer = Customer.objects.get(id=entry["customerId"])
        assert str(customer.program_id) == output[program_key]
        main = Account.objects.get(id=entry["accountId"], customer=customer)
        short = Account.objects.get(id=entry["shortRefAccountId"], customer=customer)
        low = Account.objects.get(id=entry["lowBalanceAccountId"], customer=customer)
        eur = Account.objects.get(id=entry["eurAccountId"], customer=customer)
        assert (main.currency, main.balance, main.reference_max) == ("GBP", Decimal("100000.00"), 140)
        assert (short.currency, short.balance, short.reference_max) == ("GBP", Decimal("100000.00"), 35)
        assert (low.currency, low.balance) == ("GBP", Decimal("5.00"))
        assert (eur.currency, eur.balance) == ("EUR", Decimal("100000.00"))
        user = User.objects.get(email=entry["email"], program=customer.program)
        assert user.customer_id == customer.id
        assert user.check_password(entry["password"]) and user.totp_secret == entry["totpSecret"]

    custodian = output["custodian"]
    assert custodian["programId"] == output["consumerProgramId"]
    assert len(custodian["customerIds"]) >= 2
    for entry in custodian["accounts"]:
        account = Account.objects.get(id=entry["accountId"], customer_id=entry["customerId"])
        assert account.customer.custodian is not None
        assert (account.currency, account.balance) == ("GBP", Decimal("100000.00"))
        assert (entry["sortCode"], entry["accountNumber"]) == (account.sort_code, account.account_number)
        assert len(entry["sortCode"]) == 6 and len(entry["accountNumber"]) == 8


def test_users_sign_in_states(sandbox):
    output = run_bootstrap()
    consumer = output["consumerProgramId"]
    new_user = User.objects.get(email=output["newUser"]["email"], program_id=consumer)
    assert new_user.must_change_password and new_user.check_password(output["newUser"]["temporaryPassword"])
    passkey_user = User.objects.get(email=output["passkeyUser"]["email"], program_id=consumer)
    assert not passkey_user.totp_confirmed and not passkey_user.passkeys.exists()
    management = User.objects.get(email=output["management"]["email"], program=None)
    assert management.role == "management"
    operator = User.objects.get(email=output["operator"]["email"], program=None)
    assert operator.is_staff and operator.groups.filter(name="administrator").exists()


def test_rerun_makes_nothing_twice_and_prints_the_same_object(sandbox):
    first = run_bootstrap()
    counts = (
        Program.objects.count(),
        Customer.objects.count(),
        Account.objects.count(),
        User.objects.count(),
    )
    balances = dict(Account.objects.values_list("id", "balance"))
    second = run_bootstrap()
    assert second == first
    assert counts == (
        Program.objects.count(),
        Customer.objects.count(),
        Account.objects.count(),
        User.objects.count(),
    )
    assert balances == dict(Account.objects.values_list("id", "balance"))


def test_every_account_has_a_valid_iban_in_the_json_and_on_the_account(sandbox):
    output = run_bootstrap()
    for key in ("customer", "customer2", "business"):
        main = Account.objects.get(id=output[key]["accountId"])
        euro = Account.objects.get(id=output[key]["eurAccountId"])
        assert output[key]["accountIban"] == main.iban
        assert output[key]["eurAccountIban"] == euro.iban
        # A GB IBAN embeds the sort code and account number; the euro one is German.
        assert main.iban.endswith(main.sort_code + main.account_number) and main.iban.startswith("GB")
        assert euro.iban.startswith("DE") and len(euro.iban) == 22
    for entry in output["custodian"]["accounts"]:
        assert (
            entry["iban"] == "GB" + entry["iban"][2:4] + "MONZ" + entry["sortCode"] + entry["accountNumber"]
        )
    assert not Account.objects.filter(sandbox=True, iban="").exists()
    for account in Account.objects.filter(sandbox=True):
        assert iban_problem(account.iban) is None
    assert run_bootstrap() == output
