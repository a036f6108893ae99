"""The package's modules stay readable in one sitting and keep their private parts private: no file
under src/careerwise is over 500 lines, and no module imports a private (``_name``) module or name of
another package. A package's own modules may share its private parts."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "careerwise"
MAX_LINES = 500


def _package_of(path: Path) -> str:
    return ".".join(("careerwise", *path.relative_to(PACKAGE).parent.parts))


def _private_imports(tree: ast.AST, importer: str) -> list[str]:
    """``careerwise.…`` imports that reach a ``_name`` owned by a package other than ``importer``'s own
    (or one of its parents): the owner of ``a.b._c`` is the package ``a.b`` when ``b`` is a module of
    it, ``a.b`` itself when ``b`` is a package."""
    found: list[str] = []
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [f"{node.module}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        for name in names:
            parts = name.split(".")
            if parts[0] != "careerwise":
                continue
            for i, part in enumerate(parts):
                if part.startswith("_") and not part.startswith("__"):
                    is_package = PACKAGE.joinpath(*parts[1:i]).is_dir()
                    owner = ".".join(parts[:i] if is_package else parts[: i - 1])
                    if importer != owner and not importer.startswith(owner + "."):
                        found.append(name)
                    break
    return found


def test_no_module_is_over_the_line_limit() -> None:
    sizes = {p.relative_to(PACKAGE).as_posix(): len(p.read_text(encoding="utf-8").splitlines())
             for p in PACKAGE.rglob("*.py")}  # fmt: skip
    assert len(sizes) > 200
    assert {name: n for name, n in sizes.items() if n > MAX_LINES} == {}


def test_no_module_imports_another_packages_private_parts() -> None:
    found = {
        path.relative_to(PACKAGE).as_posix(): bad
        for path in PACKAGE.rglob("*.py")
        if (bad := _private_imports(ast.parse(path.read_text(encoding="utf-8")), _package_of(path)))
    }
    assert found == {}


def test_the_private_import_check_tells_own_from_foreign() -> None:
    tree = ast.parse(
        "from careerwise.flows.tool_use import _Round\n"  # a module of flows: its own
        "from careerwise.flows.deep_steps import _step\n"  # deep_steps is a package of its own
        "import careerwise.store._hidden\n"
    )
    assert _private_imports(tree, "careerwise.flows") == [
        "careerwise.flows.deep_steps._step",
        "careerwise.store._hidden",
    ]
    assert _private_imports(tree, "careerwise.flows.deep_steps") == ["careerwise.store._hidden"]
    assert len(_private_imports(tree, "careerwise.api")) == 3
