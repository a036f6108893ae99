"""Core statements compiled once and run on the driver's own cursor, for a turn's hot-path SQL.

A Core statement executed through ``Connection.execute`` costs SQLAlchemy's per-call work even when
its compiled form is cached: the cache lookup, an execution context, the parameters processed through
the dialect, the result object. On the writer and reader threads that is Python holding the GIL beside
the busy event loop (docs/benchmarks.md, "The database's share of a turn"). :class:`DirectStatement`
does the compiling and the type processing SQLAlchemy would do once per dialect and set of keys, then
hands each call's values straight to the DB-API cursor, inside the caller's SQLAlchemy transaction:
BEGIN, COMMIT and ROLLBACK stay SQLAlchemy's, and so do its ``begin``/``commit`` events and the pool.

What stays as ``connection.execute`` does it: the SQL (the dialect's own compiler; psycopg gets the
positional ``%s`` form of it), the values as stored (each bind's processor: JSON, SQLite's datetimes,
booleans), Python-side column defaults filled per row, a SELECT's columns through their result
processors, several rows of an INSERT in one statement of several VALUES rows on psycopg (SQLAlchemy's
"insertmanyvalues"; ``executemany`` on SQLite), ``before_cursor_execute`` listeners called (tests watch
the statements with them), and a driver error raised as SQLAlchemy's (``IntegrityError`` for a unique
violation) after a dropped connection is invalidated so the pool replaces it. Not offered: RETURNING
and expanding ``IN`` parameters; such a statement is refused when it is first compiled, so a misuse
fails in tests instead of running something else.

Batched (:func:`batched`, PostgreSQL's writer threads by default): :meth:`DirectStatement.send` only
keeps its statement, its values bound into its text by psycopg; whatever needs an answer
(:meth:`~DirectStatement.execute`'s row count, :meth:`~DirectStatement.fetch`'s rows) goes with everything
kept before it as one query of several statements, one round trip and one call into the driver; the
COMMIT carries the rest. A kept statement's error is raised at that next send, on whichever statement (or
the COMMIT) sent it (:func:`batched` says why the calls matter).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from operator import itemgetter
from typing import Any, TypeVar

from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import Connection, Dialect
from sqlalchemy.sql import ClauseElement, Executable, Insert, Select
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.schema import Column

__all__ = ["DirectStatement", "batched", "execute_driver_sql", "flush_batch"]

Params = Mapping[str, Any]
R = TypeVar("R")


@dataclass(frozen=True, slots=True)
class _Compiled:
    """A statement as the driver takes it, and how a row of values is made from the caller's mapping:
    the binds' keys picked in the SQL's order from the mapping merged with ``constants`` (literals in
    the statement, scalar column defaults) and ``fills`` (callable column defaults, called per row), then
    each type's bind processor applied at its position, as SQLAlchemy does (to every value, None
    included: JSON stores None as ``null``)."""

    sql: str
    names: tuple[str, ...]
    pick: Callable[[Params], tuple[Any, ...]]
    constants: dict[str, Any]
    fills: tuple[tuple[str, Callable[[], Any]], ...]
    processors: tuple[tuple[int, Callable[[Any], Any]], ...]
    positional: bool
    results: tuple[tuple[int, Callable[[Any], Any]], ...] = ()  # a SELECT's result processors
    # an INSERT on a driver that takes several VALUES rows in one statement: the SQL up to and including
    # VALUES, and one row's parentheses
    sql_head: str = ""
    row_sql: str = ""

    def rows(self, cursor: Any) -> list[tuple[Any, ...]]:
        fetched = cursor.fetchall()
        if not self.results:
            return [tuple(r) for r in fetched]
        out = []
        for raw in fetched:
            row = list(raw)
            for index, process in self.results:
                row[index] = process(row[index])
            out.append(tuple(row))
        return out

    def row(self, params: Params) -> list[Any] | dict[str, Any]:
        merged = params
        if self.constants or self.fills:
            merged = self.constants | dict(params)
            for key, fill in self.fills:
                merged[key] = fill()
        values = list(self.pick(merged))
        for index, process in self.processors:
            values[index] = process(values[index])
        return values if self.positional else dict(zip(self.names, values, strict=True))


class DirectStatement:
    """A Core INSERT/UPDATE/DELETE (:meth:`execute`) or SELECT (:meth:`fetch`), compiled per dialect and set of parameter keys on first use, then
    executed on the DB-API cursor of the caller's connection (see the module's docstring)."""

    def __init__(self, statement: Executable) -> None:
        if not isinstance(statement, ClauseElement):
            raise TypeError(f"a Core statement, not {statement!r}")
        self.statement = statement
        self._compiled: dict[tuple[type[Dialect], str, tuple[str, ...]], _Compiled] = {}
        self._guard = threading.Lock()  # writer threads compile concurrently on first use

    def execute(self, connection: Connection, params: Params | Sequence[Params]) -> int:
        """Run the statement with one mapping of parameters or a list of them (one ``executemany``;
        every mapping must have the same keys). Returns the driver's row count."""
        return self._run_rows(connection, params, _rowcount)

    def send(self, connection: Connection, params: Params | Sequence[Params]) -> None:
        """:meth:`execute` for a caller that needs neither the row count nor the error right away: on a
        batched connection (:func:`batched`) the statement is only kept, and its outcome (an error
        included) arrives with the next statement that needs an answer, or with the COMMIT; elsewhere
        it is :meth:`execute`."""
        self._run_rows(connection, params, _rowcount if _batch(connection) is None else _queued)

    def _run_rows(
        self, connection: Connection, params: Params | Sequence[Params], consume: Callable[[Any], Any]
    ) -> int:
        many = not isinstance(params, Mapping)
        rows: Sequence[Params] = params if many else [params]  # type: ignore[assignment, list-item]
        if not rows:
            return 0
        compiled = self._for(connection.dialect, tuple(rows[0]))
        values = [compiled.row(r) for r in rows]
        if many and compiled.row_sql and len(values) > 1:
            # one statement of several VALUES rows, as SQLAlchemy's "insertmanyvalues" sends it:
            # psycopg's executemany costs its Python work per row
            sql = f"{compiled.sql_head}{', '.join([compiled.row_sql] * len(values))}"
            return int(
                _run(connection, sql, [[v for row in values for v in row]], many=False, consume=consume) or 0
            )
        return int(_run(connection, compiled.sql, values, many=many, consume=consume) or 0)

    def fetch(self, connection: Connection, params: Params) -> list[tuple[Any, ...]]:
        """Run a SELECT and return its rows, each column through its type's result processor as
        SQLAlchemy's result would (JSON parsed, SQLite's booleans and dates)."""
        compiled = self._for(connection.dialect, tuple(params))
        rows: list[tuple[Any, ...]] = _run(
            connection, compiled.sql, [compiled.row(params)], many=False, consume=compiled.rows
        )
        return rows

    def _for(self, dialect: Dialect, keys: tuple[str, ...]) -> _Compiled:
        cache_key = (type(dialect), dialect.paramstyle, keys)
        found = self._compiled.get(cache_key)
        if found is None:
            with self._guard:
                found = self._compiled.get(cache_key) or _compile(self.statement, dialect, keys)
                self._compiled[cache_key] = found
        return found


