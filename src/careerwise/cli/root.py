"""The ``careerwise`` command: its own commands (serve, chat, search, ingest) and every group."""

from __future__ import annotations

import asyncio
import importlib
import json
import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.progress import Progress

from careerwise.cli._common import console, setup_logging
from careerwise.cli.admin import settings_app, traces_app
from careerwise.cli.apikeys import apikeys_app
from careerwise.cli.assistants import assistants_app
from careerwise.cli.evals import eval_app
from careerwise.cli.routing import route
from careerwise.cli.slots import slots_app
from careerwise.cli.users import users_app
from careerwise.config import Settings, get_settings
from careerwise.errors import CareerWiseError

if TYPE_CHECKING:
    from careerwise.store import Database

app = typer.Typer(
    help="CareerWise: Summer, an open-source career coach.",
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,
)
log = logging.getLogger("careerwise.serve")
app.add_typer(settings_app, name="settings")
app.add_typer(assistants_app, name="assistants")
app.add_typer(traces_app, name="traces")
app.add_typer(apikeys_app, name="apikeys")
app.add_typer(slots_app, name="slots")
app.add_typer(users_app, name="users")
app.command("route")(route)


# The packages behind each choice of CAREERWISE_SERVER_LOOP / _HTTP that is not always there (asyncio is
# Python's, h11 comes with uvicorn), and the setting's other choice, named in the error message.
_SERVER_CHOICES: dict[str, tuple[str, str]] = {
    "uvloop": ("CAREERWISE_SERVER_LOOP", "asyncio"),
    "httptools": ("CAREERWISE_SERVER_HTTP", "h11"),
}


def server_stack_problem(
    *, loop: str, http: str, load: Callable[[str], object] = importlib.import_module
) -> str | None:
    """Why the configured server stack cannot start, or None when it can.

    Checked before uvicorn starts because uvicorn's own "auto" would quietly fall back to asyncio/h11
    and an explicit "uvloop" would fail deep inside a worker; either way the operator would not learn
    which stack is serving. We stop instead of falling back (decision 0012): the stack is a choice the
    benchmarks were measured with, so it is never changed behind the operator's back. The module is
    imported, not only looked up, so a broken install (a missing shared library) is caught too.
    """
    for choice in (loop, http):
        if choice not in _SERVER_CHOICES:
            continue
        setting, other = _SERVER_CHOICES[choice]
        try:
            load(choice)
        except ImportError as exc:
            return (
                f"{setting}={choice}, but {choice} cannot be imported ({exc}). Install it "
                f"(pip install {choice}; it is one of careerwise's dependencies) or set {setting}={other}."
            )
    return None


@app.command()
def serve(
    host: Annotated[str | None, typer.Option(help="Interface to bind.")] = None,
    port: Annotated[int | None, typer.Option(help="Port to listen on.")] = None,
    workers: Annotated[
        int, typer.Option(min=1, max=64, help="App processes (share state through the database).")
    ] = 1,
) -> None:
    """Serve the chat page and the API."""
    setup_logging(True)
    settings = get_settings()
    problem = server_stack_problem(loop=settings.server_loop, http=settings.server_http)
    if problem is not None:
        log.error("cannot serve: %s", problem)
        raise typer.Exit(2)

    import uvicorn

    from careerwise.app import create_app

    # once, here in the parent: `--workers N` passes the same two values to every worker
    log.info("serving with loop=%s http=%s", settings.server_loop, settings.server_http)
    common = {
        "host": host or settings.host,
        "port": port or settings.port,
        "log_level": "info",
        "timeout_graceful_shutdown": 5,
        "loop": settings.server_loop,
        "http": settings.server_http,
    }
    if workers == 1:
        uvicorn.run(create_app(settings), **common)  # type: ignore[arg-type]
        return
    # migrate and ingest once here, so the workers do not race each other through Alembic and the ingest
    asyncio.run(_prepare_store(settings))
    _share_metrics(settings.data_dir / "metrics")
    # the workers build their settings from the environment: tell them they are several (shared limits)
    os.environ["CAREERWISE_SERVE_WORKERS"] = str(workers)
    uvicorn.run("careerwise.app:create_app", factory=True, workers=workers, **common)  # type: ignore[arg-type]


