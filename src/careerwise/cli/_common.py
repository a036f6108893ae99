"""What the commands share: logging set up the same way, and one console on stderr."""

from __future__ import annotations

import logging

from rich.console import Console

from careerwise.tracing.masking import install_log_masking

__all__ = ["QUIET_LOGGERS", "console", "setup_logging"]

console = Console(stderr=True)  # progress and notes; stdout is kept for the command's output

# The HTTP clients under the openai SDK log every request at INFO ("HTTP Request: POST .../chat/completions
# 200"). Our own trace already records each LLM call with more (model, tokens, timings, outcome), and the
# line costs its formatting and the masking filter on every call (decision 0012): their warnings and
# errors still come through.
QUIET_LOGGERS = ("httpx", "httpx2")


def setup_logging(verbose: bool) -> None:
    logging.basicConfig(
        level=logging.INFO if verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    for name in QUIET_LOGGERS:
        logging.getLogger(name).setLevel(logging.WARNING)
    install_log_masking()  # e-mails, phones, LINE ids out of every log line (tracing/masking.py)