def _positional(dialect: Dialect) -> Dialect:
    """The dialect to compile with: psycopg takes ``%(name)s`` or ``%s``; the positional form spares
    it matching names to a mapping on every execution (the values are the same, in the SQL's order)."""
    if dialect.paramstyle != "pyformat":
        return dialect
    twin = _TWINS.get(type(dialect))
    if twin is None:
        twin = _TWINS.setdefault(type(dialect), type(dialect)(paramstyle="format"))  # type: ignore[call-arg]
    return twin


_TWINS: dict[type[Dialect], Dialect] = {}


def _compile(statement: ClauseElement, dialect: Dialect, keys: tuple[str, ...]) -> _Compiled:
    """``statement`` for ``dialect`` with ``keys`` bound by the caller (see :class:`_Compiled`)."""
    target = _positional(dialect)
    compiled = statement.compile(dialect=target, column_keys=list(keys), for_executemany=True)
    assert isinstance(compiled, SQLCompiler)
    sql = compiled.string
    if compiled.escaped_bind_names or "POSTCOMPILE" in sql or " RETURNING " in sql.upper():
        raise NotImplementedError(f"DirectStatement cannot run this statement as it stands: {sql}")
    defaults = {c.key: _default(c, c.default) for c in compiled.insert_prefetch} | {
        c.key: _default(c, c.onupdate) for c in compiled.update_prefetch
    }
    names = compiled.positiontup if target.positional else list(compiled.binds)
    assert names is not None
    params = [compiled.binds[name] for name in names]
    constants: dict[str, Any] = {}
    fills: list[tuple[str, Callable[[], Any]]] = []
    for param in params:
        key: str = param.key
        if key in keys:
            continue
        if key in defaults:  # a column default left to Python, as SQLAlchemy fills it
            default = defaults[key]
            if default.is_scalar:
                constants[key] = default.arg
            else:
                fills.append((key, partial(default.arg, None)))  # wrapped to take a context it ignores
        elif not param.required:  # a value written into the statement
            constants[key] = param.effective_value
        else:
            raise NotImplementedError(f"{sql}: no value for {key!r}")
    processors = tuple(
        (index, process)
        for index, param in enumerate(params)
        if (process := param.type.dialect_impl(dialect).bind_processor(dialect)) is not None
    )
    keys_in_order = [param.key for param in params]
    pick = itemgetter(*keys_in_order) if len(keys_in_order) > 1 else _one(keys_in_order)
    results: tuple[tuple[int, Callable[[Any], Any]], ...] = ()
    if isinstance(statement, Select):
        results = tuple(
            (index, process)
            for index, column in enumerate(statement.selected_columns)
            if (process := column.type.dialect_impl(dialect).result_processor(dialect, None)) is not None
        )
    head, row_sql = "", ""
    if isinstance(statement, Insert) and target.paramstyle == "format" and " ON CONFLICT " not in sql:
        at = sql.rfind(" VALUES (")
        if at > 0:
            head, row_sql = sql[: at + len(" VALUES ")], sql[at + len(" VALUES ") :]
    return _Compiled(
        sql,
        tuple(names),
        pick,
        constants,
        tuple(fills),
        processors,
        target.positional,
        results,
        head,
        row_sql,
    )


