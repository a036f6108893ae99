"""The ``careerwise`` command (``[project.scripts]`` points at :data:`app`).

One module per group: ``root`` (serve, chat, search, ingest, and where every group is added),
``admin`` (settings, traces), ``apikeys``, ``assistants``, ``evals`` (with ``resumes`` and ``routing``),
``slots`` and ``users``.
"""

import os

# do not 'fix' this into Settings: OpenMP reads it once, when the first numeric library loads, before any
# settings object exists. Without it the embedder and llama.cpp spin-wait and slow each other down. Set
# here, before any command module is imported, because every import of the command starts here.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

from careerwise.cli.root import app, server_stack_problem

__all__ = ["app", "server_stack_problem"]
