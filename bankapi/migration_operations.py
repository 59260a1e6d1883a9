"""Migration operations that index big tables without blocking writes.

A plain `CREATE INDEX` holds a lock that blocks every insert, update and delete
on the table for the whole build: minutes on a table of millions of rows. On
PostgreSQL these operations build with `CREATE INDEX CONCURRENTLY` instead
(writes go on; the build reads the table twice) and drop with `DROP INDEX
CONCURRENTLY IF EXISTS`. Elsewhere (the embedded SQLite) they are Django's plain
index operations.

PostgreSQL refuses a concurrent build inside a transaction, so a migration using
them declares `atomic = False`. Such a migration is not rolled back as a whole
when it fails, so each step can simply run again: a concurrent build that failed
(a deadlock, a cancelled statement, a duplicate in a unique index) leaves an
index that PostgreSQL marks INVALID, which is never used but still slows every
write; the next run drops it and builds again. An index that is already valid is
kept (`IF NOT EXISTS`), e.g. one an operator built by hand ahead of a release.
"""

from typing import Any

from django.db import NotSupportedError, migrations, models
from django.db.backends.base.schema import BaseDatabaseSchemaEditor
from django.db.migrations.state import ProjectState, StateApps


class AddIndexConcurrently(migrations.AddIndex):
    """`migrations.AddIndex`, built without blocking writes on PostgreSQL.

    Unlike django.contrib.postgres's operation of the same name, it runs on SQLite
    too and replaces an index a failed build left INVALID. The migration state is
    AddIndex's, so the model's `Meta.indexes` declares the
    index as usual and `makemigrations` sees nothing left to do.
    """

    def describe(self) -> str:
        return f"Create index {self.index.name} on {self.model_name} (concurrently on PostgreSQL)"

    def database_forwards(
        self,
        app_label: str,
        schema_editor: BaseDatabaseSchemaEditor,
        from_state: ProjectState,
        to_state: ProjectState,
    ) -> None:
        model = self._model(to_state.apps, app_label)
        if self.allow_migrate_model(schema_editor.connection.alias, model):
            _index_add(schema_editor, model, self.index)

    def database_backwards(
        self,
        app_label: str,
        schema_editor: BaseDatabaseSchemaEditor,
        from_state: ProjectState,
        to_state: ProjectState,
    ) -> None:
        model = self._model(from_state.apps, app_label)
        if self.allow_migrate_model(schema_editor.connection.alias, model):
            _index_remove(schema_editor, model, self.index)

    def _model(self, apps: StateApps, app_label: str) -> type[models.Model]:
        return apps.get_model(app_label, self.model_name)


class AddIndexConcurrentlyToAppModel(AddIndexConcurrently):
    """An index on a model another app owns (e.g. django.contrib.admin's log).

    Built in the database only: that app's migration state stays as its own
    migrations made it, so `makemigrations` never proposes the index for it (nor
    its removal). The migration using it depends on that app's last migration.
    """

    def __init__(self, app_label: str, model_name: str, index: models.Index) -> None:
        self.app_label = app_label
        super().__init__(model_name, index)

    def deconstruct(self) -> tuple[str, list[Any], dict[str, Any]]:
        name, _, kwargs = super().deconstruct()
        return name, [], {"app_label": self.app_label, **kwargs}

    def state_forwards(self, app_label: str, state: ProjectState) -> None:
        pass

    def describe(self) -> str:
        model = f"{self.app_label}.{self.model_name}"
        return f"Create index {self.index.name} on {model} (concurrently on PostgreSQL)"

    def _model(self, apps: StateApps, app_label: str) -> type[models.Model]:
        return apps.get_model(self.app_label, self.model_name)


def _index_add(
    schema_editor: BaseDatabaseSchemaEditor, model: type[models.Model], index: models.Index
) -> None:
    if not _on_postgres(schema_editor):
        schema_editor.add_index(model, index)
        return
    _refuse_in_transaction(schema_editor, index)
    if _invalid_index_exists(schema_editor, index):
        _drop_concurrently(schema_editor, model, index)
    statement = index.create_sql(model, schema_editor, concurrently=True)
    statement.template = statement.template.replace(
        "CREATE INDEX CONCURRENTLY ", "CREATE INDEX CONCURRENTLY IF NOT EXISTS ", 1
    )
    schema_editor.execute(statement, params=None)


def _index_remove(
    schema_editor: BaseDatabaseSchemaEditor, model: type[models.Model], index: models.Index
) -> None:
    if not _on_postgres(schema_editor):
        schema_editor.remove_index(model, index)
        return
    _refuse_in_transaction(schema_editor, index)
    _drop_concurrently(schema_editor, model, index)


def _drop_concurrently(
    schema_editor: BaseDatabaseSchemaEditor, model: type[models.Model], index: models.Index
) -> None:
    # DROP INDEX CONCURRENTLY IF EXISTS: waits for the queries using the index,
    # blocks no writes.
    schema_editor.execute(index.remove_sql(model, schema_editor, concurrently=True))


def _on_postgres(schema_editor: BaseDatabaseSchemaEditor) -> bool:
    return schema_editor.connection.vendor == "postgresql"


def _refuse_in_transaction(schema_editor: BaseDatabaseSchemaEditor, index: models.Index) -> None:
    if schema_editor.connection.in_atomic_block:
        raise NotSupportedError(
            f"Index {index.name} is built concurrently, which PostgreSQL cannot do inside a "
            "transaction: set `atomic = False` on the migration."
        )


def _invalid_index_exists(schema_editor: BaseDatabaseSchemaEditor, index: models.Index) -> bool:
    """An index of this name left INVALID by a concurrent build that failed."""
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(
            "SELECT NOT indisvalid FROM pg_index WHERE indexrelid = to_regclass(%s)",
            [schema_editor.quote_name(index.name)],
        )
        row = cursor.fetchone()
    return bool(row and row[0])