def _one(keys: list[str]) -> Callable[[Params], tuple[Any, ...]]:
    """``itemgetter`` of one key gives the value, not a tuple of it (and of none, an error)."""
    if not keys:
        return lambda _params: ()
    key = keys[0]
    return lambda params: (params[key],)


def _default(column: Column[Any], default: Any) -> Any:
    """The column's Python-side default (SQLAlchemy's ``ColumnDefault``), refused when it is anything
    but a value or a callable (a SQL expression is rendered into the statement, never prefetched)."""
    if default is None or not (default.is_scalar or default.is_callable):
        raise NotImplementedError(f"DirectStatement cannot fill the default of {column}")
    return default


def _rowcount(cursor: Any) -> int:
    return int(cursor.rowcount)


def _queued(_cursor: Any) -> None:
    """A kept statement's outcome is read when the batch is sent, not here."""


_BATCH = "cw_batch"  # the connection's statements waiting to travel together, while :func:`batched` is on


def _batch(connection: Connection) -> list[str] | None:
    return connection.info.get(_BATCH) if connection.dialect.name == "postgresql" else None


@contextmanager
def batched(connection: Connection) -> Iterator[None]:
    """The connection's statements sent together for the block (PostgreSQL only; elsewhere nothing
    changes): :meth:`DirectStatement.send` (and the writer's ``BEGIN``) keeps its statement, with its
    values written into it as literals by psycopg's client-side binding; a statement that needs an
    answer (:meth:`~DirectStatement.execute`, :meth:`~DirectStatement.fetch`) goes with everything kept
    before it as one query of several statements, one round trip and one call into the driver, and reads
    the last statement's outcome; :func:`flush_batch` sends what is left with the COMMIT. psycopg's
    pipeline mode is not used: it makes as many round trips or more and runs far more of the driver's
    Python per statement, so the writer thread would let go of the GIL and take it back from a busy
    event loop far more often. A kept statement's error is raised at the next send, by whichever statement (or the COMMIT)
    sent it; PostgreSQL runs nothing after it, and the transaction rolls back. Only
    :class:`DirectStatement` and :func:`execute_driver_sql` may run inside it: SQLAlchemy's own
    ``execute`` would send its statement at once, ahead of the kept ones (the BEGIN among them), so
    outside the transaction."""
    if connection.dialect.name != "postgresql":
        yield
        return
    connection.info[_BATCH] = []
    try:
        yield
    finally:
        connection.info.pop(_BATCH, None)


