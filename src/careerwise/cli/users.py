"""``careerwise users ...``: accounts from the command line (the first administrator starts here)."""

from __future__ import annotations

import asyncio
from typing import Annotated

import typer
from sqlalchemy import select

from careerwise.auth import AccountService
from careerwise.config import get_settings
from careerwise.errors import CareerWiseError
from careerwise.services import session_secret
from careerwise.store import Database, User

users_app = typer.Typer(help="Create and list accounts.", no_args_is_help=True)


def _accounts() -> AccountService:
    settings = get_settings()
    db = Database(settings.resolved_database_url)
    db.migrate()
    return AccountService(db, session_secret(settings))


@users_app.command("create")
def users_create(
    email: Annotated[str, typer.Argument(help="The account's email (the login name).")],
    admin: Annotated[bool, typer.Option("--admin", help="Give the account the admin role.")] = False,
    name: Annotated[str, typer.Option(help="Display name.")] = "",
    password: Annotated[
        str,
        typer.Option(
            prompt=True,
            hide_input=True,
            confirmation_prompt=True,
            envvar="CAREERWISE_NEW_USER_PASSWORD",
            help="Asked for when not given (or read from CAREERWISE_NEW_USER_PASSWORD).",
        ),
    ] = "",
) -> None:
    """Create an account; ``--admin`` for an administrator (the dashboard needs one)."""
    accounts = _accounts()

    async def run() -> User:
        try:
            return await accounts.create_user(
                email=email, password=password, display_name=name, role="admin" if admin else "user"
            )
        finally:
            await accounts.db.dispose()

    try:
        user = asyncio.run(run())
    except CareerWiseError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from exc
    typer.echo(f"created {user.role} {user.email} ({user.id})")


@users_app.command("list")
def users_list() -> None:
    """Every account with its role."""
    accounts = _accounts()

    async def run() -> list[User]:
        try:
            async with accounts.db.session() as s:
                return list((await s.scalars(select(User).order_by(User.created_at))).all())
        finally:
            await accounts.db.dispose()

    for u in asyncio.run(run()):
        typer.echo(f"{u.id}  {u.role:<5}  {u.email}  {u.display_name}")
