"""Rows of several models read in one SELECT, for the few hot reads where the ORM
cannot say it in one query (rows joined on something other than a foreign key
path) or where compiling the query costs more than running it.

The SQL is written once per database vendor from the models' own table and
column names (every value is a parameter), and each row is built exactly as the
ORM builds it: the backend's and the field's converters, then `Model.from_db`.
"""

import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from functools import cache
from typing import Any

from django.db import connections, models, router
from django.db.models import signals
from django.db.models.expressions import Col
from django.db.models.fields import AutoFieldMixin

from bankapi.row_objects import row_loaded


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
            found.append(row_loaded(part.model, connection.alias, attnames, values))
        return found


@cache
def _filled_by_the_database(model: type[models.Model]) -> list[str]:
    """The fields whose value the database gives (a model's fields are fixed once loaded)."""
    return [
        f.name
        for f in model._meta.concrete_fields
        # Django 5.2's Field API; the 5.2 stubs do not declare these two yet.
        if f.has_db_default()  # type: ignore[attr-defined]
        or f.generated
        or (f.db_returning and not f.primary_key)  # type: ignore[attr-defined]
    ]


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
    unfilled = _filled_by_the_database(model)
    if unfilled:
        raise TypeError(
            f"insert_rows cannot fill {model.__name__}.{', '.join(unfilled)} (the database gives "
            "its value); use save() or bulk_create"
        )


def _written_fields(model: type[models.Model]) -> tuple[models.Field | None, list[models.Field]]:
    """The model's key when the database generates it (else None), and the
    fields an INSERT writes: every concrete field but that key."""
    pk = model._meta.pk
    generated = pk if isinstance(pk, AutoFieldMixin) else None
    return generated, [f for f in model._meta.concrete_fields if f is not generated]


_INSERTS: dict[tuple[type[models.Model], str, int], tuple[str, list[models.Field], models.Field | None]] = {}


def _insert_sql(
    model: type[models.Model], connection: Any, rows: int
) -> tuple[str, list[models.Field], models.Field | None]:
    slot = (model, connection.vendor, rows)
    cached = _INSERTS.get(slot)
    if cached is None:
        meta = model._meta
        generated, fields = _written_fields(model)
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


def _cast_type(field: models.Field, connection: Any) -> str:
    """The column's type without its modifiers (`numeric`, `varchar`): a value
    cast to it is then stored as a plain INSERT would store it (rounded, or
    refused when too long), never truncated by the cast."""
    db_type = field.db_type(connection)
    if db_type is None:
        raise TypeError(f"{field.name} has no column type")
    return db_type.split("(", 1)[0].strip()


# Field classes whose `get_db_prep_save` on PostgreSQL gives back a value of
# these Python types as it is (None too); `db_value` passes such a value on
# without the call (a tenth of a payment's Python went to these calls).
# tests/kernel/test_db_values.py holds the table against Django's own answers.
_AS_THEY_ARE: dict[type[models.Field], type] = {
    models.CharField: str,
    models.TextField: str,
    models.BooleanField: bool,
    models.UUIDField: uuid.UUID,
    models.DecimalField: Decimal,
    models.DateTimeField: datetime,
}


def _as_it_is(field: models.Field, vendor: str) -> type | None:
    """The Python type whose values `field` stores as they are on PostgreSQL, if any."""
    if vendor != "postgresql":
        return None
    to_one = field.is_relation and (field.many_to_one or field.one_to_one)
    target = getattr(field, "target_field", field) if to_one else field
    return _AS_THEY_ARE.get(type(target))


def db_value(field: models.Field, kept: type | None, value: Any, connection: Any) -> Any:
    """`field.get_db_prep_save(value, connection)` on PostgreSQL, where `kept`
    is `_as_it_is(field)`: a value of that type (a finite Decimal, an aware
    datetime; for text, any str, a choice's member included) or None is the
    answer itself; anything else is asked of the field."""
    if value is None:
        return None
    if type(value) is kept or (kept is str and isinstance(value, str)):
        if isinstance(value, Decimal):
            if value.is_finite():
                return value
        elif not isinstance(value, datetime) or value.tzinfo is not None:
            return value
    return field.get_db_prep_save(value, connection)


