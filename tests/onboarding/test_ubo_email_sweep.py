"""A UBO verification e-mail whose task was lost (the broker away when the action
committed) is sent by the beat sweep, once, with a link that works."""

import logging
from datetime import UTC, datetime

import pytest
import time_machine
from django.core import mail

from config.celery import app
from onboarding.models import Ubo
from onboarding.services.ubo_emails import ubo_email_settled
from onboarding.tasks import resend_lost_ubo_emails
from tests.onboarding.test_ubos import REJECT, SUCCESS, actions_url
from tests.support.broker import broker_away  # noqa: F401 - a fixture


@pytest.fixture
def business_ubos(business_applicant) -> list[Ubo]:
    return business_applicant.ubos


@pytest.mark.usefixtures("broker_away")
def test_an_email_not_queued_is_sent_by_the_sweep(
    api, business_applicant, business_id_token, business_ubos, caplog, django_capture_on_commit_callbacks
):
    ubo = business_ubos[0]
    body = {
        "action": "UBO_VERIFICATION_EMAIL",
        "uboIds": [str(ubo.id)],
        "redirectSuccessUrl": SUCCESS,
        "redirectRejectUrl": REJECT,
    }
    caplog.set_level(logging.INFO)
    url = actions_url(business_applicant.application_id)
    with django_capture_on_commit_callbacks(execute=True):
        answer = api.post(url, body, format="json", **business_id_token)

    # The action committed: answered as without the outage, the e-mail not sent.
    assert answer.status_code == 200, answer.content
    assert mail.outbox == []
    assert Ubo.objects.get(id=ubo.id).status == "LINK_SENT"
    assert not [record for record in caplog.records if record.exc_info]

    # The broker back, the sweep sends it (once: the next pass finds nothing).
    app.conf.task_always_eager = True
    assert resend_lost_ubo_emails(0) == 1
    assert [message.to for message in mail.outbox] == [[ubo.email]]
    link = mail.outbox[0].body.split("\n\n")[2].strip()
    assert link.startswith("http://testserver/v1/ubo-verification/")
    assert resend_lost_ubo_emails(0) == 0
    # The link it sent opens the hosted flow.
    opened = api.get(link.removeprefix("http://testserver"))
    assert opened.status_code == 302, opened.content


def test_the_sweep_leaves_sent_reset_and_recent_emails_alone(
    api, business_applicant, business_id_token, business_ubos, django_capture_on_commit_callbacks
):
    body = {
        "action": "UBO_VERIFICATION_EMAIL",
        "uboIds": [str(ubo.id) for ubo in business_ubos],
        "redirectSuccessUrl": SUCCESS,
        "redirectRejectUrl": REJECT,
    }
    url = actions_url(business_applicant.application_id)
    with django_capture_on_commit_callbacks(execute=True):
        answer = api.post(url, body, format="json", **business_id_token)
    assert answer.status_code == 200
    sent = len(mail.outbox)
    assert sent == len(business_ubos)
    # Sent: nothing for the sweep, now or later.
    assert resend_lost_ubo_emails(0) == 0
    # Unsent but recent (its task may still be on its way), or reset since: left alone.
    Ubo.objects.filter(id=business_ubos[0].id).update(email_pending={"expiresAt": 1, "successUrl": SUCCESS})
    assert resend_lost_ubo_emails() == 0
    assert len(mail.outbox) == sent


def test_beat_runs_the_sweep(settings):
    tasks = {entry["task"] for entry in settings.CELERY_BEAT_SCHEDULE.values()}
    assert resend_lost_ubo_emails.name in tasks


@pytest.mark.usefixtures("broker_away")
def test_a_lost_email_is_taken_up_within_90_seconds_and_a_scheduled_retry_is_waited_for(
    api, business_applicant, business_id_token, business_ubos, django_capture_on_commit_callbacks
):
    first, second = business_ubos[0], business_ubos[1]
    body = {
        "action": "UBO_VERIFICATION_EMAIL",
        "uboIds": [str(first.id), str(second.id)],
        "redirectSuccessUrl": SUCCESS,
        "redirectRejectUrl": REJECT,
    }
    with time_machine.travel(datetime.now(UTC), tick=False) as clock:
        with django_capture_on_commit_callbacks(execute=True):
            answer = api.post(
                actions_url(business_applicant.application_id), body, format="json", **business_id_token
            )
        assert answer.status_code == 200, answer.content
        assert mail.outbox == []
        # The second's task ran once and failed: its retry is due in 8 minutes.
        ubo_email_settled(str(second.id), done=False, retry_in_seconds=480)
        app.conf.task_always_eager = True

        # The task may still be on its way for a minute: nothing is sent again.
        clock.shift(59)
        assert resend_lost_ubo_emails() == 0
        # Past the minute, the beat sweep (every 30 s) sends it: within 90 s of the action.
        clock.shift(30)
        assert resend_lost_ubo_emails() == 1
        assert [message.to for message in mail.outbox] == [[first.email]]

        # The retry is waited for until it is itself a minute late.
        clock.shift(480 - 89 + 59)
        assert resend_lost_ubo_emails() == 0
        clock.shift(2)
        assert resend_lost_ubo_emails() == 1
        assert [message.to for message in mail.outbox] == [[first.email], [second.email]]
        assert resend_lost_ubo_emails() == 0


def test_beat_sweeps_lost_emails_every_30_seconds(settings):
    schedules = [entry["schedule"] for entry in settings.CELERY_BEAT_SCHEDULE.values()]
    tasks = [entry["task"] for entry in settings.CELERY_BEAT_SCHEDULE.values()]
    assert schedules[tasks.index(resend_lost_ubo_emails.name)] == 30.0