def _share_metrics(directory: Path) -> None:
    """One /metrics for all workers: prometheus_client's multiprocess mode keeps each worker's values in
    files under ``directory``, which a scrape adds up (tracing/metrics.py). Emptied first, so the counts
    of an earlier run are not added to this one's. Set here, in the parent, before any worker starts:
    the workers inherit the environment and prometheus_client reads it when it is imported."""
    from careerwise.tracing.metrics import MULTIPROC_ENV

    directory.mkdir(parents=True, exist_ok=True)
    for stale in directory.glob("*.db"):
        stale.unlink()
    os.environ[MULTIPROC_ENV] = str(directory)


async def _prepare_store(settings: Settings) -> None:
    from careerwise.knowledge.embeddings import make_embedder
    from careerwise.knowledge.ingest import current_version, ingest_paths, log_progress
    from careerwise.knowledge.service import BUNDLED_CORPUS
    from careerwise.store import Database

    db = Database(settings.resolved_database_url)
    try:
        await asyncio.to_thread(db.migrate)
        if settings.ingest_on_start and await current_version(db) == "empty":
            log.info("knowledge: embedding the bundled corpus into an empty knowledge base (once)")
            embedder = await asyncio.to_thread(make_embedder, settings.embedding_model)
            await ingest_paths(db, embedder, [BUNDLED_CORPUS], progress=log_progress())
    finally:
        await db.dispose()


def start_warming(provider: object) -> asyncio.Task[None] | None:
    """The provider's model loading in the background (a provider with nothing to load has no
    ``warm``); a failure is logged and counted, not raised: nobody awaits it."""
    from careerwise.tracing import background

    warm = getattr(provider, "warm", None)
    if warm is None:
        return None
    task: asyncio.Task[None] = asyncio.create_task(warm())
    task.add_done_callback(
        lambda done: background.task_failed(
            done, task=background.LOCAL_MODEL_WARM, logger=log, what="the local model failed to load"
        )
    )
    return task


@app.command()
def chat(
    message: Annotated[str, typer.Argument(help="Your question for Summer.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print each event as one JSON line.")] = False,
    verbose: Annotated[bool, typer.Option("--verbose", "-v")] = False,
) -> None:
    """Ask one question in-process, with the same engine the server uses."""
    from careerwise.engine import TurnRequest
    from careerwise.events import DeltaEvent, ErrorEvent, ToolCallEvent, ToolResultEvent
    from careerwise.services import build_services

    setup_logging(verbose)

    async def run() -> int:
        services = build_services(get_settings())
        # the model loads while the knowledge base does, as the server's start-up has it: a one-shot
        # question would otherwise wait for the two in turn (a failed load is logged and counted, and
        # the question's first call reports it)
        warming = start_warming(services.provider)
        try:
            await services.prepare_knowledge()
            code = 0
            async for event in services.engine.run(TurnRequest(message=message, channel="cli")):
                if as_json:
                    typer.echo(event.model_dump_json())
                    continue
                match event:
                    case DeltaEvent():
                        typer.echo(event.text, nl=False)
                    case ToolCallEvent():
                        console.print(f"[dim]查詢知識庫：{event.effective_arguments}[/dim]")
                    case ToolResultEvent():
                        console.print(
                            f"[dim]{event.returned} 段：{', '.join(s.title for s in event.sources)}[/dim]"
                        )
                    case ErrorEvent():
                        console.print(f"[red]{event.message}[/red]")
                        code = 1
                    case _:
                        pass
            if not as_json:
                typer.echo()
            return code
        finally:
            if warming is not None and not warming.done():
                warming.cancel()
            await services.aclose()

    try:
        raise typer.Exit(asyncio.run(run()))
    except CareerWiseError as exc:
        console.print(f"[red]{exc}[/red]")
        raise typer.Exit(2) from exc


