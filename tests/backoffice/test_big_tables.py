"""The back office on big tables: counts it can stand behind, searches and
counters that an index answers."""

import re
import uuid

import pytest
from django.contrib.admin.models import CHANGE, LogEntry
from django.contrib.contenttypes.models import ContentType
from django.db import IntegrityError, NotSupportedError, connection, models
from django.db.migrations.executor import MigrationExecutor
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from authn.models import User
from bankapi.backoffice.admin_base import CappedCountPaginator
from bankapi.migration_operations import AddIndexConcurrently
from bankapi.models import Customer, IdempotencyRecord
from events.models import Event
from onboarding.admin import applications_in_review
from onboarding.models import Application
from payments.models import PaymentRequest
from tests.backoffice.conftest import admin_url, pending_payment, staff_user
from tests.backoffice.rows import _events
from tests.conftest import ON_POSTGRES, requires_postgres


def _text(page) -> str:
    """The page as an operator reads it: tags dropped, spaces collapsed."""
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page.content.decode()))


def test_past_the_count_cap_the_list_says_more_than_the_cap_not_a_number(staff_client, customer):
    cap = CappedCountPaginator.CAP
    client = staff_client("administrator")
    _events(customer, cap - Event.objects.count())

    at_cap = _text(client.get(admin_url(Event)))
    _events(customer, 1)
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


def test_a_list_under_the_cap_keeps_its_exact_count(staff_client, customer):
    client = staff_client("administrator")
    _events(customer, 3)
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


def test_an_idempotency_record_is_found_by_the_exact_key_a_client_sent(staff_client, customer):
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


def test_the_admin_log_is_found_by_the_exact_object_id(staff_client, operator):
    sought = _log_entry(operator, str(uuid.uuid4()))
    _log_entry(operator, str(uuid.uuid4()))
    client = staff_client("administrator")

    exact = client.get(admin_url(LogEntry), {"q": sought.object_id})
    upper = client.get(admin_url(LogEntry), {"q": f"  {sought.object_id.upper()} "})
    braced = client.get(admin_url(LogEntry), {"q": "{" + sought.object_id.replace("-", "").upper() + "}"})
    part = client.get(admin_url(LogEntry), {"q": sought.object_id[:8]})

    assert [entry.id for entry in exact.context["cl"].result_list] == [sought.id]
    assert [entry.id for entry in upper.context["cl"].result_list] == [sought.id]
    assert [entry.id for entry in braced.context["cl"].result_list] == [sought.id]
    assert list(part.context["cl"].result_list) == []


def test_an_event_is_found_by_its_resource_id_pasted_in_upper_case(staff_client, account):
    sought, other = pending_payment(account), pending_payment(account)
    client = staff_client("support")

    upper = client.get(admin_url(Event), {"q": str(sought.id).upper()})
    part = client.get(admin_url(Event), {"q": str(sought.id)[:8]})

    found = list(upper.context["cl"].result_list)
    assert found and {event.resource_id for event in found} == {str(sought.id)}
    assert str(other.id) not in upper.content.decode()
    assert list(part.context["cl"].result_list) == []


def test_the_admin_log_is_found_by_a_number_id_too(staff_client, operator):
    sought = _log_entry(operator, "4242")
    _log_entry(operator, "42")
    client = staff_client("administrator")

    found = client.get(admin_url(LogEntry), {"q": "4242"})

    assert [entry.id for entry in found.context["cl"].result_list] == [sought.id]


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
def test_the_applications_in_review_counter_reads_the_stage_index(db):
    with CaptureQueriesContext(connection) as queries:
        applications_in_review()
    _discourage_sequential_scans()

    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN " + queries[-1]["sql"])
        plan = "\n".join(row[0] for row in cursor.fetchall())

    assert "application_stage_idx" in plan


@requires_postgres
def test_the_back_office_searches_read_their_indexes(rf, db):
    from django.contrib import admin

    request = rf.get("/")
    searches = [
        (IdempotencyRecord, str(uuid.uuid4()), "idempotency_key_idx"),
        # Pasted in upper case: sought in the stored lower case, still by the index.
        (LogEntry, str(uuid.uuid4()).upper(), "admin_log_object_id_idx"),
    ]
    plans = {}
    for model, term, index in searches:
        model_admin = admin.site._registry[model]
        found, _ = model_admin.get_search_results(request, model.objects.all(), term)
        _discourage_sequential_scans()
        plans[index] = found.explain()

    assert {index: index in plan for index, plan in plans.items()} == dict.fromkeys(plans, True)


# The index migrations, newest first (they are undone in this order), and the
# migration before each.
INDEX_MIGRATIONS = {
    "onboarding": ("0002_application_stage_index", "0001_initial"),
    "bankapi": ("0003_admin_search_indexes", "0002_backoffice_groups"),
}
INDEXES = {
    "application_stage_idx": (Application._meta.db_table, "workflow_stage"),
    "idempotency_key_idx": (IdempotencyRecord._meta.db_table, "key"),
    "admin_log_object_id_idx": (LogEntry._meta.db_table, "object_id"),
}
CONCURRENT_CREATE, CONCURRENT_DROP = (
    "CREATE INDEX CONCURRENTLY IF NOT EXISTS",
    "DROP INDEX CONCURRENTLY IF EXISTS",
)