def flush_batch(connection: Connection, last: str) -> bool:
    """Send the statements :func:`batched` kept on ``connection`` with ``last`` after them (the COMMIT)
    in one round trip; False, sending nothing, when none is kept but a BEGIN, or outside a batch."""
    batch = _batch(connection)
    if not batch or batch == ["BEGIN"]:
        if batch is not None:
            batch.clear()
        return False
    _run(connection, last, [()], many=False)
    return True


def execute_driver_sql(connection: Connection, sql: str, *, wait: bool = True) -> None:
    """``sql`` with no parameters on the connection's DB-API cursor (the writers' ``BEGIN``, every
    job), with :class:`DirectStatement`'s listeners and error translation. ``wait=False``: on a
    batched connection only kept, as :meth:`DirectStatement.send`."""
    _run(connection, sql, [()], many=False, consume=_rowcount if wait else _queued)


def _run(
    connection: Connection,
    sql: str,
    values: list[Any],
    *,
    many: bool,
    consume: Callable[[Any], R] = _rowcount,  # type: ignore[assignment]
) -> R:
    """``values`` on the connection's DB-API cursor inside its open transaction (``consume`` reads
    the outcome off the cursor: the row count, or the rows); a driver error is raised as SQLAlchemy's,
    a dropped connection invalidated first."""
    dbapi_connection = connection.connection.dbapi_connection
    assert dbapi_connection is not None
    batch = _batch(connection)
    cursor: Any = dbapi_connection.cursor() if batch is None else _client_cursor(dbapi_connection)
    params: Any = values if many else values[0]
    dispatch = connection.dispatch
    if dispatch.before_cursor_execute:
        dispatch.before_cursor_execute(connection, cursor, sql, params, None, many)
    dialect = connection.dialect
    try:
        if batch is not None:
            batch.extend(cursor.mogrify(sql, row) for row in (params if many else [params]))
            if consume is _queued:
                return consume(cursor)
            sql, params = "; ".join(batch), None  # the error, if any, names everything sent
            batch.clear()
            cursor.execute(sql, prepare=False)  # no parameters: the simple protocol, several statements
            while cursor.nextset():  # the outcome asked for is the last statement's
                pass
            return consume(cursor)
        if many:
            cursor.executemany(sql, params)
        else:
            cursor.execute(sql, params)
        return consume(cursor)
    except dialect.loaded_dbapi.Error as error:
        dropped = dialect.is_disconnect(error, dbapi_connection, cursor)
        if dropped:
            connection.invalidate(error)
        raise sa_exc.DBAPIError.instance(
            sql, params, error, dialect.loaded_dbapi.Error, connection_invalidated=dropped, dialect=dialect
        ) from error
    finally:
        cursor.close()


def _client_cursor(dbapi_connection: Any) -> Any:
    """psycopg's cursor that binds the values into the SQL text itself (``mogrify``)."""
    import psycopg

    return psycopg.ClientCursor(dbapi_connection)