@app.command()
def search(
    query: Annotated[str, typer.Argument()],
    top_k: Annotated[int, typer.Option("--top-k", min=1, max=50)] = 3,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Search the knowledge base directly."""
    from careerwise.services import build_services

    setup_logging(False)

    async def run() -> None:
        services = build_services(get_settings())
        try:
            await services.prepare_knowledge()
            result = await services.kb.search(
                query, top_k=top_k, candidates=max(top_k, services.settings.rerank_candidates)
            )
            hits = result.hits[:top_k]
            if as_json:
                typer.echo(
                    json.dumps(
                        {
                            "query": query,
                            "matched": result.matched,
                            "hits": [
                                {
                                    "document_id": h.chunk.document_id,
                                    "title": h.chunk.title,
                                    "section": h.chunk.section,
                                    "score": h.score,
                                    "dense": h.dense,
                                    "lexical": h.lexical,
                                    "text": h.chunk.text,
                                }
                                for h in hits
                            ],
                        },
                        ensure_ascii=False,
                        indent=2,
                    )
                )
                return
            for n, h in enumerate(hits, 1):
                typer.echo(
                    f"{n}. [{h.score:.4f}] {h.chunk.title} › {h.chunk.section}  ({h.chunk.document_id})"
                )
                typer.echo(f"   {h.chunk.text[:160]}")
            if not hits:
                typer.echo("no matching knowledge")
        finally:
            await services.aclose()

    asyncio.run(run())


@app.command()
def ingest(
    paths: Annotated[list[Path], typer.Argument(help="Files or folders (Markdown, text, HTML, PDF).")],
    prune: Annotated[bool, typer.Option(help="Delete documents that are no longer in PATHS.")] = False,
    recentre: Annotated[
        bool,
        typer.Option(
            help="PostgreSQL: recompute the language means and every centred vector (decision 0011)."
        ),
    ] = False,
) -> None:
    """Add or update documents in the knowledge base (unchanged files are skipped)."""
    from careerwise.knowledge.ingest import expand_paths, ingest_paths
    from careerwise.services import build_services

    setup_logging(False)
    files, _ = expand_paths(paths)

    async def run() -> int:
        settings = get_settings().model_copy(update={"ingest_on_start": False})
        services = build_services(settings)
        try:
            refusal = _recentre_problem(services.db, services.kb.embedder.dim) if recentre else None
            if refusal is not None:  # refused before anything is written: nothing half done
                typer.echo(f"--recentre: {refusal}", err=True)
                return 2
            with Progress(console=console) as progress:
                task = progress.add_task("ingesting", total=len(files))
                report = await ingest_paths(
                    services.db,
                    services.kb.embedder,
                    paths,
                    prune=prune,
                    progress=lambda _doc: progress.advance(task),
                    recentre=recentre,
                )
        finally:
            await services.aclose()
        typer.echo(
            f"added {len(report.added)}, updated {len(report.updated)}, unchanged {len(report.unchanged)}, "
            f"deleted {len(report.deleted)}, chunks written {report.chunks_written}, version {report.version}"
        )
        if report.centring is not None:
            typer.echo(report.centring.describe())
        for path, problem in report.failed.items():
            typer.echo(f"failed: {path}: {problem}", err=True)
        return 1 if report.failed else 0

    raise typer.Exit(asyncio.run(run()))


def _recentre_problem(db: Database, dim: int) -> str | None:
    """Why ``ingest --recentre`` cannot do what it says on this database, or None when it can. Centred
    vectors are stored only where the vectors live in pgvector (decision 0011); elsewhere the option
    would do nothing, silently, so it is refused with the reason instead."""
    from careerwise.knowledge.pg_index import VECTOR_DIM, pgvector_applies

    if pgvector_applies(db, dim):
        return None
    where = "PostgreSQL" if db.is_postgresql else db.engine.dialect.name
    return (
        f"centred vectors are stored only on PostgreSQL with pgvector and {VECTOR_DIM}-dimension vectors; "
        f"this knowledge base is on {where} with {dim}-dimension vectors, so there is nothing to recentre. "
        "Nothing was ingested: run again without --recentre."
    )


app.add_typer(eval_app, name="eval")  # last, as `careerwise --help` has always listed it
