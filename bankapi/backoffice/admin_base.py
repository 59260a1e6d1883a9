"""Building blocks every app's admin uses, so that each screen stays fast on
tables of millions of rows and each operator action goes through a service and
into the admin log."""

import uuid
from collections.abc import Callable, Iterable
from decimal import Decimal
from typing import Any, TypeVar

from django import forms
from django.conf import settings
from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.contrib.admin.utils import get_fields_from_path
from django.core.exceptions import ValidationError
from django.core.paginator import Paginator
from django.db import connection, models
from django.db.models import Q, QuerySet
from django.template.response import TemplateResponse
from django.utils.functional import cached_property

from bankapi.errors import ApiError


def money(amount: Decimal | None, currency: str) -> str:
    """An amount as operators read it: grouped digits, two places, its currency."""
    if amount is None:
        return "-"
    return f"{amount:,.2f} {currency}"


_RowT = TypeVar("_RowT", bound=models.Model)


class CappedCountPaginator(Paginator):
    """Counts at most CAP rows: `SELECT COUNT(*)` over a LIMIT subquery.

    Django's paginator counts the whole (filtered) table for every page; over
    millions of ledger rows that is the slowest query of the page. Past the cap
    the page links stop at CAP rows: narrow the list with a filter or a search.
    The changelist then shows `count_text` ("more than 10,000") where Django
    would show the count (bankapi/templates/admin/: search_form.html,
    pagination.html, actions.html).
    """

    CAP = 10_000

    @cached_property
    def count(self) -> int:
        rows: Any = self.object_list  # a queryset in admin changelists
        return int(rows[: self.CAP + 1].count())

    @property
    def capped(self) -> bool:
        return self.count > self.CAP

    @property
    def count_text(self) -> str:
        """The count as far as it is known: past the cap, only that it is more."""
        return f"more than {self.CAP:,}" if self.capped else str(self.count)


class ExactSearchMixin:
    """Search by exact values (ids, e-mail, an IBAN) and, for the lists of people,
    by names and e-mails containing the text.

    `exact_search_fields` are field paths. A search text that cannot be a value
    of a field (not a UUID, a number out of range, too long) is skipped for that
    field, so any text answers the page, matching nothing at worst.

    `id_text_fields` are those of them that are text holding record ids as
    `str(pk)` (the admin log's object id): a UUID is stored there in lower case,
    so a UUID-looking term is sought in that form (still one exact, indexed
    lookup), whatever the case it was pasted in.

    `compact_search_fields` are those of them written without spaces and in
    capitals (an IBAN): a term pasted as printed ("gb29 nwbk ...") is sought
    in that form.

    `contains_search_fields` are text fields a person is found by (a name, an
    e-mail): each word of the text must be in one of them, whatever the case
    ("jane smith" finds first name Jane, last name Smith). Such a search reads
    the list's table through (no index answers "contains"): it is offered on
    the lists of people only, which a caller's name is all an operator has to
    find them by. Either way, the list records the search text with the rows it
    showed (the audit's staff-view records).
    """

    exact_search_fields: tuple[str, ...] = ()
    id_text_fields: tuple[str, ...] = ()
    compact_search_fields: tuple[str, ...] = ()
    contains_search_fields: tuple[str, ...] = ()
    model: type[models.Model]  # the ModelAdmin's

    def get_search_fields(self, request) -> tuple[str, ...]:
        return self.exact_search_fields + self.contains_search_fields

    def get_search_results(self, request, queryset, search_term: str):
        term = search_term.strip()
        if not term:
            return queryset, False
        condition = Q(pk__in=[])
        for path in self.exact_search_fields:
            value = _search_value(self.model, path, _field_text(self, path, term))
            if value is not None:
                condition |= Q(**{path: value})
        words = term.split()
        if self.contains_search_fields and len(words) <= MAX_SEARCH_WORDS and len(term) <= MAX_CONTAINS_TEXT:
            every_word = Q()
            for word in words:
                any_field = Q(pk__in=[])
                for path in self.contains_search_fields:
                    any_field |= Q(**{f"{path}__icontains": word})
                every_word &= any_field
            condition |= every_word
        return queryset.filter(condition), False


# A "contains" search of longer text, or of more words, cannot name a person: it
# matches nothing rather than build a long query.
MAX_SEARCH_WORDS = 5
MAX_CONTAINS_TEXT = 200


def _field_text(model_admin: ExactSearchMixin, path: str, term: str) -> str:
    if path in model_admin.id_text_fields:
        return _uuid_text(term)
    if path in model_admin.compact_search_fields:
        return "".join(term.split()).upper()
    return term


def _uuid_text(term: str) -> str:
    """A UUID-looking term as `str(uuid)` writes it (lower case, hyphenated); any
    other term as it is."""
    try:
        return str(uuid.UUID(term))
    except ValueError:
        return term


