"""The back office on big tables: counts it can stand behind, searches and
counters that an index answers."""

import re
import uuid

import pytest
from django.contrib.admin.models import CHANGE, LogEntry
from django.contrib.contenttypes.models import ContentType
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from authn.models import User
from bankapi.admin_base import CappedCountPaginator
from bankapi.models import Customer, IdempotencyRecord
from events.models import Event
from onboarding.admin import applications_in_review
from onboarding.models import Application
from payments.models import PaymentRequest
from tests.backoffice.conftest import admin_url
from tests.backoffice.rows import _events
from tests.conftest import requires_postgres


def _text(page) -> str:
    """The page as an operator reads it: tags dropped, spaces collapsed."""
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page.content.decode()))


def test_past_the_count_cap_the_list_says_more_than_the_cap_not_a_number(staff_client, sandbox):
    cap = CappedCountPaginator.CAP
    client = staff_client("administrator")
    _events(sandbox, cap - Event.objects.count())

    at_cap = _text(client.get(admin_url(Event)))
    _events(sandbox, 1)
    past_cap = _text(client.get(admin_url(Event)))

    assert f" {cap} results " in at_cap
    assert f" {cap} events " in at_cap
    assert f"Select all {cap} events" in at_cap
    assert " more than 10,000 results " in past_cap
    assert " more than 10,000 events " in past_cap
    assert "Select all more than 10,000 events" in past_cap
    assert "All more than 10,000 selected" in past_cap
    assert f"{cap + 1} results" not in past_cap
    assert f"{cap + 1} events" not in past_cap


def test_a_list_under_the_cap_keeps_its_exact_count(staff_client, sandbox):
    client = staff_client("administrator")
    _events(sandbox, 3)
    expected = Event.objects.count()

    text = _text(client.get(admin_url(Event)))

    assert f" {expected} results " in text
    assert f" {expected} events " in text
    assert "more than" not in text


def _idempotency_record(customer: Customer, key: uuid.UUID) -> IdempotencyRecord:
    return IdempotencyRecord.objects.create(
        program_id=customer.program_id,
        owner_kind="customer",
        owner_id=customer.id,
        operation="payments.create",
        key=key,
        fingerprint={},
        claimed_at=timezone.now(),
    )


def test_an_idempotency_record_is_found_by_the_exact_key_a_client_sent(staff_client, sandbox):
    customer = Customer.objects.get(id=sandbox["customer"]["customerId"])
    sought = _idempotency_record(customer, uuid.uuid4())
    _idempotency_record(customer, uuid.uuid4())
    client = staff_client("administrator")

    by_key = client.get(admin_url(IdempotencyRecord), {"q": str(sought.key).upper()})
    by_number = client.get(admin_url(IdempotencyRecord), {"q": str(sought.id)})
    by_part = client.get(admin_url(IdempotencyRecord), {"q": str(sought.key)[:8]})

    assert [record.id for record in by_key.context["cl"].result_list] == [sought.id]
    assert [record.id for record in by_number.context["cl"].result_list] == [sought.id]
    assert list(by_part.context["cl"].result_list) == []


def _log_entry(operator: User, object_id: str) -> LogEntry:
    return LogEntry.objects.create(
        user=operator,
        content_type=ContentType.objects.get_for_model(PaymentRequest),
        object_id=object_id,
        object_repr="Payment",
        action_flag=CHANGE,
        change_message="Approved in compliance review: documents checked",
    )


def test_the_admin_log_is_found_by_the_exact_object_id(staff_client, sandbox):
    operator = User.objects.get(email=sandbox["operator"]["email"], program=None)
    sought = _log_entry(operator, str(uuid.uuid4()))
    _log_entry(operator, str(uuid.uuid4()))
    client = staff_client("administrator")

    exact = client.get(admin_url(LogEntry), {"q": sought.object_id})
    part = client.get(admin_url(LogEntry), {"q": sought.object_id[:8]})

    assert [entry.id for entry in exact.context["cl"].result_list] == [sought.id]
    assert list(part.context["cl"].result_list) == []


def _indexed_columns(table: str) -> list[list[str]]:
    with connection.cursor() as cursor:
        constraints = connection.introspection.get_constraints(cursor, table)
    return [spec["columns"] for spec in constraints.values() if spec["index"]]


@pytest.mark.parametrize(
    ("table", "column"),
    [
        (Application._meta.db_table, "workflow_stage"),
        (IdempotencyRecord._meta.db_table, "key"),
        (LogEntry._meta.db_table, "object_id"),
    ],
)
def test_the_migrations_index_what_the_back_office_looks_up(db, table, column):
    assert [column] in _indexed_columns(table)


def _discourage_sequential_scans() -> None:
    # The test tables are tiny, where a sequential scan is always cheapest:
    # discourage it for this transaction, so a plan shows whether an index
    # could answer at all.
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")


@requires_postgres
def test_the_applications_in_review_counter_reads_the_stage_index(db, sandbox):
    with CaptureQueriesContext(connection) as queries:
        applications_in_review()
    _discourage_sequential_scans()

    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN " + queries[-1]["sql"])
        plan = "\n".join(row[0] for row in cursor.fetchall())

    assert "application_stage_idx" in plan


@requires_postgres
def test_the_back_office_searches_read_their_indexes(rf, db, sandbox):
    from django.contrib import admin

    request = rf.get("/")
    searches = [
        (IdempotencyRecord, str(uuid.uuid4()), "idempotency_key_idx"),
        (LogEntry, str(uuid.uuid4()), "admin_log_object_id_idx"),
    ]
    plans = {}
    for model, term, index in searches:
        model_admin = admin.site._registry[model]
        found, _ = model_admin.get_search_results(request, model.objects.all(), term)
        _discourage_sequential_scans()
        plans[index] = found.explain()

    assert {index: index in plan for index, plan in plans.items()} == dict.fromkeys(plans, True)
