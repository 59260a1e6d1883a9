"""Back office: policies edited with their changes in the audit history, checked
as the API reads them; approvals listed and shown read-only."""

import html
import json
import re

from approvals.models import Approval, ApprovalPolicy
from audit.models import ChangeRecord
from tests.approvals.conftest import pay
from tests.backoffice.conftest import staff_user


def _form(policy: ApprovalPolicy, **changes) -> dict:
    form = {
        "program": str(policy.program_id),
        "sandbox": "on" if policy.sandbox else "",
        "customer": str(policy.customer_id or ""),
        "custodian": str(policy.custodian_id or ""),
        "tiers": json.dumps(policy.tiers),
        "expires_after_hours": str(policy.expires_after_hours),
        "passkey_required": "on" if policy.passkey_required else "",
    }
    form.update(changes)
    return {key: value for key, value in form.items() if value != ""}


def test_a_policy_edit_is_in_the_audit_history(client, business):
    client.force_login(staff_user("administrator"))
    url = f"/admin/approvals/approvalpolicy/{business.policy.id}/change/"
    tiers = [{"minAmount": "250.00", "approvers": 2}]
    answer = client.post(url, _form(business.policy, tiers=json.dumps(tiers), expires_after_hours="24"))
    assert answer.status_code == 302, answer.content.decode()[:2000]
    business.policy.refresh_from_db()
    assert business.policy.tiers == tiers and business.policy.expires_after_hours == 24
    change = ChangeRecord.objects.get(object_id=str(business.policy.id))
    assert change.action == "changed"
    assert change.after["expires_after_hours"] == 24 or change.after["expires_after_hours"] == "24"
    history = client.get(url.replace("change/", "history/"))
    assert history.status_code == 200 and "250.00" in history.content.decode()


def test_a_policy_with_bad_tiers_is_refused_by_the_form(client, business):
    client.force_login(staff_user("administrator"))
    url = f"/admin/approvals/approvalpolicy/{business.policy.id}/change/"
    for tiers in (
        [{"minAmount": "250", "approvers": 1}],
        [{"minAmount": "250.00", "approvers": 4}],
        {"a": 1},
    ):
        answer = client.post(url, _form(business.policy, tiers=json.dumps(tiers)))
        assert answer.status_code == 200  # the form again, with its error
    business.policy.refresh_from_db()
    assert business.policy.tiers[0]["minAmount"] == "1000.00"
    assert not ChangeRecord.objects.filter(object_id=str(business.policy.id)).exists()


def test_approvals_are_listed_and_read_only(api, client, business):
    approval_id = pay(api, business, "1500.00").json()["data"]["approvalId"]
    client.force_login(staff_user("administrator"))
    listed = client.get("/admin/approvals/approval/")
    assert listed.status_code == 200 and approval_id in listed.content.decode()
    page = client.get(f"/admin/approvals/approval/{approval_id}/change/")
    assert page.status_code == 200
    assert 'name="_save"' not in page.content.decode()
    assert client.post(f"/admin/approvals/approval/{approval_id}/delete/", {"post": "yes"}).status_code == 403
    assert client.get("/admin/approvals/approval/add/").status_code == 403
    assert Approval.objects.filter(id=approval_id, status="PENDING_APPROVAL").exists()


def test_an_approval_reads_as_labelled_fields_with_its_amount_and_signatures(api, client, business):
    from tests.approvals.conftest import approve_totp

    approval_id = pay(api, business, "1500.00").json()["data"]["approvalId"]
    approver = business.approvers[0]
    assert approve_totp(api, approver, approval_id).status_code == 200
    approval = Approval.objects.get(id=approval_id)
    client.force_login(staff_user("administrator"))

    listed = client.get("/admin/approvals/approval/").content.decode()
    page = client.get(f"/admin/approvals/approval/{approval_id}/change/").content.decode()

    assert approval.status == "EXECUTED"
    assert '<td class="field-amount_total">1,500.00 GBP</td>' in listed and "Held Ltd" in listed
    # What was approved and what it made, each a labelled row; the payee by name and account.
    assert "<th>Amount</th><td>1,500.00 GBP</td>" in page
    assert "<th>Payee › Name</th><td>Acme Supplies</td>" in page
    assert "<th>Payee › Account number</th><td>55779911</td>" in page
    assert f"<th>Request id</th><td>{approval.result['requestId']}</td>" in page
    assert f"Signed by {approver.user.email} with an authenticator code" in page
    # No JSON in what the pages show (tags and their attributes aside).
    shown = html.unescape(re.sub(r"<[^>]*>", " ", page + listed))
    for raw in ('{"', "{'", '["', "ApprovalSignature object"):
        assert raw not in shown
