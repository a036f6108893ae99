"""``careerwise eval resumes``: the resume review on the labelled set in ``eval/resumes``.

Registered in ``cli/evals.py``::

    eval_app.command("resumes")(eval_resumes)
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Annotated

import typer

from careerwise.cli._common import setup_logging
from careerwise.config import get_settings
from careerwise.errors import CareerWiseError


def eval_resumes(
    folder: Annotated[
        Path | None, typer.Option("--set", help="The set's folder (default: eval/resumes).")
    ] = None,
    only: Annotated[str | None, typer.Option(help="Comma-separated file names (or prefixes) to run.")] = None,
    limit: Annotated[int | None, typer.Option(min=1, help="Run the first N resumes.")] = None,
    offline: Annotated[
        bool,
        typer.Option(
            "--offline", help="Only the section detection without the model, and which pastes are reviewed."
        ),
    ] = False,
    out: Annotated[Path | None, typer.Option("--out", help="Write every result as JSON here.")] = None,
) -> None:
    """Run the labelled resumes through the real upload and review (extraction, masking, the chain on
    the configured provider, storage) and print: completed without the rule fallback, section detection
    accuracy, rewrites and invented figures, the scores of resumes without numbers, time p50/p95. Slow
    on a CPU: about a minute a resume on the embedded model."""
    from careerwise.evals import resumes as ev
    from careerwise.resume import ExtractLimits, Upload, extract_resume

    setup_logging(False)
    root = folder or ev.REPO_EVAL_DIR
    labels = root / "labels.jsonl"
    if not labels.is_file():
        raise typer.BadParameter(f"no labels.jsonl in {root}")
    items = ev.load_items(labels)
    if only:
        wanted = [w.strip() for w in only.split(",") if w.strip()]
        items = [i for i in items if any(i.file.startswith(w) for w in wanted)]
    if limit:
        items = items[:limit]
    texts = {
        i.file: extract_resume((root / i.file).read_bytes(), filename=i.file, limits=ExtractLimits()).text
        for i in items
    }

    if offline:
        results_off = [ev.offline(i, texts[i.file]) for i in items]
        if out is not None:
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(json.dumps([r.__dict__ for r in results_off], ensure_ascii=False, indent=2))
        typer.echo(ev.format_offline(results_off), nl=False)
        return

    import tempfile

    from careerwise.services import build_services

    settings = get_settings()
    scratch = tempfile.TemporaryDirectory(prefix="careerwise-eval-resumes-")
    copied = ev.scratch_database(settings.resolved_database_url, Path(scratch.name))
    if copied is not None:  # the reviews land in a copy (with the knowledge base), not in owners' history
        settings = settings.model_copy(update={"database_url": copied})
    # the set's files are ours: a parse worker slowed by a loaded machine must not refuse one of them
    settings = settings.model_copy(
        update={"upload_worker_timeout": max(settings.upload_worker_timeout, 60.0)}
    )

    def save(results: list[ev.ResumeResult]) -> None:
        if out is None:
            return
        out.parent.mkdir(parents=True, exist_ok=True)
        payload = {
            "set": str(root),
            "summary": ev.summarise(results),
            "results": [r.to_json() for r in results],
        }
        out.write_text(json.dumps(payload, ensure_ascii=False, indent=2), encoding="utf-8")

    async def run() -> list[ev.ResumeResult]:
        results: list[ev.ResumeResult] = []
        services = build_services(settings)
        try:
            await services.prepare_knowledge()
            warm = getattr(services.provider, "warm", None)
            if warm is not None:
                await warm()  # a warm server's figures: the model is loaded before the first resume
            for item in items:
                upload = Upload(
                    data=(root / item.file).read_bytes(),
                    filename=item.file,
                    target_role=None,
                    conversation_id=None,
                    user_id=None,
                )
                started = time.perf_counter()
                try:
                    result = await ev.score_events(
                        item,
                        services.resumes.review_upload(services.engine, upload),
                        resume_text=texts[item.file],
                        started=started,
                    )
                except CareerWiseError as exc:  # refused before the review began: counted as not completed
                    result = ev.ResumeResult(file=item.file, error=f"{type(exc).__name__}: {exc}")
                results.append(result)
                save(results)  # after every resume: a long run stopped midway keeps what it measured
                typer.echo(
                    f"{item.file}: done={result.completed} fallbacks={result.fallbacks or '-'} "
                    f"sections={result.section_hits}/{result.section_total} rewrites={len(result.rewrites)} "
                    f"invented={result.invented or '-'} overall={result.overall} {result.seconds:.1f}s",
                    err=True,
                )
        finally:
            await services.aclose()
        return results

    try:
        results = asyncio.run(run())
    finally:
        scratch.cleanup()
    summary = ev.summarise(results)
    save(results)
    typer.echo(ev.format_table(results, summary), nl=False)
