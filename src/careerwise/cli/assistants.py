"""``careerwise assistants ...``: list, create and update assistants from the shell.

The same store as the dashboard (careerwise.assistants): the same checks, the same audit rows (``--by``
names who made the change). Disabling is ``update ID --disable``; there is no delete.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from pydantic import ValidationError

from careerwise.assistants import AssistantStore, ProfileIn, ProfileUpdate
from careerwise.config import get_settings
from careerwise.errors import CareerWiseError
from careerwise.store import Database

assistants_app = typer.Typer(
    help="List, create and update assistants (persona, knowledge).", no_args_is_help=True
)
T = TypeVar("T")

Domains = Annotated[
    list[str] | None,
    typer.Option("--domain", help="A knowledge domain it searches (repeat); 'all' or none = every domain."),
]
By = Annotated[str, typer.Option(help="Recorded in the audit log.")]


def _run(work: Callable[[AssistantStore], Awaitable[T]]) -> T:
    """Run against the configured database; a refused input is one line on stderr and exit code 2."""

    async def go() -> T:
        db = Database(get_settings().resolved_database_url)
        db.migrate()
        try:
            return await work(AssistantStore(db))
        finally:
            await db.dispose()

    try:
        return asyncio.run(go())
    except ValidationError as exc:
        typer.echo(
            "error: " + "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()),
            err=True,
        )
        raise typer.Exit(2) from exc
    except CareerWiseError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from exc


def _prompt(text: str | None, path: Path | None) -> str | None:
    return path.read_text(encoding="utf-8") if path is not None else text


@assistants_app.command("list")
def list_assistants(as_json: Annotated[bool, typer.Option("--json")] = False) -> None:
    profiles = _run(lambda store: store.list())
    if as_json:
        typer.echo(json.dumps([p.to_json() for p in profiles], ensure_ascii=False, indent=2))
        return
    for p in profiles:
        state = "enabled" if p.enabled else "disabled"
        domains = ",".join(p.knowledge_domains) or "all"
        persona = "built-in" if not p.system_prompt else f"{len(p.system_prompt)} chars"
        typer.echo(f"{p.id:<16} {p.name:<20} {state:<8}  knowledge={domains}  persona={persona}")


@assistants_app.command("create")
def create(
    assistant_id: Annotated[
        str, typer.Argument(metavar="ID", help="2-32 lower-case letters, digits, - or _.")
    ],
    name: Annotated[str, typer.Option(help="Display name.")],
    description: Annotated[str, typer.Option()] = "",
    prompt: Annotated[str | None, typer.Option(help="The persona / system prompt.")] = None,
    prompt_file: Annotated[Path | None, typer.Option(exists=True, dir_okay=False)] = None,
    domain: Domains = None,
    disabled: Annotated[bool, typer.Option("--disabled", help="Create it switched off.")] = False,
    by: By = "cli",
) -> None:
    """Create an assistant; it answers chat requests that name it (``"assistant": ID``)."""
    values: dict[str, Any] = {"id": assistant_id, "name": name, "description": description}
    values |= {"enabled": not disabled, "knowledge_domains": domain or []}
    if (text := _prompt(prompt, prompt_file)) is not None:
        values["system_prompt"] = text
    profile = _run(lambda store: store.create(ProfileIn(**values), changed_by=by))
    typer.echo(json.dumps(profile.to_json(), ensure_ascii=False))


@assistants_app.command("update")
def update(
    assistant_id: Annotated[str, typer.Argument(metavar="ID")],
    name: Annotated[str | None, typer.Option()] = None,
    description: Annotated[str | None, typer.Option()] = None,
    prompt: Annotated[str | None, typer.Option(help="The persona; '' = the built-in prompts.")] = None,
    prompt_file: Annotated[Path | None, typer.Option(exists=True, dir_okay=False)] = None,
    domain: Domains = None,
    enabled: Annotated[bool | None, typer.Option("--enable/--disable")] = None,
    by: By = "cli",
) -> None:
    """Change the fields given (each change is audited); ``--disable`` switches it off."""
    values: dict[str, Any] = {"name": name, "description": description, "enabled": enabled}
    values["system_prompt"] = _prompt(prompt, prompt_file)
    values["knowledge_domains"] = domain
    patch = {k: v for k, v in values.items() if v is not None}
    profile = _run(lambda store: store.update(assistant_id, ProfileUpdate(**patch), changed_by=by))
    typer.echo(json.dumps(profile.to_json(), ensure_ascii=False))
