"""Rows of several models read in one SELECT, for the few hot reads where the ORM
cannot say it in one query (rows joined on something other than a foreign key
path) or where compiling the query costs more than running it.

The SQL is written once per database vendor from the models' own table and
column names (every value is a parameter), and each row is built exactly as the
ORM builds it: the backend's and the field's converters, then `Model.from_db`.
"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.db import connections, models, router
from django.db.models import signals
from django.db.models.expressions import Col
from django.db.models.fields import AutoFieldMixin


@dataclass(frozen=True)
class Part:
    """One model of the SELECT, under `alias`; `defer` names fields left to load
    on first use (their values are not read)."""

    model: type[models.Model]
    alias: str
    defer: frozenset[str] = frozenset()

    def fields(self) -> list[models.Field]:
        return [f for f in self.model._meta.concrete_fields if f.attname not in self.defer]


@dataclass
class _Compiled:
    select: str
    # Per part: (attnames, [(converters, expression) per column]).
    columns: list[tuple[list[str], list[tuple[list[Callable], Col]]]] = field(default_factory=list)


class JoinedSelect:
    """`SELECT <every part's columns> <from_sql>`; `from_sql(name)` is the FROM,
    JOIN and WHERE text, given the vendor's identifier quoting function."""

    def __init__(self, parts: Sequence[Part], from_sql: Callable[[Callable[[str], str]], str]) -> None:
        self.parts = list(parts)
        self.from_sql = from_sql
        self._compiled: dict[str, _Compiled] = {}

    def _compile(self, connection: Any) -> _Compiled:
        compiled = self._compiled.get(connection.vendor)
        if compiled is not None:
            return compiled
        name = connection.ops.quote_name
        selected: list[str] = []
        columns = []
        for part in self.parts:
            fields = part.fields()
            converters = []
            for f in fields:
                expression = f.get_col(part.alias)
                found = connection.ops.get_db_converters(expression) + expression.get_db_converters(
                    connection
                )
                converters.append((found, expression))
            selected += [f"{name(part.alias)}.{name(f.column)}" for f in fields]
            columns.append(([f.attname for f in fields], converters))
        compiled = _Compiled(select=f"SELECT {', '.join(selected)} {self.from_sql(name)}", columns=columns)
        self._compiled[connection.vendor] = compiled
        return compiled

    def sql(self, connection: Any) -> str:
        return self._compile(connection).select

    def first(self, connection: Any, params: Sequence[Any]) -> list[models.Model | None] | None:
        """The rows of each part in the first row of the answer (None for a part
        whose primary key is NULL, as a LEFT JOIN that found nothing leaves it),
        or None when the answer is empty."""
        compiled = self._compile(connection)
        with connection.cursor() as cursor:
            cursor.execute(compiled.select, params)
            row = cursor.fetchone()
        if row is None:
            return None
        found: list[models.Model | None] = []
        start = 0
        for part, (attnames, converters) in zip(self.parts, compiled.columns, strict=True):
            values = list(row[start : start + len(attnames)])
            start += len(attnames)
            pk_index = attnames.index(part.model._meta.pk.attname)
            if values[pk_index] is None:
                found.append(None)
                continue
            for index, (functions, expression) in enumerate(converters):
                for convert in functions:
                    values[index] = convert(values[index], expression, connection)
            found.append(part.model.from_db(connection.alias, attnames, values))
        return found


def _refuse_unless_plain(model: type[models.Model], rows: Sequence[models.Model]) -> None:
    if any(type(row) is not model or not row._state.adding for row in rows):
        raise TypeError(f"insert_rows takes unsaved rows of one model ({model.__name__})")
    # Checked on every call: a receiver may be connected after the first insert.
    for name, signal in (("pre_save", signals.pre_save), ("post_save", signals.post_save)):
        if signal.has_listeners(model):
            raise TypeError(
                f"insert_rows cannot send {model.__name__}'s save signals ({name} has receivers); "
                "use save() or bulk_create"
            )
    unfilled = [
        f.name
        for f in model._meta.concrete_fields
        # Django 5.2's Field API; the 5.2 stubs do not declare these two yet.
        if f.has_db_default()  # type: ignore[attr-defined]
        or f.generated
        or (f.db_returning and not f.primary_key)  # type: ignore[attr-defined]
    ]
    if unfilled:
        raise TypeError(
            f"insert_rows cannot fill {model.__name__}.{', '.join(unfilled)} (the database gives "
            "its value); use save() or bulk_create"
        )


_INSERTS: dict[tuple[type[models.Model], str, int], tuple[str, list[models.Field], models.Field | None]] = {}


def _insert_sql(
    model: type[models.Model], connection: Any, rows: int
) -> tuple[str, list[models.Field], models.Field | None]:
    slot = (model, connection.vendor, rows)
    cached = _INSERTS.get(slot)
    if cached is None:
        meta = model._meta
        pk = meta.pk
        generated = pk if isinstance(pk, AutoFieldMixin) else None
        fields = [f for f in meta.concrete_fields if f is not generated]
        name = connection.ops.quote_name
        one = f"({', '.join(['%s'] * len(fields))})"
        sql = (
            f"INSERT INTO {name(meta.db_table)} ({', '.join(name(str(f.column)) for f in fields)}) "  # noqa: S608
            f"VALUES {', '.join([one] * rows)}"
        )
        if generated is not None:
            sql += f" RETURNING {name(str(generated.column))}"
        cached = _INSERTS[slot] = (sql, fields, generated)
    return cached


def insert_rows(rows: Sequence[models.Model]) -> None:
    """Insert unsaved rows of one model in one statement, as `bulk_create` does
    (each field's `pre_save` and database value; a database-generated key is read
    back into each row), from SQL written once per model, vendor and row count
    instead of compiled each time. For small hot inserts.

    What `save()` would do beyond that it cannot: a model with pre_save or
    post_save receivers, a field with a database default, a generated field or
    another column the database fills in raises TypeError at once, as does a
    list mixing models or holding a saved row."""
    if not rows:
        return
    model = type(rows[0])
    _refuse_unless_plain(model, rows)
    connection = connections[router.db_for_write(model)]
    sql, fields, generated = _insert_sql(model, connection, len(rows))
    values = [f.get_db_prep_save(f.pre_save(row, add=True), connection) for row in rows for f in fields]
    with connection.cursor() as cursor:
        cursor.execute(sql, values)
        keys = cursor.fetchall() if generated is not None else []
    for index, row in enumerate(rows):
        if generated is not None:
            setattr(row, generated.attname, keys[index][0])
        row._state.adding = False
        row._state.db = connection.alias
