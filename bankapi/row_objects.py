"""Model objects made without the cost of `Model.__init__`, for the few hot
paths that make several per request (a payment's write makes six, its caller's
read five).

`Model.__init__` sets each field through its class attribute and, for a
related object, through the relation's descriptor, and sends `pre_init` and
`post_init`: about a third of the time a payment's write took to build. For a
plain model the same object is had by writing the instance's `__dict__` and its
relation cache directly, which is what those descriptors end up doing on a new
object. `row_new(Model, **values)` is `Model(**values)`, and
`row_loaded(Model, db, attnames, values)` is `Model.from_db(...)`, made that
way whenever the model is plain:

- `Model.__init__` is Django's own and no `pre_init`/`post_init` receiver is
  connected (checked on every call: one may be connected later);
- every concrete field's attribute is Django's deferred attribute (no property
  or descriptor of the project's own in front of a field), and every relation
  is a plain foreign key (no one-to-one, whose reverse cache `__init__` also
  fills), with no private (virtual) field;
- for `row_new`, every keyword names a concrete field (by name, or by attname
  for a value that is not an object); for `row_loaded`, the model's `from_db`
  is Django's own, or Django's then the model's `after_load()`
  (`from_db_then_after_load`).

Anything else is handed to `Model(**values)` or `Model.from_db`, so the answer
is always the one Django would give (tests/kernel/test_row_objects.py holds the
two equal, field by field and cache by cache, for every model of the project).
"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar, cast

from django.db import models, router
from django.db.models.base import ModelState
from django.db.models.fields.related_descriptors import (
    ForeignKeyDeferredAttribute,
    ForwardManyToOneDescriptor,
    ForwardOneToOneDescriptor,
)
from django.db.models.query_utils import DeferredAttribute
from django.db.models.signals import post_init, pre_init

M = TypeVar("M", bound=models.Model)


@dataclass(frozen=True)
class _Field:
    name: str
    attname: str
    default: Callable[[], Any]
    # For a foreign key: its cache name, the related model, the related field's
    # attname and, for a one-to-one, the reverse side's cache name.
    relation: tuple[str, type[models.Model], str, str | None] | None


@dataclass(frozen=True)
class _Plan:
    fields: tuple[_Field, ...]
    names: frozenset[str]
    attnames: tuple[str, ...]


_PLANS: dict[type[models.Model], _Plan | None] = {}


def _default_of(field: models.Field) -> Callable[[], Any]:
    if type(field).get_default is models.Field.get_default:
        # The callable `get_default` calls (Django caches it on the field).
        found: Callable[[], Any] = field._get_default  # type: ignore[attr-defined]
        return found
    return field.get_default


def _plan(model: type[models.Model]) -> _Plan | None:
    """How to make `model`'s objects directly, or None when it is not plain."""
    if model in _PLANS:
        return _PLANS[model]
    meta = model._meta
    plain = model.__init__ is models.Model.__init__ and not meta.private_fields
    fields: list[_Field] = []
    for field in meta.fields if plain else ():
        attribute = model.__dict__.get(field.attname) or getattr(model, field.attname, None)
        if field.column is None or field.generated or field not in meta.concrete_fields:
            plain = False
        elif field.is_relation:
            descriptor = type(getattr(model, field.name, None))
            related = field.related_fields  # type: ignore[attr-defined]
            one_to_one = bool(field.one_to_one) and not field.primary_key
            plain = bool(
                (field.many_to_one or one_to_one)
                and type(attribute) is ForeignKeyDeferredAttribute
                and descriptor is (ForwardOneToOneDescriptor if one_to_one else ForwardManyToOneDescriptor)
                and len(related) == 1
            )
            if plain:
                remote_field = field.remote_field
                remote: Any = remote_field.model  # type: ignore[union-attr]
                relation = (
                    str(field.cache_name),  # type: ignore[attr-defined]
                    cast(type[models.Model], remote._meta.concrete_model),
                    str(related[0][1].attname),
                    # A one-to-one's reverse side is cached on the related object too.
                    None if remote_field.multiple else str(remote_field.cache_name),  # type: ignore[union-attr]
                )
                fields.append(_Field(field.name, field.attname, _default_of(field), relation))
        else:
            plain = type(attribute) is DeferredAttribute and field.name == field.attname
            fields.append(_Field(field.name, field.attname, _default_of(field), None))
        if not plain:
            break
    plan = None
    if plain:
        names = {f.name for f in fields} | {f.attname for f in fields}
        plan = _Plan(fields=tuple(fields), names=frozenset(names), attnames=tuple(f.attname for f in fields))
    _PLANS[model] = plan
    return plan


def _signalled(model: type[models.Model]) -> bool:
    if not pre_init.receivers and not post_init.receivers:
        return False  # nothing connected to either, for any model (no lookup per model)
    return pre_init.has_listeners(model) or post_init.has_listeners(model)


def row_new(model: type[M], /, **values: Any) -> M:
    """`model(**values)`, made directly when the model is plain (see the module)."""
    plan = _plan(model)
    if plan is None or _signalled(model) or not plan.names.issuperset(values):
        return model(**values)
    row = model.__new__(model)
    state = row._state = ModelState()
    own = row.__dict__
    for field in plan.fields:
        relation = field.relation
        if relation is not None and field.name in values:
            if field.attname in values:
                return model(**values)  # both spellings: Django's own precedence
            related = values[field.name]
            cache_name, remote, remote_attname, reverse_name = relation
            if related is None:
                own[field.attname] = None
            elif isinstance(related, remote):
                # As the relation's descriptor does on a new object.
                if state.db is None:
                    state.db = router.db_for_write(model, instance=related)
                if related._state.db is None:
                    related._state.db = router.db_for_write(type(related), instance=row)
                if not router.allow_relation(related, row):
                    raise ValueError(f'Cannot assign "{related!r}": the database router prevents it.')
                own[field.attname] = getattr(related, remote_attname)
            else:
                return model(**values)  # Django's own error
            state.fields_cache[cache_name] = related
            if reverse_name is not None and related is not None:
                related._state.fields_cache[reverse_name] = row
        elif field.attname in values:
            own[field.attname] = values[field.attname]
        else:
            own[field.attname] = field.default()
    return row


def from_db_then_after_load(cls: type[M], db: str, field_names: Sequence[str], values: Sequence[Any]) -> M:
    """The `from_db` of a model that does more on loading than Django does:
    Django's own, then the model's `after_load()`. A model's `from_db` of its
    own is this or makes its objects `row_loaded`'s to make by Django."""
    row: Any = models.Model.from_db.__func__(cls, db, field_names, values)  # type: ignore[attr-defined]
    row.after_load()
    return cast(M, row)


def row_loaded(model: type[M], db: str, attnames: Sequence[str], values: Sequence[Any]) -> M:
    """`model.from_db(db, attnames, values)`, made directly when the model is
    plain (see the module; a model's own `from_db` may be
    `from_db_then_after_load`): `attnames` in the model's field order, the
    others left to load on first use."""
    plan = _plan(model)
    loader = model.from_db.__func__  # type: ignore[attr-defined]
    after_load = loader is from_db_then_after_load
    if plan is None or (loader is not models.Model.from_db.__func__ and not after_load) or _signalled(model):  # type: ignore[attr-defined]
        return model.from_db(db, list(attnames), list(values))
    row: Any = model.__new__(model)
    state = row._state = ModelState()
    state.adding = False
    state.db = db
    row.__dict__.update(zip(attnames, values, strict=True))
    if after_load:
        row.after_load()
    return cast(M, row)
