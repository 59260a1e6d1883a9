"""Events and webhook endpoints in the back office.

Events and deliveries are records: read-only. Endpoints are made here or through
the API by the same service; the signing secret is shown once, on creation or
rotation, and never again (it is stored encrypted).
"""

from django import forms
from django.contrib import admin, messages
from django.db import models
from django.http import HttpResponseRedirect
from django.urls import reverse
from django.utils import timezone
from django.utils.timesince import timesince

from bankapi.backoffice import dashboard
from bankapi.backoffice.admin_base import (
    CappedCountPaginator,
    ExactSearchMixin,
    ReadOnlyModelAdmin,
    apply_each,
)
from bankapi.backoffice.admin_display import readable_fields
from bankapi.errors import ApiError
from bankapi.ops import outbound
from events.endpoints import (
    endpoint_create,
    endpoint_enable,
    endpoint_rotate_secret,
    event_redeliver,
)
from events.models import Delivery, DeliveryAttempt, Event, EventType, WebhookEndpoint


def _https_by_default(field: models.Field, **kwargs) -> forms.Field | None:
    if isinstance(field, models.URLField):
        kwargs.setdefault("assume_scheme", "https")
    return field.formfield(**kwargs)


class WebhookEndpointForm(forms.ModelForm):
    # A URL typed without a scheme is taken as https (webhooks are sent over TLS).
    url = forms.URLField(max_length=2000, assume_scheme="https")
    event_types = forms.MultipleChoiceField(choices=EventType.choices, widget=forms.CheckboxSelectMultiple)

    class Meta:
        model = WebhookEndpoint
        fields = ("program", "sandbox", "url", "event_types")
        # Also for the forms the admin derives from this one (a read-only URL on
        # the change page is rebuilt from the model field).
        formfield_callback = _https_by_default

    def clean(self):
        super().clean()
        cleaned = self.cleaned_data
        if self.instance._state.adding and cleaned.get("url"):
            try:
                outbound.url_check(cleaned["url"])
            except ApiError as error:
                self.add_error("url", error.message)
        return cleaned


@admin.register(WebhookEndpoint)
class WebhookEndpointAdmin(ExactSearchMixin, admin.ModelAdmin):
    form = WebhookEndpointForm
    list_display = ("url", "program", "sandbox", "enabled", "disabled_reason", "failing_since", "created_at")
    list_filter = ("enabled", "sandbox", "program")
    list_select_related = ("program",)
    exact_search_fields = ("id", "url")
    search_help_text = "An exact endpoint id or URL."
    paginator = CappedCountPaginator
    show_full_result_count = False
    actions = ("enable_selected", "rotate_secret_selected")

    def changeform_view(self, request, object_id=None, form_url="", extra_context=None):
        try:
            return super().changeform_view(request, object_id, form_url, extra_context)
        except ApiError as error:
            # The URL passed the form's check, then its name answered a refused
            # address when the endpoint was made (a DNS answer that changed
            # between the two look-ups): nothing was made, and the page says why.
            self.message_user(request, f"The endpoint was not created: {error.message}", messages.ERROR)
            return HttpResponseRedirect(request.get_full_path())

    def get_readonly_fields(self, request, obj=None):
        # The URL and program of an existing endpoint stay as made (and checked).
        return ("program", "sandbox", "url", "enabled", "disabled_reason", "failing_since") if obj else ()

    def save_model(self, request, obj, form, change):
        if change:
            obj.save(update_fields=["event_types", "updated_at"])
            return
        made = endpoint_create(
            program_id=obj.program_id, sandbox=obj.sandbox, url=obj.url, event_types=obj.event_types
        )
        obj.pk, obj.secret, obj.created_at = made.pk, made.secret, made.created_at
        self.message_user(
            request, f"Signing secret (shown once, store it now): {made.secret}", messages.WARNING
        )

    # Without `permissions` an action is open to whoever may view the list.
    @admin.action(
        description="Re-enable selected endpoints (their pending deliveries go out)", permissions=["change"]
    )
    def enable_selected(self, request, queryset):
        def enable(endpoint: WebhookEndpoint) -> str:
            endpoint_enable(endpoint)
            return "Re-enabled"

        apply_each(self, request, queryset, enable)

    @admin.action(description="Rotate the signing secret of selected endpoints", permissions=["change"])
    def rotate_secret_selected(self, request, queryset):
        def rotate(endpoint):
            rotated = endpoint_rotate_secret(endpoint)
            self.message_user(
                request, f"New secret of {rotated.url} (shown once): {rotated.secret}", messages.WARNING
            )
            return "Secret rotated; the old one signs beside it for 24 hours"

        apply_each(self, request, queryset, rotate)


