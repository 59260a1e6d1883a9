"""Publishing a legal document set: the one set applicants read and accept."""

from django.db import transaction

from bankapi.errors import ApiError, ErrorCode
from onboarding.models import LegalDocumentSet


def legal_set_publish(*, document_set: LegalDocumentSet) -> LegalDocumentSet:
    """Make `document_set` its program's current set (in its environment).

    Acceptances already stored keep the documents they accepted (they are copies);
    from now on applicants are served, and must accept, this set. A set with no
    documents is refused: applicants could accept nothing.
    """
    with transaction.atomic():
        # Every set of the program and environment, locked in id order: two
        # publications racing cannot leave two current sets (the partial unique
        # constraint would refuse the second one with an error instead).
        sets = list(
            LegalDocumentSet.objects.select_for_update()
            .filter(program_id=document_set.program_id, sandbox=document_set.sandbox)
            .order_by("id")
        )
        publishing = next(row for row in sets if row.pk == document_set.pk)
        if not publishing.documents.exists():
            raise ApiError(ErrorCode.VALIDATION_ERROR, "A set without documents cannot be published.")
        LegalDocumentSet.objects.filter(pk__in=[row.pk for row in sets if row.is_current]).exclude(
            pk=publishing.pk
        ).update(is_current=False)
        if not publishing.is_current:
            publishing.is_current = True
            publishing.save(update_fields=["is_current", "updated_at"])
    return publishing
