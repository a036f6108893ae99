"""Administration commands: ``careerwise settings ...`` and ``careerwise traces ...``."""

from __future__ import annotations

import asyncio
import json
from typing import Annotated, Any

import typer

from careerwise.assistant_settings import DEFAULT_ASSISTANT, KEYS, SettingsStore
from careerwise.config import get_settings
from careerwise.errors import NotFoundError, UserInputError
from careerwise.store import Database
from careerwise.store.traces import TraceStore
from careerwise.tracing.export import trace_header

settings_app = typer.Typer(
    help="Show and change assistant settings (stored in the database).", no_args_is_help=True
)
traces_app = typer.Typer(help="Read stored turns.", no_args_is_help=True)


def _db() -> Database:
    db = Database(get_settings().resolved_database_url)
    db.migrate()
    return db


@settings_app.command("show")
def settings_show(
    assistant: Annotated[str, typer.Option(help="Assistant id.")] = DEFAULT_ASSISTANT,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Print every effective value and where it comes from (default, environment, database)."""

    async def run() -> None:
        db = _db()
        try:
            eff = await SettingsStore(db, get_settings()).effective(assistant)
        finally:
            await db.dispose()
        values = eff.values.model_dump()
        if as_json:
            typer.echo(
                json.dumps({k: {"value": values[k], "source": eff.sources[k]} for k in KEYS}, indent=2)
            )
            return
        width = max(len(k) for k in KEYS)
        for k in KEYS:
            typer.echo(f"{k.ljust(width)}  {json.dumps(values[k])!s:<8}  ({eff.sources[k]})")

    asyncio.run(run())


@settings_app.command("set")
def settings_set(
    assignments: Annotated[
        list[str], typer.Argument(help="KEY=VALUE pairs, e.g. use_full_retrieval_range=true")
    ],
    assistant: Annotated[str, typer.Option(help="Assistant id.")] = DEFAULT_ASSISTANT,
    by: Annotated[str, typer.Option(help="Recorded in the audit log.")] = "cli",
) -> None:
    """Store overrides; they apply from the next turn on, in every process, without a restart."""

    async def run() -> None:
        db = _db()
        store = SettingsStore(db, get_settings())
        try:
            for item in assignments:
                key, sep, value = item.partition("=")
                if not sep:
                    raise UserInputError(f"expected KEY=VALUE, got {item!r}")
                stored = await store.set(key.strip(), value.strip(), changed_by=by, assistant_id=assistant)
                typer.echo(f"{key.strip()} = {json.dumps(stored)}")
        finally:
            await db.dispose()

    try:
        asyncio.run(run())
    except (UserInputError, NotFoundError) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from exc


@settings_app.command("reset")
def settings_reset(
    keys: Annotated[list[str], typer.Argument(help="Settings whose database override to remove.")],
    assistant: Annotated[str, typer.Option(help="Assistant id.")] = DEFAULT_ASSISTANT,
    by: Annotated[str, typer.Option(help="Recorded in the audit log.")] = "cli",
) -> None:
    """Remove overrides, so the configuration default applies again."""

    async def run() -> None:
        db = _db()
        try:
            for key in keys:
                await SettingsStore(db, get_settings()).reset(key, changed_by=by, assistant_id=assistant)
        finally:
            await db.dispose()

    try:
        asyncio.run(run())
    except (UserInputError, NotFoundError) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from exc


async def load_trace(db: Database, trace_id: str) -> dict[str, Any] | None:
    """A stored turn as JSON: the trace row, its tool calls and every event as the stream carried it.
    The tool calls are the stored tool_call and tool_result events, as the dashboard reads them
    (store/traces.py)."""
    turn = await TraceStore(db).turn(trace_id)
    if turn is None:
        return None
    return {
        **trace_header(turn.trace),
        "tool_calls": [
            {
                "call_id": c.call.get("call_id"),
                "name": c.call.get("name"),
                "requested_arguments": c.call.get("requested_arguments"),
                "effective_arguments": c.call.get("effective_arguments"),
                "reason": c.call.get("reason"),
                "ok": c.result.get("ok") if c.result is not None else None,
                "returned": c.result.get("returned") if c.result is not None else None,
                "duration_ms": c.result.get("duration_ms") if c.result is not None else None,
            }
            for c in turn.tool_calls
        ],
        "events": [{"seq": e.seq, "t_ms": e.t_ms, **e.payload} for e in turn.events],
        "spans": turn.spans,
    }


def _span_summary(spans: list[dict[str, Any]]) -> str:
    counts: dict[str, int] = {}
    for span in spans:
        counts[span["kind"]] = counts.get(span["kind"], 0) + 1
    return ", ".join(f"{kind}×{n}" if n > 1 else kind for kind, n in counts.items())


@traces_app.command("list")
def traces_list(
    limit: Annotated[int, typer.Option(min=1, max=1000)] = 20,
    as_json: Annotated[
        bool, typer.Option("--json", help="One JSON object per turn, with its spans.")
    ] = False,
) -> None:
    """The latest turns, newest first, with their spans (route, llm, tool, degraded, error)."""

    async def run() -> None:
        db = _db()
        try:
            latest = await TraceStore(db).latest(limit)
        finally:
            await db.dispose()
        spans = {t.id: views for t, views in latest}
        for t, _ in latest:
            if as_json:
                item = {
                    "id": t.id,
                    "assistant_id": t.assistant_id,
                    "started_at": t.started_at.isoformat(),
                    "channel": t.channel,
                    "intent": t.intent,
                    "tier": t.tier,
                    "path": t.path,
                    "status": t.status,
                    "degraded": t.degraded,
                    "duration_ms": t.duration_ms,
                    "spans": spans.get(t.id, []),
                }
                typer.echo(json.dumps(item, ensure_ascii=False))
                continue
            ms = f"{t.duration_ms:.0f} ms" if t.duration_ms is not None else "-"
            typer.echo(
                f"{t.id}  {t.started_at:%Y-%m-%d %H:%M:%S}  {t.intent or '-':8} {t.path or '-':10} "
                f"{t.status:9} {ms:>9}{'  degraded' if t.degraded else ''}  [{_span_summary(spans.get(t.id, []))}]"
            )

    asyncio.run(run())


@traces_app.command("show")
def traces_show(
    trace_id: Annotated[str, typer.Argument()],
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """One stored turn: path, timings, tool calls with their effective arguments, events."""

    async def run() -> dict[str, Any] | None:
        db = _db()
        try:
            return await load_trace(db, trace_id)
        finally:
            await db.dispose()

    data = asyncio.run(run())
    if data is None:
        typer.echo(f"no trace {trace_id}", err=True)
        raise typer.Exit(1)
    if as_json:
        typer.echo(json.dumps(data, ensure_ascii=False, indent=2))
        return
    typer.echo(
        f"trace {data['id']}  {data['intent']}/{data['tier']}  path {data['path']}  {data['status']}  "
        f"{data['duration_ms']} ms (first text {data['first_text_ms']} ms)"
    )
    for c in data["tool_calls"]:
        typer.echo(
            f"  tool {c['name']} requested {c['requested_arguments']} effective {c['effective_arguments']} "
            f"({c['reason']}) returned {c['returned']}"
        )
    for sp in data["spans"]:
        typer.echo(
            f"  {sp['start_ms']:>9.1f} ms  +{sp['duration_ms']:>8.1f} ms  {sp['kind']:8} {sp['name']}"
            f"{'  (' + sp['status'] + ')' if sp['status'] != 'ok' else ''}"
        )
    for e in data["events"]:
        typer.echo(f"  {e['t_ms']:>9.1f} ms  {e['type']}")