_INSERT_SELECTS: dict[tuple[Any, ...], tuple[str, list[list[tuple[models.Field, str, type | None]]]]] = {}


def insert_select_sql(
    rows: Sequence[models.Model],
    source: str,
    connection: Any,
    computed: Sequence[dict[str, str]] | None = None,
) -> tuple[str, list[Any]]:
    """`INSERT INTO <table> (...) SELECT <each row's values> FROM <source>`, and its
    parameters: unsaved rows of one model written by a data-modifying step of a
    larger statement, one row per row of `source` (none when `source` is empty),
    PostgreSQL only. `computed` gives, per row, SQL expressions over `source`
    for some fields (by attname) in place of the row's values. Every other
    value is a parameter cast to its column's type: the row's value as
    `rows_pre_save` left it, prepared for the database as `insert_rows`
    prepares it. A database-generated key is returned (`RETURNING`) and not
    inserted. Same refusals as `insert_rows`. The text is written once per
    model, vendor, source and computed fields."""
    if not rows:
        raise ValueError("insert_select_sql takes at least one row")
    model = type(rows[0])
    _refuse_unless_plain(model, rows)
    own = list(computed) if computed else [{} for _ in rows]
    slot = (model, connection.vendor, source, tuple(tuple(sorted(c.items())) for c in own))
    cached = _INSERT_SELECTS.get(slot)
    if cached is None:
        meta = model._meta
        generated, fields = _written_fields(model)
        name = connection.ops.quote_name
        selects = []
        per_row = []
        for expressions in own:
            values = [
                expressions.get(f.attname) or f"CAST(%s AS {_cast_type(f, connection)})" for f in fields
            ]
            per_row.append(
                [
                    (f, f.attname, _as_it_is(f, connection.vendor))
                    for f in fields
                    if f.attname not in expressions
                ]
            )
            selects.append(f"SELECT {', '.join(values)} FROM {source}")  # noqa: S608
        sql = (
            f"INSERT INTO {name(meta.db_table)} ({', '.join(name(str(f.column)) for f in fields)}) "  # noqa: S608
            + " UNION ALL ".join(selects)
        )
        if generated is not None:
            sql += f" RETURNING {name(str(generated.column))}"
        cached = _INSERT_SELECTS[slot] = (sql, per_row)
    sql, per_row = cached
    params: list[Any] = []
    for row, written in zip(rows, per_row, strict=True):
        # An unsaved row holds every field's value in its __dict__ (no descriptor read).
        stored = row.__dict__
        for f, attname, kept in written:
            value = stored[attname] if attname in stored else getattr(row, attname)
            kind = type(value)
            if value is None or (kind is kept and kind is not Decimal and kind is not datetime):
                params.append(value)  # as `db_value` would answer, without the call
            else:
                params.append(db_value(f, kept, value, connection))
    return sql, params


def rows_pre_save(rows: Sequence[models.Model]) -> None:
    """Each field's `pre_save` on unsaved rows, as an insert runs it (it fills
    `auto_now_add` times): for rows whose values are read before
    `insert_select_sql` writes them."""
    for row in rows:
        for f in _saving_fields(type(row)):
            f.pre_save(row, add=True)


@cache
def _saving_fields(model: type[models.Model]) -> list[models.Field]:
    """The fields whose `pre_save` does more than read the value (Django's own
    `Field.pre_save` only reads it): an `auto_now` time, a file's name."""
    return [f for f in model._meta.concrete_fields if type(f).pre_save is not models.Field.pre_save]


