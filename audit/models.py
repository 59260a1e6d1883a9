"""What staff did in the back office: each change they made to configuration or
customer data (before and after), and each page of personal data they opened.

Both tables are written by `audit.services` only and never edited: their admin
screens are read-only for everyone, superusers included.
"""

from django.conf import settings
from django.contrib.contenttypes.models import ContentType
from django.core.serializers.json import DjangoJSONEncoder
from django.db import models
from django.utils import timezone


class ChangeRecord(models.Model):
    class Action(models.TextChoices):
        ADDED = "added"
        CHANGED = "changed"
        DELETED = "deleted"

    at = models.DateTimeField(default=timezone.now)
    # The e-mail is kept too: the record outlives the staff account.
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+", db_constraint=False
    )
    actor_email = models.CharField(max_length=254)
    content_type = models.ForeignKey(ContentType, on_delete=models.PROTECT, related_name="+")
    object_id = models.CharField(max_length=64)
    object_repr = models.CharField(max_length=200)
    action = models.CharField(max_length=8, choices=Action.choices)
    # Field name -> value, for the fields this change touched (every field of an
    # added or deleted record). Secrets are never among them.
    before = models.JSONField(encoder=DjangoJSONEncoder, default=dict)
    after = models.JSONField(encoder=DjangoJSONEncoder, default=dict)
    page = models.CharField(max_length=500, help_text="The back-office address the change was made from.")

    class Meta:
        ordering = ("-at", "-id")
        indexes = [models.Index(fields=["content_type", "object_id", "at"], name="audit_change_object")]

    def __str__(self) -> str:
        return f"{self.actor_email} {self.action} {self.object_repr}"


class StaffView(models.Model):
    """One record shown to a staff member: on its own page (change, history or
    delete), or as a row of a list (a changelist, a search of it, or the rows an
    action asks about), with the list's search text. A list that showed no row
    leaves one record without an object id, so that the search is kept too."""

    at = models.DateTimeField(default=timezone.now)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+", db_constraint=False
    )
    actor_email = models.CharField(max_length=254)
    content_type = models.ForeignKey(ContentType, on_delete=models.PROTECT, related_name="+")
    object_id = models.CharField(max_length=64)
    object_repr = models.CharField(max_length=200)
    page = models.CharField(max_length=500)
    search = models.CharField(
        max_length=200, blank=True, default="", help_text="The list's search text, when a list showed it."
    )

    class Meta:
        ordering = ("-at", "-id")
        indexes = [
            models.Index(fields=["content_type", "object_id", "at"], name="audit_view_object"),
            models.Index(fields=["actor", "at"], name="audit_view_actor"),
        ]

    def __str__(self) -> str:
        return f"{self.actor_email} viewed {self.object_repr}"
