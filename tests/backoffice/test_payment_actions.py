"""Compliance review and sandbox settle/fail from the payment requests screen,
through the admin as operators of the right group and of a wrong one."""

from django.contrib.admin.models import CHANGE, LogEntry

from bankapi.models import Account
from payments.models import PaymentRequest
from tests.backoffice.conftest import held_payments, pending_payment

URL = "/admin/payments/paymentrequest/"


def _choose(client, action: str, payments):
    """The first post: the changelist's action form with the rows ticked."""
    return client.post(
        URL, {"action": action, "index": "0", "_selected_action": [str(p.id) for p in payments]}
    )


def _confirm(client, action: str, payments, reason: str):
    """The intermediate page's post (as delete_selected's: action, _selected_action, post=yes, reason)."""
    return client.post(
        URL,
        {
            "action": action,
            "_selected_action": [str(p.id) for p in payments],
            "post": "yes",
            "reason": reason,
        },
    )


def _status(payment) -> str:
    return PaymentRequest.objects.get(id=payment.id).status


def _log(payment) -> list[str]:
    return list(
        LogEntry.objects.filter(object_id=str(payment.id), action_flag=CHANGE).values_list(
            "change_message", flat=True
        )
    )


def test_approving_asks_for_a_reason_on_an_intermediate_page(staff_client, account):
    held, other = held_payments(account, 2)
    client = staff_client("compliance")

    page = _choose(client, "approve_held", [held])

    assert page.status_code == 200
    body = page.content.decode()
    assert 'name="reason"' in body and 'name="post" value="yes"' in body
    assert f'value="{held.id}"' in body and 'value="approve_held"' in body
    assert _status(held) == "PENDING_TM"


def test_compliance_approves_a_held_payment_with_a_reason_and_it_can_settle(staff_client, account):
    held, other = held_payments(account, 2)
    client = staff_client("compliance")

    response = _confirm(client, "approve_held", [held], "Invoice checked against the contract")

    assert response.status_code == 302
    assert (_status(held), _status(other)) == ("PENDING", "PENDING_TM")
    assert _log(held) == ["Approved in compliance review: Invoice checked against the contract"]
    assert LogEntry.objects.get(object_id=str(held.id)).user.groups.get().name == "compliance"


def test_an_empty_reason_shows_the_page_again_and_changes_nothing(staff_client, account):
    (held,) = held_payments(account, 1)
    client = staff_client("compliance")

    for action in ("approve_held", "reject_held"):
        response = _confirm(client, action, [held], "   ")
        assert response.status_code == 200
        assert 'name="reason"' in response.content.decode()
        assert "This field is required" in response.content.decode()

    assert _status(held) == "PENDING_TM"
    assert _log(held) == []


def test_compliance_rejects_a_held_payment_and_the_funds_come_back(staff_client, account):
    before = Account.objects.get(id=account.id).balance
    (held,) = held_payments(account, 1)
    client = staff_client("compliance")

    response = _confirm(client, "reject_held", [held], "Beneficiary on a sanctions list")

    assert response.status_code == 302
    held.refresh_from_db()
    assert held.status == "FAILED"
    # The customer sees a neutral reason; the operator's stays in the admin log.
    assert held.failure_reason == "Rejected in compliance review"
    assert _log(held) == ["Rejected in compliance review: Beneficiary on a sanctions list"]
    assert Account.objects.get(id=account.id).balance == before


def test_a_payment_no_longer_held_is_left_as_it_is_and_named(staff_client, account):
    (held,) = held_payments(account, 1)
    client = staff_client("compliance")
    _confirm(client, "approve_held", [held], "Fine")

    response = _confirm(client, "reject_held", [held], "Changed my mind")

    assert response.status_code == 302
    assert _status(held) == "PENDING"
    messages = [str(m) for m in response.wsgi_request._messages]
    assert any("Left unchanged" in m and "cannot be rejected" in m for m in messages)


def test_support_and_operations_cannot_review(staff_client, account):
    (held,) = held_payments(account, 1)
    for group in ("support", "operations"):
        client = staff_client(group)
        page = client.get(URL)
        response = _confirm(client, "approve_held", [held], "Not mine to decide")

        assert page.status_code == 200
        assert b"approve_held" not in page.content and b"reject_held" not in page.content
        # An action the user may not run is not a choice: the changelist answers, nothing moves.
        assert response.status_code in (200, 302)
        client.logout()
    assert _status(held) == "PENDING_TM"
    assert _log(held) == []


def test_operations_settles_a_sandbox_payment(staff_client, account):
    payment = pending_payment(account)
    client = staff_client("operations")

    response = _choose(client, "settle_sandbox", [payment])

    assert response.status_code == 302
    assert _status(payment) == "SETTLED"
    assert _log(payment) == ["Settled in the sandbox"]


def test_operations_fails_a_sandbox_payment_with_a_reason(staff_client, account):
    before = Account.objects.get(id=account.id).balance
    payment = pending_payment(account)
    client = staff_client("operations")

    page = _choose(client, "fail_sandbox", [payment])
    response = _confirm(client, "fail_sandbox", [payment], "Beneficiary bank returned it")

    assert page.status_code == 200 and 'name="reason"' in page.content.decode()
    assert response.status_code == 302
    payment.refresh_from_db()
    assert (payment.status, payment.failure_reason) == ("FAILED", "Beneficiary bank returned it")
    assert Account.objects.get(id=account.id).balance == before


def test_production_payments_are_not_settled_from_the_sandbox_action(staff_client, account):
    payment = pending_payment(account)
    PaymentRequest.objects.filter(id=payment.id).update(sandbox=False)
    client = staff_client("operations")

    response = _choose(client, "settle_sandbox", [payment])

    assert response.status_code == 302
    assert _status(payment) == "PENDING"
    assert _log(payment) == []


def test_compliance_cannot_settle_or_fail_sandbox_payments(staff_client, account):
    payment = pending_payment(account)
    client = staff_client("compliance")

    page = client.get(URL)
    _choose(client, "settle_sandbox", [payment])
    _confirm(client, "fail_sandbox", [payment], "No")

    assert b"settle_sandbox" not in page.content
    assert _status(payment) == "PENDING"


def test_payment_requests_are_not_edited_by_form(staff_client, account):
    payment = pending_payment(account)
    client = staff_client("administrator")

    page = client.get(f"{URL}{payment.id}/change/")
    change = client.post(f"{URL}{payment.id}/change/", {"status": "SETTLED"})

    assert page.status_code == 200 and b"Small invoice" in page.content
    assert change.status_code == 403
    assert _status(payment) == "PENDING"


def test_search_finds_a_payment_by_its_request_id_exactly(staff_client, account):
    payment, other = pending_payment(account), pending_payment(account)
    client = staff_client("support")

    found = client.get(URL, {"q": str(payment.id)})
    partial = client.get(URL, {"q": str(payment.id)[:8]})
    odd = [client.get(URL, {"q": text}) for text in ("'; drop table", "9" * 40, "x" * 500, "%", "é\u0000")]

    assert found.status_code == 200
    assert str(payment.id) in found.content.decode() and str(other.id) not in found.content.decode()
    assert partial.status_code == 200 and str(payment.id) not in partial.content.decode()
    assert [page.status_code for page in odd] == [200] * len(odd)