def _create(command: str, name: str) -> str:
    table, column = INDEXES[name]
    return f'{command} "{name}" ON "{table}" ("{column}")'


def _migrate(targets: list[tuple[str, str]] | None = None) -> list[str]:
    """Migrate the test database to `targets` (default: the latest migrations) as
    `manage.py migrate` does; answer the SQL statements run."""
    executed: list[str] = []

    def record(execute, sql, params, many, context):
        executed.append(sql)
        return execute(sql, params, many, context)

    executor = MigrationExecutor(connection)
    with connection.execute_wrapper(record):
        executor.migrate(targets or executor.loader.graph.leaf_nodes())
    return executed


def _index_statements(executed: list[str]) -> list[str]:
    names = "|".join(INDEXES)
    return [sql for sql in executed if re.search(rf"\bINDEX\b.*\b({names})\b", sql)]


def _indexed() -> dict[str, bool]:
    return {name: [column] in _indexed_columns(table) for name, (table, column) in INDEXES.items()}


@pytest.fixture
def migrations_restored(transactional_db):
    """Index migrations are undone and redone outside a transaction (PostgreSQL
    builds concurrently only there); the database is migrated back to the latest
    whatever the test does."""
    yield
    _migrate()


def test_the_index_migrations_run_outside_a_transaction(db):
    executor = MigrationExecutor(connection)

    atomic = {
        app: executor.loader.get_migration(app, name).atomic for app, (name, _) in INDEX_MIGRATIONS.items()
    }

    assert atomic == {"onboarding": False, "bankapi": False}


@requires_postgres
def test_a_concurrent_index_in_a_transaction_is_refused_with_the_fix(db):
    state = MigrationExecutor(connection).loader.project_state(("bankapi", INDEX_MIGRATIONS["bankapi"][0]))
    operation = AddIndexConcurrently(
        model_name="idempotencyrecord", index=models.Index(fields=["owner_id"], name="idempotency_owner_idx")
    )

    with pytest.raises(NotSupportedError, match="set `atomic = False` on the migration"):
        with connection.schema_editor() as editor:
            operation.database_forwards("bankapi", editor, state, state)


def test_the_index_migrations_reverse_and_apply_again(migrations_restored):
    undone = _migrate([(app, before) for app, (_, before) in INDEX_MIGRATIONS.items()])
    after_undo = _indexed()
    redone = _migrate()

    create, drop = (CONCURRENT_CREATE, CONCURRENT_DROP) if ON_POSTGRES else ("CREATE INDEX", "DROP INDEX")
    assert after_undo == dict.fromkeys(INDEXES, False)
    assert _indexed() == dict.fromkeys(INDEXES, True)
    assert _index_statements(undone) == [
        f'{drop} "application_stage_idx"',
        f'{drop} "admin_log_object_id_idx"',
        f'{drop} "idempotency_key_idx"',
    ]
    assert _index_statements(redone) == [
        _create(create, "idempotency_key_idx"),
        _create(create, "admin_log_object_id_idx"),
        _create(create, "application_stage_idx"),
    ]


def _index_flags(name: str) -> tuple[bool, bool] | None:
    """(valid, unique) of a PostgreSQL index, None if there is none."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT indisvalid, indisunique FROM pg_index WHERE indexrelid = to_regclass(%s)", [name]
        )
        row = cursor.fetchone()
    return (row[0], row[1]) if row else None


@requires_postgres
def test_a_rerun_after_a_failed_concurrent_build_replaces_the_invalid_index(migrations_restored):
    migration, before = INDEX_MIGRATIONS["bankapi"]
    _migrate([("bankapi", before)])
    operator = staff_user(None)
    twice = str(uuid.uuid4())
    _log_entry(operator, twice)
    _log_entry(operator, twice)
    # A first run that built the key's index, then failed building the admin
    # log's (here: unique over a duplicate): PostgreSQL keeps the half-built
    # index, marked INVALID.
    with connection.cursor() as cursor:
        cursor.execute(_create("CREATE INDEX CONCURRENTLY", "idempotency_key_idx"))
        with pytest.raises(IntegrityError):
            cursor.execute(_create("CREATE UNIQUE INDEX CONCURRENTLY", "admin_log_object_id_idx"))
    left_by_the_failure = _index_flags("admin_log_object_id_idx")

    rerun = _migrate([("bankapi", migration)])

    assert left_by_the_failure == (False, True)
    assert _index_flags("admin_log_object_id_idx") == (True, False)
    assert _index_flags("idempotency_key_idx") == (True, False)
    assert _index_statements(rerun) == [
        _create(CONCURRENT_CREATE, "idempotency_key_idx"),
        f'{CONCURRENT_DROP} "admin_log_object_id_idx"',
        _create(CONCURRENT_CREATE, "admin_log_object_id_idx"),
    ]
    assert [entry.object_id for entry in LogEntry.objects.filter(object_id=twice)] == [twice, twice]
