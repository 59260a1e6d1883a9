"""Re-encrypting every encrypted column with the newest field key.

Rotation without downtime: configure the new key in front of the old one
(FIELD_ENCRYPTION_KEY="new,old"), restart, then run `manage.py
rotate_field_key`. While it runs, every process reads values under either key
and writes new ones under the new key. Once it has finished, the old key can be
removed from the setting.

The work goes model by model, in batches by primary key, each batch in its own
transaction with its rows locked (a concurrent save of one of them waits rather
than being overwritten by a stale re-encryption). A value already under the
newest key is left untouched, so a run killed midway is resumed by running it
again, and a second run changes nothing.
"""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.apps import apps
from django.db import models, transaction
from django.db.models.functions import Cast

from bankapi.crypto import EncryptedTextField, encrypted_with_newest_key, reencrypt

BATCH_SIZE = 200


@dataclass(frozen=True)
class EncryptedModel:
    model: type[models.Model]
    fields: tuple[EncryptedTextField, ...]

    @property
    def label(self) -> str:
        return f"{self.model._meta.label} ({', '.join(f.name for f in self.fields)})"


@dataclass
class RotationCount:
    rows: int = 0  # rows looked at
    values: int = 0  # values re-encrypted


def encrypted_models() -> list[EncryptedModel]:
    """Every installed model with encrypted columns, found by their field type."""
    found = []
    for model in apps.get_models():
        fields = tuple(f for f in model._meta.concrete_fields if isinstance(f, EncryptedTextField))
        if fields:
            found.append(EncryptedModel(model, fields))
    return sorted(found, key=lambda each: each.model._meta.label)


def _stored(field: EncryptedTextField) -> str:
    return f"stored_{field.attname}"


def _rows(target: EncryptedModel, after_pk: Any) -> "models.QuerySet[Any, tuple[Any, ...]]":
    """(pk, stored value, ...) in primary-key order: the stored text as it is in
    the column (cast to plain text, so not decrypted on the way)."""
    stored = {_stored(f): Cast(f.attname, models.TextField()) for f in target.fields}
    rows: models.QuerySet[Any] = target.model._base_manager.order_by("pk").annotate(**stored)
    if after_pk is not None:
        rows = rows.filter(pk__gt=after_pk)
    values: models.QuerySet[Any, tuple[Any, ...]] = rows.values_list("pk", *stored)
    return values


def _stale(value: str | None) -> bool:
    return bool(value) and not encrypted_with_newest_key(str(value))


def model_keys_rotate(
    target: EncryptedModel,
    *,
    batch_size: int = BATCH_SIZE,
    on_batch: Callable[[int], None] = lambda rows: None,
) -> RotationCount:
    """Re-encrypt the model's encrypted values not yet under the newest key.
    `on_batch(rows)` is told after each committed batch."""
    count = RotationCount()
    last_pk: Any = None
    while True:
        with transaction.atomic():
            batch = list(_rows(target, last_pk).select_for_update()[:batch_size])
            for pk, *values in batch:
                changed = {
                    f.attname: models.Value(reencrypt(value), output_field=models.TextField())
                    for f, value in zip(target.fields, values, strict=True)
                    if _stale(value)
                }
                if changed:
                    target.model._base_manager.filter(pk=pk).update(**changed)
                    count.values += len(changed)
        if not batch:
            return count
        last_pk = batch[-1][0]
        count.rows += len(batch)
        on_batch(len(batch))


def stale_values_count(target: EncryptedModel) -> int:
    """How many of the model's values are not under the newest key yet."""
    stale, last_pk = 0, None
    while batch := list(_rows(target, last_pk)[:1000]):
        stale += sum(1 for _, *values in batch for value in values if _stale(value))
        last_pk = batch[-1][0]
    return stale