def rows_stored(rows: Sequence[models.Model], connection: Any) -> None:
    """Mark rows written by `insert_select_sql` as saved, as `insert_rows` does."""
    for row in rows:
        row._state.adding = False
        row._state.db = connection.alias


_SPLIT: dict[str, list[str]] = {}
_SPLIT_KEPT = 64


def fetch_one_bound(connection: Any, sql: str, params: Sequence[Any]) -> tuple | None:
    """Execute `sql` with its `%s` parameters as the connection binds them, and
    answer its first row. Bound on the server when the connection binds there
    (`server_side_binding`, the prepared statements' setting): the text is the
    same on every call, so the connection may prepare it, and its placeholders
    are numbered here once per text (psycopg would split again, on every call,
    a text over 4 kB or with more than 50 parameters). Else bound here, by
    `sql_bound`. PostgreSQL only; `sql` holds no other `%`."""
    if not connection.settings_dict["OPTIONS"].get("server_side_binding"):
        with connection.cursor() as cursor:
            cursor.execute(sql_bound(connection, sql, params))
            found: tuple | None = cursor.fetchone()
            return found
    numbering = _NUMBERED.get(sql)
    if numbering is None:
        parts = _split(sql)
        text = "".join(
            part + (f"${index}" if index < len(parts) else "") for index, part in enumerate(parts, 1)
        )
        numbering = (text, len(parts) - 1)
        if len(_NUMBERED) < _SPLIT_KEPT:
            _NUMBERED[sql] = numbering
    numbered, placeholders = numbering
    if placeholders != len(params):
        raise ValueError(f"{placeholders} placeholders for {len(params)} parameters")
    connection.ensure_connection()
    raw = connection.connection
    # The connection's own cursor class (Django's, and a tracer's around it when
    # tracing is on) taking its text as numbered: no split by psycopg.
    numbered_cursor = _numbered_cursor_class(raw.cursor_factory)
    started = time.monotonic()
    # Django's cursor wrapper: its execute wrappers, its errors, its broken-transaction check.
    with connection.make_cursor(numbered_cursor(raw)) as cursor:
        cursor.execute(numbered, params)
        row: tuple | None = cursor.fetchone()
    if connection.queries_logged:
        connection.queries_log.append({"sql": sql, "time": f"{time.monotonic() - started:.3f}"})
    return row


@cache
def _numbered_cursor_class(factory: type) -> type:
    from psycopg.raw_cursor import RawCursorMixin

    return type(f"Numbered{factory.__name__}", (RawCursorMixin, factory), {})


_NUMBERED: dict[str, tuple[str, int]] = {}


def _split(sql: str) -> list[str]:
    parts = _SPLIT.get(sql)
    if parts is None:
        parts = sql.split("%s")
        if any("%" in part for part in parts):
            raise ValueError("sql_bound takes %s placeholders only")
        if len(_SPLIT) < _SPLIT_KEPT:
            _SPLIT[sql] = parts
    return parts


def sql_bound(connection: Any, sql: str, params: Sequence[Any]) -> str:
    """`sql` with its `%s` parameters bound client-side, each value quoted by
    psycopg's own literal adapter: exactly what psycopg's client-side binding
    (Django's default on psycopg) sends, but with the text split at its
    placeholders once per text instead of on every call (psycopg parses again
    every statement longer than 4 kB or with more than 50 parameters).
    PostgreSQL only; `sql` holds no other `%`. Execute the result without
    parameters."""
    from psycopg.adapt import Transformer

    parts = _split(sql)
    if len(parts) != len(params) + 1:
        raise ValueError(f"{len(parts) - 1} placeholders for {len(params)} parameters")
    literal = Transformer.from_context(connection.connection).as_literal
    encoding = connection.connection.info.encoding
    bound = [parts[0]]
    for value, part in zip(params, parts[1:], strict=True):
        bound.append(literal(value).decode(encoding))
        bound.append(part)
    return "".join(bound)
