"""The events cards write, in the transaction of the change they report."""

from cards.models import Card
from cards.serializers import CardSerializer
from events.models import EventType
from events.recording import event_record


def card_issued_event(card: Card) -> None:
    """The card as any view but the secure details shows it: never its PAN or CVV."""
    event_record(
        type=EventType.CARD_ISSUED,
        program_id=card.program_id,
        sandbox=card.sandbox,
        customer_id=card.account.customer_id,
        resource_type="card",
        resource_id=card.id,
        data=dict(CardSerializer(card).data),
    )
