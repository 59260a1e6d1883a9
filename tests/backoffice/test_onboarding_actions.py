"""Onboarding from the admin: workflow stages (compliance), sandbox verification
outcomes (operations), legal documents uploaded and a set published (administrator)."""

import hashlib
import re

from django.contrib.admin.models import LogEntry
from django.core.files.uploadedfile import SimpleUploadedFile

from onboarding.models import Application, LegalDocument, LegalDocumentSet, VerificationStep
from tests.support.factories_onboarding import application_of, company_application

APPLICATIONS = "/admin/onboarding/application/"
SETS = "/admin/onboarding/legaldocumentset/"
STEPS = "/admin/onboarding/verificationstep/"


def _application(customer, stage: str) -> Application:
    return application_of(customer, workflow_stage=stage)


def _stage(application) -> str:
    return Application.objects.get(id=application.id).workflow_stage


def _run(client, url, action, rows):
    return client.post(url, {"action": action, "index": "0", "_selected_action": [str(r.pk) for r in rows]})


def test_compliance_moves_an_application_through_review(staff_client, customer):
    application = _application(customer, "IN_REVIEW")
    client = staff_client("compliance")

    response = _run(client, APPLICATIONS, "move_to_approved", [application])

    assert response.status_code == 302
    assert _stage(application) == "APPROVED"
    (entry,) = LogEntry.objects.filter(object_id=str(application.id))
    assert entry.get_change_message() == "Moved from IN_REVIEW to APPROVED"


def test_a_move_the_workflow_forbids_is_refused_and_named(staff_client, customer):
    application = _application(customer, "NEW")
    client = staff_client("compliance")

    response = _run(client, APPLICATIONS, "move_to_approved", [application])

    assert response.status_code == 302
    assert _stage(application) == "NEW"
    messages = [str(m) for m in response.wsgi_request._messages]
    assert any("Left unchanged" in m and "cannot move to APPROVED" in m for m in messages)
    assert not LogEntry.objects.filter(object_id=str(application.id)).exists()


def test_support_and_operations_cannot_move_applications(staff_client, customer):
    application = _application(customer, "IN_REVIEW")
    for group in ("support", "operations"):
        client = staff_client(group)
        page = client.get(APPLICATIONS)
        _run(client, APPLICATIONS, "move_to_rejected", [application])
        assert page.status_code == 200 and b"move_to_rejected" not in page.content
        client.logout()
    assert _stage(application) == "IN_REVIEW"


def test_the_dashboard_counts_applications_in_review(staff_client, customer):
    _application(customer, "IN_REVIEW")
    client = staff_client("compliance")

    body = client.get("/admin/").content.decode()

    assert "Applications in review: 1" in body
    assert "/admin/onboarding/application/?workflow_stage__exact=IN_REVIEW" in body


def _step_form(application, **fields) -> dict:
    return {
        "application": str(application.id),
        "ubo": "",
        "step": "SELFIE",
        "status": "FAILED",
        "rejection_type": "RETRY",
        "comments": "Blurred",
        "doc_country": "GB",
        "doc_type": "PASSPORT",
        "position": "3",
        **fields,
    }


def test_operations_sets_a_sandbox_verification_outcome_and_the_api_reports_it(staff_client, customer, api):
    application = _application(customer, "SUBMITTED")
    client = staff_client("operations")

    response = client.post(f"{STEPS}add/", _step_form(application))

    assert response.status_code == 302
    step = VerificationStep.objects.get(application=application, step="SELFIE")
    assert (step.status, step.rejection_type) == ("FAILED", "RETRY")
    # The provider reported: a submitted application goes to review.
    assert _stage(application) == "IN_REVIEW"
    assert LogEntry.objects.filter(object_id=str(step.id)).exists()


def test_a_failed_step_without_a_rejection_type_is_refused(staff_client, customer):
    application = _application(customer, "SUBMITTED")
    client = staff_client("operations")

    response = client.post(f"{STEPS}add/", _step_form(application, rejection_type=""))

    assert response.status_code == 200 and "rejection type" in response.content.decode()
    assert not VerificationStep.objects.filter(application=application, step="SELFIE").exists()


