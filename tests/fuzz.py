"""Schemathesis over every operation of a running server, as each role (anonymous, a user, an admin):
the test in ``make test`` (a few hundred cases) and ``python -m bench hostile`` (thousands) share it.

Every generated request is sent whatever came before (no failure stops the run) and its answer is
sorted: a server error (any 5xx), a status the operation does not declare, or a body that breaks the
declared schema. Generation is derandomized: the same requests on every run, so a failure reproduces.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import requests
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.core.failures import FailureGroup
from schemathesis.specs.openapi.checks import response_schema_conformance

ROLES = ("anonymous", "user", "admin")
# routes that change the caller's session: a logged-in role logs in again after them
SESSION_ROUTES = frozenset({"/api/auth/signup", "/api/auth/login", "/api/auth/logout"})
# re-embedding the whole corpus: once per role is enough to prove it answers
EXPENSIVE = {("POST", "/api/admin/knowledge/reindex"): 1}


@dataclass
class FuzzReport:
    cases: int = 0
    operations: set[str] = field(default_factory=set)
    statuses: Counter[int] = field(default_factory=Counter)
    answered: set[tuple[str, str]] = field(default_factory=set)  # (role, operation) given a 2xx
    server_errors: list[str] = field(default_factory=list)
    undocumented: list[str] = field(default_factory=list)
    schema_mismatches: list[str] = field(default_factory=list)

    def failures(self) -> list[str]:
        return self.server_errors + self.undocumented + self.schema_mismatches


def fuzz(
    base_url: str,
    sessions: Mapping[str, requests.Session],
    *,
    examples: int,
    negative_roles: tuple[str, ...],
    log_in: Callable[[str, requests.Session], None],
) -> FuzzReport:
    """``examples`` generated requests per operation, role and generation mode (valid requests for every
    role; requests that break the schema for ``negative_roles``). ``log_in(role, session)`` restores a
    logged-in role's session after an operation that changed it."""
    raw = requests.get(f"{base_url}/openapi.json", timeout=30).json()
    schema = schemathesis.openapi.from_dict(raw)
    report = FuzzReport()
    for result in schema.get_all_operations():
        operation = result.ok()
        declared = set(raw["paths"][operation.path][operation.method.lower()]["responses"])
        count = EXPENSIVE.get((operation.method.upper(), operation.path), examples)
        for role, session in sessions.items():
            modes = [GenerationMode.POSITIVE]
            if role in negative_roles:
                modes.append(GenerationMode.NEGATIVE)
            for mode in modes:
                cookies = session.cookies.copy()
                _run(operation, mode, count, base_url, session, role, declared, report)
                if operation.path in SESSION_ROUTES:
                    # a sign-up replaced the session with a new account's; a log-out closed it
                    session.cookies = cookies
                    if role != "anonymous" and operation.path == "/api/auth/logout":
                        log_in(role, session)
    return report


def _run(
    operation: schemathesis.APIOperation,
    mode: GenerationMode,
    examples: int,
    base_url: str,
    session: requests.Session,
    role: str,
    declared: set[str],
    report: FuzzReport,
) -> None:
    @settings(
        max_examples=examples,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        derandomize=True,
        database=None,
        phases=[Phase.generate],  # nothing raises inside: no shrinking, every case sent once
    )
    @given(case=operation.as_strategy(generation_mode=mode))
    def check(case: schemathesis.Case) -> None:
        response = case.call(base_url=base_url, session=session, timeout=60)
        status = response.status_code
        report.cases += 1
        report.operations.add(operation.label)
        report.statuses[status] += 1
        if status < 300:
            report.answered.add((role, operation.label))
        where = f"{operation.label} as {role} ({mode.value}): {status}"
        if status >= 500:
            report.server_errors.append(f"{where} {response.text[:300]}")
        if str(status) not in declared and "default" not in declared:
            report.undocumented.append(f"{where} (declared: {', '.join(sorted(declared))})")
            return
        try:
            case.validate_response(response, checks=[response_schema_conformance])
        except FailureGroup as exc:
            report.schema_mismatches.append(f"{where}: {str(exc)[:400]}")

    try:
        check()
    except Unsatisfiable:
        return  # no parameter to break (negative mode on an operation without input)
