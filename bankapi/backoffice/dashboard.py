"""What the admin index shows above the app list: work waiting for operators and
today's payment volume.

The kernel imports no domain app (docs/architecture.md), so each domain registers its own
figure from its `admin.py` (loaded by admin autodiscovery). The three counters
are always shown, in this order: a domain not installed yet, or one that has not
registered, counts 0.
"""

from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal

HELD_PAYMENTS = "Held payments to review"
FAILED_BATCH_ITEMS = "Failed batch items"
APPLICATIONS_IN_REVIEW = "Applications in review"
WEBHOOKS_FAILING = "Webhook endpoints failing"
COUNTERS = (HELD_PAYMENTS, FAILED_BATCH_ITEMS, APPLICATIONS_IN_REVIEW, WEBHOOKS_FAILING)
# A line that is not a count: e.g. "Oldest undelivered event: 2 h 5 min (payment_request.settled)".
OLDEST_UNDELIVERED = "Oldest undelivered event"
FACTS = (OLDEST_UNDELIVERED,)


@dataclass(frozen=True)
class Counter:
    label: str
    count: int
    # The changelist, filtered to the rows counted (None: nothing to open yet).
    url: str | None


@dataclass(frozen=True)
class Volume:
    """Today's accepted payments (failed ones excluded) in one currency and environment."""

    currency: str
    sandbox: bool
    payments: int
    amount: Decimal
    # The amount accepted in each hour of the day (UTC), 24 entries.
    hourly: tuple[Decimal, ...]

    @property
    def peak(self) -> Decimal:
        """The busiest hour's amount (the top of the chart's scale)."""
        return max(self.hourly, default=Decimal(0))

    def bars(self, height: int = 40, width: int = 6) -> list[dict]:
        """The hourly amounts as SVG bars scaled to this currency's busiest hour."""
        peak = max(self.hourly, default=Decimal(0)) or Decimal(1)
        bars = []
        for hour, amount in enumerate(self.hourly):
            bar_height = int((amount / peak) * height) if amount else 0
            if amount and not bar_height:
                bar_height = 1  # a quiet hour still shows
            bars.append(
                {
                    "x": hour * (width + 1),
                    "y": height - bar_height,
                    "width": width,
                    "height": bar_height,
                    "title": f"{hour:02d}:00 {amount} {self.currency}",
                }
            )
        return bars


@dataclass(frozen=True)
class Fact:
    label: str
    text: str
    url: str | None


_counters: dict[str, Callable[[], tuple[int, str | None]]] = {}
_facts: dict[str, Callable[[], tuple[str, str | None]]] = {}
_volume: list[Callable[[], list[Volume]]] = []


def counter_register(label: str, count: Callable[[], tuple[int, str | None]]) -> None:
    """Register the function that answers (count, changelist url) for `label`."""
    if label not in COUNTERS:
        raise ValueError(f"Unknown dashboard counter {label!r}; expected one of {COUNTERS}")
    _counters[label] = count


def fact_register(label: str, fact: Callable[[], tuple[str, str | None]]) -> None:
    """Register the function that answers (text, url) for `label`."""
    if label not in FACTS:
        raise ValueError(f"Unknown dashboard fact {label!r}; expected one of {FACTS}")
    _facts[label] = fact


def dashboard_facts() -> list[Fact]:
    facts = []
    for label in FACTS:
        text, url = _facts[label]() if label in _facts else ("none", None)
        facts.append(Fact(label=label, text=text, url=url))
    return facts


def volume_register(volume: Callable[[], list[Volume]]) -> None:
    if volume not in _volume:
        _volume.append(volume)


def dashboard_counters() -> list[Counter]:
    counters = []
    for label in COUNTERS:
        count, url = _counters[label]() if label in _counters else (0, None)
        counters.append(Counter(label=label, count=count, url=url))
    return counters


def dashboard_volume() -> list[Volume]:
    rows = [row for source in _volume for row in source()]
    return sorted(rows, key=lambda row: (row.sandbox, row.currency))
