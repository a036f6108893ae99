"""``careerwise apikeys create|list|revoke``: keys for the OpenAI-compatible endpoint."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Annotated, TypeVar

import typer

from careerwise.channels.apikeys import create_key, list_keys, revoke_key
from careerwise.config import get_settings
from careerwise.errors import CareerWiseError
from careerwise.store import ApiKey, Database

apikeys_app = typer.Typer(
    help="Issue, list and revoke API keys for the OpenAI-compatible endpoint (/v1/chat/completions).",
    no_args_is_help=True,
)
T = TypeVar("T")


def _run(work: Callable[[Database], Awaitable[T]]) -> T:
    async def main() -> T:
        db = Database(get_settings().resolved_database_url)
        await asyncio.to_thread(db.migrate)
        try:
            return await work(db)
        finally:
            await db.dispose()

    try:
        return asyncio.run(main())
    except CareerWiseError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from exc


def _when(value: datetime | None) -> str | None:
    return value.isoformat(timespec="seconds") if value else None


def _row(key: ApiKey) -> dict[str, object]:
    return {
        "id": key.id,
        "name": key.name,
        "prefix": key.prefix,
        "created_at": _when(key.created_at),
        "last_used_at": _when(key.last_used_at),
        "revoked_at": _when(key.revoked_at),
        "active": key.revoked_at is None,
    }


@apikeys_app.command("create")
def apikeys_create(
    name: Annotated[str, typer.Argument(help="Who or what will use the key, e.g. 'open-webui'.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the key and its id as JSON.")] = False,
) -> None:
    """Issue a key. It is printed once and stored only as a hash: keep it now."""
    key, token = _run(lambda db: create_key(db, name))
    if as_json:
        typer.echo(json.dumps({**_row(key), "key": token}))
        return
    typer.echo(token)
    typer.echo(f"id {key.id}, name {key.name!r}: shown once, stored only as a hash", err=True)


@apikeys_app.command("list")
def apikeys_list(
    active: Annotated[bool, typer.Option("--active", help="Only keys that are not revoked.")] = False,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """List keys (id, name, prefix, created, last used, revoked). Keys themselves are never shown."""
    keys = _run(lambda db: list_keys(db, include_revoked=not active))
    rows = [_row(k) for k in keys]
    if as_json:
        typer.echo(json.dumps(rows, indent=2))
        return
    if not rows:
        typer.echo("no API keys; create one with 'careerwise apikeys create NAME'")
        return
    for r in rows:
        state = "active" if r["active"] else f"revoked {r['revoked_at']}"
        typer.echo(
            f"{r['id']}  {r['prefix']}…  {r['name']!s:<20}  created {r['created_at']}  "
            f"last used {r['last_used_at'] or 'never'}  {state}"
        )


@apikeys_app.command("revoke")
def apikeys_revoke(
    key_id: Annotated[str, typer.Argument(help="The key's id (or its prefix, as 'list' shows it).")],
) -> None:
    """Revoke a key: requests with it get 401 from now on."""
    key = _run(lambda db: revoke_key(db, key_id))
    typer.echo(f"revoked {key.id} ({key.name}) at {_when(key.revoked_at)}")