@admin.register(Event)
class EventAdmin(ExactSearchMixin, ReadOnlyModelAdmin):
    list_display = ("event_id", "type", "resource_type", "resource_id", "customer", "sandbox", "created_at")
    list_filter = ("type", ("created_at", admin.DateFieldListFilter), "sandbox", "fanned_out")
    list_select_related = ("customer",)
    # Rows are short: a page of 25 stays about one screen high.
    list_per_page = 25
    exact_search_fields = ("event_id", "resource_id", "customer")
    id_text_fields = ("resource_id",)  # str(uuid) of the resource: lower case
    search_help_text = "An exact eventId, resource id (e.g. a requestId) or customer id."
    actions = ("redeliver_selected",)

    def changelist_view(self, request, extra_context=None):
        # Events are records: the list says so, though its action needs the change permission.
        title = "Events (read-only: select events to deliver again)"
        return super().changelist_view(request, {"title": title, **(extra_context or {})})

    def has_change_permission(self, request, obj=None) -> bool:
        # The permission lets operators run the redeliver action on the list; an
        # event itself is a record: its page reads "View event", with no Save.
        return obj is None and request.user.has_perm("events.change_event")

    def get_fields(self, request, obj=None):
        return [field.name if field.name != "data" else "data_fields" for field in self.model._meta.fields]

    def get_readonly_fields(self, request, obj=None):
        return self.get_fields(request, obj)

    @admin.display(description="data")
    def data_fields(self, event: Event) -> str:
        # The resource as its route shows it, one labelled row a field.
        return readable_fields(event.data)

    @admin.action(description="Deliver selected events again", permissions=["change"])
    def redeliver_selected(self, request, queryset):
        apply_each(
            self,
            request,
            queryset,
            lambda event: f"Redelivery queued to {event_redeliver(event)} endpoint(s)",
        )


@admin.register(Delivery)
class DeliveryAdmin(ReadOnlyModelAdmin):
    list_display = (
        "id",
        "event",
        "endpoint",
        "state",
        "attempts",
        "next_attempt_at",
        "delivered_at",
        "last_error",
    )
    list_filter = ("state", "redelivery")
    list_select_related = ("event", "endpoint")


@admin.register(DeliveryAttempt)
class DeliveryAttemptAdmin(ReadOnlyModelAdmin):
    list_display = ("id", "delivery", "status_code", "latency_ms", "error", "created_at")
    list_filter = ("status_code",)
    list_select_related = ("delivery",)


def webhook_endpoints_failing() -> tuple[int, str]:
    """Endpoints whose deliveries fail, disabled for it or not yet (a small table)."""
    count = WebhookEndpoint.objects.filter(failing_since__isnull=False).count()
    return count, reverse("admin:events_webhookendpoint_changelist") + "?failing_since__isnull=False"


def oldest_undelivered_event() -> tuple[str, str | None]:
    """How long the oldest delivery still PENDING has waited, and of which event."""
    oldest = (
        Delivery.objects.filter(state=Delivery.State.PENDING)
        .order_by("id")
        .values("created_at", "event__type")
        .first()
    )
    if oldest is None:
        return "none", None
    waited = timesince(oldest["created_at"], timezone.now())
    url = reverse("admin:events_delivery_changelist") + f"?state__exact={Delivery.State.PENDING}"
    return f"{waited} ago ({oldest['event__type']})", url


dashboard.counter_register(dashboard.WEBHOOKS_FAILING, webhook_endpoints_failing)
dashboard.fact_register(dashboard.OLDEST_UNDELIVERED, oldest_undelivered_event)