def test_support_cannot_set_verification_outcomes(staff_client, customer):
    application = _application(customer, "SUBMITTED")
    client = staff_client("support")

    response = client.post(f"{STEPS}add/", _step_form(application))

    assert response.status_code == 403
    assert not VerificationStep.objects.filter(application=application, step="SELFIE").exists()


def _new_set_form(program_id: str, content: bytes) -> dict:
    return {
        "program": program_id,
        "sandbox": "on",
        "version": "2027-01",
        "provider": "sandbox",
        "last_updated": "2027-01-01",
        "documents-TOTAL_FORMS": "1",
        "documents-INITIAL_FORMS": "0",
        "documents-MIN_NUM_FORMS": "0",
        "documents-MAX_NUM_FORMS": "1000",
        "documents-0-key": "terms",
        "documents-0-version": "3",
        "documents-0-name": "Terms and conditions",
        "documents-0-required": "on",
        "documents-0-applicable_to": '["consumer"]',
        "documents-0-effective_date": "2027-01-01",
        "documents-0-upload": SimpleUploadedFile("terms.txt", content, content_type="text/plain"),
    }


def test_administrator_uploads_a_new_set_and_publishes_it(staff_client, customer, customer_id_auth, api):
    content = b"Terms, version 3.\\n"
    program_id = str(customer.program_id)
    application_id = application_of(customer).id
    client = staff_client("administrator")

    created = client.post(f"{SETS}add/", _new_set_form(program_id, content))
    new_set = LegalDocumentSet.objects.get(program_id=program_id, version="2027-01")
    document = LegalDocument.objects.get(document_set=new_set)
    published = _run(client, SETS, "publish", [new_set])

    assert created.status_code == 302
    assert document.hash == "sha256:" + hashlib.sha256(content).hexdigest()
    assert published.status_code == 302
    current = LegalDocumentSet.objects.filter(program_id=program_id, sandbox=True, is_current=True)
    assert list(current) == [new_set]
    assert LogEntry.objects.filter(object_id=str(new_set.id), change_message__contains="Published").exists()
    legal = api.get(f"/v1/applications/{application_id}/documents/legal", **customer_id_auth)
    assert legal.status_code == 200, legal.content
    assert re.search(r'"2027-01"', legal.content.decode())


def test_an_empty_set_is_not_published_and_compliance_cannot_publish(staff_client, program):
    program_id = program.id
    empty = LegalDocumentSet.objects.create(program_id=program_id, version="empty", last_updated="2027-01-01")
    before = list(LegalDocumentSet.objects.filter(program_id=program_id, is_current=True))

    refused = _run(staff_client("administrator"), SETS, "publish", [empty])
    forbidden = _run(staff_client("compliance"), SETS, "publish", [empty])

    assert refused.status_code == 302 and forbidden.status_code in (200, 302, 403)
    assert list(LegalDocumentSet.objects.filter(program_id=program_id, is_current=True)) == before


UBOS = "/admin/onboarding/ubo/"


def _sent_ubos(customer):
    from onboarding.models import Ubo

    ubos = list(Ubo.objects.filter(application=company_application(customer)).order_by("id"))
    Ubo.objects.filter(id__in=[u.id for u in ubos]).update(status=Ubo.Status.LINK_SENT)
    return ubos


def test_compliance_resets_a_ubos_verification(staff_client, business):
    from onboarding.models import Ubo

    first, second = _sent_ubos(business.customer)
    generation = first.link_generation

    response = _run(staff_client("compliance"), UBOS, "reset_verification", [first])

    assert response.status_code == 302
    first.refresh_from_db()
    assert (first.status, first.link_generation) == (Ubo.Status.PENDING, generation + 1)
    assert Ubo.objects.get(id=second.id).status == Ubo.Status.LINK_SENT
    (entry,) = LogEntry.objects.filter(object_id=str(first.id))
    assert entry.get_change_message() == "Verification reset to PENDING"


def test_support_cannot_reset_a_ubo(staff_client, business):
    from onboarding.models import Ubo

    first, _ = _sent_ubos(business.customer)

    response = _run(staff_client("support"), UBOS, "reset_verification", [first])

    assert Ubo.objects.get(id=first.id).status == Ubo.Status.LINK_SENT
    # The action is not offered to support: the list comes back and nothing moves.
    assert response.status_code == 200
    assert not LogEntry.objects.filter(object_id=str(first.id)).exists()
