"""Imported only by the fork server (``_worker.PARSERS``), never by the app: what it sets here, every
parse worker forked from it inherits."""

from __future__ import annotations

import warnings

# An app started as ``python -m some.module`` (a module, not a package's ``__main__`` such as
# ``python -m careerwise.cli``) is re-run as ``__mp_main__`` in each child (multiprocessing's rule for
# the main module) while the fork server holds it imported already, so runpy warns in every child. The
# re-run only defines the module's functions again: harmless.
warnings.filterwarnings(
    "ignore", message=r"'.*' found in sys\.modules after import of package", category=RuntimeWarning
)
