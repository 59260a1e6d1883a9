"""Every admin list renders in a constant number of queries, whatever it holds."""

import pytest
from django.contrib import admin
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tests.backoffice.rows import MAKERS, ROWS, owners_make

# Session, user, groups' permissions, the capped count, the page, filters' choices,
# a little slack: what a list costs however many rows the page holds.
MAX_QUERIES = 10


def _registered() -> list[str]:
    return sorted(f"{model._meta.app_label}.{model._meta.model_name}" for model in admin.site._registry)


def test_every_registered_model_has_rows_for_the_query_count_test():
    assert [label for label in _registered() if label not in MAKERS] == []


@pytest.mark.parametrize("label", _registered())
def test_changelist_queries_do_not_grow_with_rows(label, staff_client, db, django_assert_max_num_queries):
    owners = owners_make()
    client = staff_client("administrator")
    url = "/admin/{}/{}/".format(*label.split("."))
    client.get(url)  # warm caches (content types, permissions)

    with CaptureQueriesContext(connection) as before:
        assert client.get(url).status_code == 200
    MAKERS[label](owners)
    with django_assert_max_num_queries(MAX_QUERIES):
        page = client.get(url)

    assert page.status_code == 200
    assert page.context["cl"].result_count >= ROWS
    assert len(page.context["cl"].result_list) == min(
        page.context["cl"].list_per_page, page.context["cl"].result_count
    )
    with CaptureQueriesContext(connection) as after:
        client.get(url)
    assert len(after) == len(before)


ODD_SEARCHES = [
    "'; drop table x; --",
    "9" * 40,
    "-1",
    "x" * 500,
    "%_",
    "00000000-0000-0000-0000-000000000000",
    "é",
]


@pytest.mark.parametrize("label", _registered())
def test_any_search_text_answers_the_page(label, staff_client, db):
    client = staff_client("administrator")
    url = "/admin/{}/{}/".format(*label.split("."))

    statuses = [client.get(url, {"q": text}).status_code for text in ODD_SEARCHES]

    assert statuses == [200] * len(ODD_SEARCHES)


def test_every_admin_action_names_the_permission_it_needs():
    """Django runs an action that names no permission for anyone who may view the list."""
    open_actions = [
        f"{model._meta.label}.{getattr(action, '__name__', action)}"
        for model, model_admin in admin.site._registry.items()
        for action in model_admin.actions or ()
        if not getattr(
            getattr(model_admin, action, action) if isinstance(action, str) else action,
            "allowed_permissions",
            (),
        )
    ]
    assert open_actions == []
