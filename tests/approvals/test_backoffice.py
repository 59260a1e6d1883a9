"""Back office: policies edited with their changes in the audit history, checked
as the API reads them; approvals listed and shown read-only."""

import json

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