def _search_value(model, path: str, term: str):
    field = get_fields_from_path(model, path)[-1]
    if isinstance(field, models.ForeignKey):
        field = field.target_field
    try:
        value = field.to_python(term)
    except ValidationError:
        return None
    if isinstance(field, models.IntegerField):
        low, high = connection.ops.integer_field_range(field.get_internal_type())
        if (low is not None and value < low) or (high is not None and value > high):
            return None
    if isinstance(field, models.CharField):
        if field.max_length and len(value) > field.max_length:
            return None
        if isinstance(field, models.EmailField):
            value = value.lower()
    return value


# The models a row's tenancy links to: whose row it is.
_OWNER_MODELS = ("bankapi.Program", "bankapi.Custodian", "bankapi.Customer", "bankapi.Account")


def tenancy_fields(model: type[models.Model]) -> tuple[str, ...]:
    """The fields of `model` that say which tenant a row belongs to: its program
    and environment (`program`, `sandbox`) and every link to a row that owns it
    (a program, custodian, customer, account or user)."""
    owners = {*_OWNER_MODELS, settings.AUTH_USER_MODEL}
    names = []
    for field in model._meta.concrete_fields:
        related = field.related_model if field.is_relation else None
        label = related._meta.label if related is not None and not isinstance(related, str) else None
        if field.name in ("program", "sandbox") or label in owners:
            names.append(field.name)
    return tuple(names)


class TenancyFixedMixin:
    """Tenancy is set when a row is made and never changes: on a change form every
    tenancy field (`tenancy_fields`) is read-only, so no operator can move a row
    to another program, out of the sandbox, or to another owner (its users
    would keep signing in to the old tenant). An add form, where the admin may
    add, still sets them. `tests/backoffice/test_tenancy_read_only.py` walks every
    registered admin, so a new one cannot leave them editable."""

    model: type[models.Model]  # the ModelAdmin's

    def get_readonly_fields(self, request, obj=None):
        fields = tuple(super().get_readonly_fields(request, obj))  # type: ignore[misc]
        if obj is None:
            return fields
        return fields + tuple(name for name in tenancy_fields(self.model) if name not in fields)


class ReadOnlyModelAdmin(admin.ModelAdmin):
    """An admin screen to look at records that change only through services.

    Money records (payments, schedules, quotes, the ledger) must move through the
    services that lock, post and record; a form edit would bypass all of that.
    """

    show_full_result_count = False
    paginator = CappedCountPaginator

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


class ReasonForm(forms.Form):
    reason = forms.CharField(
        max_length=200,
        strip=True,
        widget=forms.Textarea(attrs={"rows": 3, "cols": 60}),
        help_text="Recorded on each record and in the admin log.",
    )


def action_with_reason(
    modeladmin: admin.ModelAdmin,
    request,
    queryset: "QuerySet[_RowT]",
    *,
    title: str,
    apply: Callable[[_RowT, str], str],
    form_class: type[forms.Form] = ReasonForm,
) -> TemplateResponse | None:
    """Run an action that needs a reason, asked on an intermediate page.

    Like Django's `delete_selected`: the first post shows a page listing the
    selected rows and a `reason` field; it posts back to the changelist with
    `action`, `_selected_action`, `post=yes` and `reason`. Without a valid reason
    the page comes back and nothing changes. The page lists the selected rows by
    the model admin's `confirm_description(obj)` when it has one (what an
    operator must see to decide: labelled columns), else by their names.
    `apply(obj, reason)` calls the
    domain service and answers what to write in the admin log. `form_class`
    (a form with one `reason` field) says what a valid reason is.
    """
    posted = request.POST.get("post") == "yes"
    form = form_class(request.POST if posted else None)
    if posted and form.is_valid():
        apply_each(modeladmin, request, queryset, lambda obj: apply(obj, form.cleaned_data["reason"]))
        return None
    describe = getattr(modeladmin, "confirm_description", None)
    described = [describe(obj) for obj in queryset] if describe else []
    context = {
        **modeladmin.admin_site.each_context(request),
        "title": title,
        "objects": queryset,
        # What the operator confirms, a row a record: (label, text) pairs from
        # the screen's `confirm_description(obj)`, else the record's name.
        "headings": [label for label, _ in described[0]] if described else [],
        "described": [[text for _, text in row] for row in described],
        "opts": modeladmin.model._meta,
        "action": request.POST.get("action", ""),
        "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
        "form": form,
        "media": modeladmin.media,
    }
    request.current_app = modeladmin.admin_site.name
    return TemplateResponse(request, "admin/bankapi/action_reason.html", context)


def apply_each(
    modeladmin: admin.ModelAdmin,
    request,
    objects: Iterable[_RowT],
    apply: Callable[[_RowT], str],
) -> None:
    """Call the service for each selected row; log each change, report refusals.

    A row the service refuses (its state moved on meanwhile, a rule says no) is
    left as it is and named in the message; the others go on.
    """
    done, refused = 0, []
    for obj in objects:
        try:
            message = apply(obj)
        except ApiError as error:
            refused.append(f"{obj}: {error.message}")
            continue
        modeladmin.log_change(request, obj, message)
        done += 1
    if done:
        modeladmin.message_user(request, f"{done} done.", messages.SUCCESS)
    for refusal in refused:
        modeladmin.message_user(request, f"Left unchanged: {refusal}", messages.WARNING)
