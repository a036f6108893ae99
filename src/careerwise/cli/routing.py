"""``careerwise route`` and ``careerwise eval routing``: see how a message is routed, route a file of
messages, calibrate the embedding layer's thresholds, and evaluate the cascade on labelled messages.

Registered in ``cli/root.py`` and ``cli/evals.py``::

    app.command("route")(route)
    eval_app.command("routing")(eval_routing)
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console

from careerwise.config import Settings, get_settings
from careerwise.errors import CareerWiseError

if TYPE_CHECKING:
    from careerwise.routing.cascade import CascadeRouter
    from careerwise.routing.evaluation import RoutingReport
    from careerwise.routing.router import RouteDecision

console = Console(stderr=True)


def _cache_dir(settings: Settings) -> Path:
    return settings.data_dir / "cache"


def _routing_model(settings: Settings) -> str:
    """Layer 2's model: the routing setting, else the knowledge base's (the server shares it)."""
    return settings.routing_embedding_model or settings.embedding_model


def _router(
    settings: Settings, *, no_llm: bool, thresholds: Path | None = None, lexical: bool = True
) -> CascadeRouter:
    from careerwise.knowledge.embeddings import make_embedder
    from careerwise.routing.cascade import CascadeRouter
    from careerwise.routing.thresholds import load_thresholds

    provider = None
    if not no_llm:
        from careerwise.services import make_provider

        provider = make_provider(settings)
    embedder = make_embedder(_routing_model(settings))
    return CascadeRouter(
        embedder,
        provider,
        load_thresholds(thresholds, model=embedder.name),
        no_llm=no_llm,
        cache_dir=_cache_dir(settings),
        lexical=lexical,
    )


_NO_LEXICAL_HELP = "Layer 2 without its lexical first stage (the embedding stage alone)."


def _jsonl_messages(path: Path) -> Iterator[str]:
    lines = sys.stdin if str(path) == "-" else path.open(encoding="utf-8")
    try:
        for n, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
                message = row["message"]
            except (ValueError, KeyError, TypeError) as exc:
                raise typer.BadParameter(f'{path}:{n}: expected {{"message": ...}}: {exc}') from exc
            if not isinstance(message, str):
                raise typer.BadParameter(f"{path}:{n}: message must be a string")
            yield message
    finally:
        if lines is not sys.stdin:
            lines.close()


def _human(decision: RouteDecision) -> str:
    head = f"{decision.intent}" + (f" / {decision.tier}" if decision.tier else "")
    lines = [
        f"{head}   (layer {decision.layer}" + (f", rule {decision.rule_id})" if decision.rule_id else ")")
    ]
    lines += [f"  - {r}" for r in decision.reasons]
    return "\n".join(lines)


def route(
    message: Annotated[str | None, typer.Argument(help="The message to route.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the routing record as JSON.")] = False,
    no_llm: Annotated[
        bool, typer.Option("--no-llm", help="Never call the LLM: unsure messages get the embedding guess.")
    ] = False,
    no_lexical: Annotated[bool, typer.Option("--no-lexical", help=_NO_LEXICAL_HELP)] = False,
    jsonl: Annotated[
        Path | None,
        typer.Option(
            "--jsonl", help='Route every {"message": ...} line of FILE ("-": stdin); one JSON line each.'
        ),
    ] = None,
    thresholds: Annotated[
        Path | None,
        typer.Option("--thresholds", help="Use this thresholds file instead of the packaged one."),
    ] = None,
    previous: Annotated[
        list[str] | None,
        typer.Option(
            "--previous",
            help="An earlier user turn of the conversation (repeat, oldest first): the history rule.",
        ),
    ] = None,
    fit: Annotated[
        bool, typer.Option("--fit", help="Calibrate layer 2 (thresholds.json and thresholds-lexical.json).")
    ] = False,
    messages: Annotated[
        list[Path] | None,
        typer.Option("--messages", help="With --fit: labelled files or folders (default: eval/routing)."),
    ] = None,
    out: Annotated[
        Path | None, typer.Option("--out", help="With --fit: where to write (default: the packaged file).")
    ] = None,
    target_precision: Annotated[
        float, typer.Option(min=0.5, max=1.0, help="With --fit: the precision the embedding layer must keep.")
    ] = 0.98,
) -> None:
    """Route a message (intent, tier, and why), a file of messages, or calibrate the thresholds."""
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    modes = sum([message is not None, jsonl is not None, fit])
    if modes != 1:
        raise typer.BadParameter("give exactly one of MESSAGE, --jsonl FILE or --fit")
    settings = get_settings()
    try:
        if fit:
            _fit(settings, messages, out, target_precision)
            return
        asyncio.run(
            _route(
                settings,
                message,
                jsonl,
                as_json=as_json,
                no_llm=no_llm,
                thresholds=thresholds,
                previous=previous or [],
                lexical=settings.routing_lexical and not no_lexical,
            )
        )
    except CareerWiseError as exc:
        console.print(f"[red]{exc}[/red]")
        raise typer.Exit(2) from exc


async def _route(
    settings: Settings,
    message: str | None,
    jsonl: Path | None,
    *,
    as_json: bool,
    no_llm: bool,
    thresholds: Path | None,
    previous: list[str],
    lexical: bool = True,
) -> None:
    router = _router(settings, no_llm=no_llm, thresholds=thresholds, lexical=lexical)
    try:
        if message is not None:
            decision = await router.route_in_context(message, previous)
            typer.echo(json.dumps(decision.to_json(), ensure_ascii=False) if as_json else _human(decision))
            return
        assert jsonl is not None
        for text in _jsonl_messages(jsonl):
            decision = await router.route(text)
            typer.echo(json.dumps({"message": text, **decision.to_json()}, ensure_ascii=False))
    finally:
        if router.llm is not None:
            await router.llm.provider.aclose()


def _fit(settings: Settings, paths: list[Path] | None, out: Path | None, target_precision: float) -> None:
    from careerwise.knowledge.embeddings import make_embedder
    from careerwise.routing.evaluation import fit, load_messages

    loaded = load_messages(paths)
    embedder = make_embedder(_routing_model(settings))
    console.print(f"[dim]{len(loaded)} labelled messages; embedding them with {embedder.name}…[/dim]")
    result = asyncio.run(
        fit(embedder, loaded, cache_dir=_cache_dir(settings), target_precision=target_precision)
    )
    written = result.thresholds.save(out)
    t = result.thresholds
    typer.echo(f"wrote {written}")
    if result.lexical is not None:
        lex = result.lexical
        where = lex.save(out.with_name(f"{out.stem}-lexical{out.suffix}") if out else None)
        typer.echo(
            f"wrote {where}: lexical stage "
            + ", ".join(f"{k} {v:.4f}" for k, v in lex.thresholds.items())
            + f"; margin {lex.margin:.3f} ({lex.report.get('calibration_examples', 0)} examples left out "
            "one at a time as extra calibration points)"
        )
    typer.echo(
        "thresholds: "
        + ", ".join(f"{k} {v:.4f}" for k, v in t.thresholds.items())
        + f"; margin {t.margin:.3f} (target precision {t.target_precision:.2f}, "
        f"{t.report.get('calibration_messages', 0)} calibration messages and "
        f"{t.report.get('calibration_examples', 0)} examples left out one at a time)"
    )
    typer.echo(
        "no-LLM guess bars (1.01: never, the guess stays career): "
        + ", ".join(f"{k} {v:.4f}" for k, v in t.guess.items())
    )
    typer.echo("held-out split, layer 3 off (its share shows as embedding-guess), lexical stage on:")
    typer.echo(result.test.format())


def eval_routing(
    split: Annotated[str, typer.Option(help="train (calibration), test (held out) or all.")] = "test",
    no_llm: Annotated[
        bool, typer.Option("--no-llm", help="Layer 3 off: unsure messages get the embedding guess.")
    ] = False,
    no_lexical: Annotated[bool, typer.Option("--no-lexical", help=_NO_LEXICAL_HELP)] = False,
    messages: Annotated[
        list[Path] | None,
        typer.Option("--messages", help="Labelled files or folders (default: eval/routing)."),
    ] = None,
    thresholds: Annotated[
        Path | None,
        typer.Option("--thresholds", help="Use this thresholds file instead of the packaged one."),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON document.")] = False,
    errors: Annotated[bool, typer.Option("--errors", help="Also list the misrouted messages.")] = False,
) -> None:
    """Intent accuracy, tier accuracy, the share each layer decided and a confusion matrix of the routing
    cascade on the labelled messages in eval/routing."""
    from careerwise.routing.evaluation import SPLITS, embed_messages, evaluate, load_messages

    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    if split not in SPLITS:
        raise typer.BadParameter(f"--split must be one of {', '.join(SPLITS)}")
    settings = get_settings()
    loaded = load_messages(messages)

    async def run() -> RoutingReport:
        router = _router(settings, no_llm=no_llm, thresholds=thresholds, lexical=not no_lexical)
        try:
            embedder = router.semantic.embedder
            vectors = await asyncio.to_thread(embed_messages, embedder, loaded, _cache_dir(settings))
            return await evaluate(router, loaded, split=split, vectors=vectors)
        finally:
            if router.llm is not None:
                await router.llm.provider.aclose()

    try:
        report = asyncio.run(run())
    except CareerWiseError as exc:
        console.print(f"[red]{exc}[/red]")
        raise typer.Exit(2) from exc
    if as_json:
        typer.echo(json.dumps(report.to_json(), ensure_ascii=False, indent=2))
        return
    first = "" if no_lexical else "a lexical stage, then "
    typer.echo(f"layer 2: {first}{_routing_model(settings)} embeddings")
    typer.echo(report.format())
    if errors:
        for e in report.errors:
            typer.echo(f"  {e['gold']} → {e['got']} [{e['layer']}] {e['message']!r}")
