"""Dependencies point one way: domain apps import the kernel, never the reverse,
tools (tests, benchmarks, scripts, deployment) import the apps, never the
reverse, and neither the import graph of the top-level packages nor that of
their modules has a cycle. Read from the source (every import statement, those
inside functions included), so an import hidden in a function to dodge a cycle
is found too. Imports under `if TYPE_CHECKING:` never run and are left out."""

import ast
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
KERNEL = "bankapi"
DOMAIN_APPS = (
    "authn",
    "payments",
    "batches",
    "cards",
    "onboarding",
    "events",
    "audit",
    "approvals",
    "sandbox",
)
# What sits on top of the apps and ships no route: the tests, the benchmarks, the
# developer scripts and the deployment's configuration (gunicorn's hooks).
TOOLS = ("tests", "bench", "scripts", "deploy")
PACKAGES = (KERNEL, *DOMAIN_APPS, *TOOLS)
# The project's configuration (settings, root urls, the Celery app and its
# schedule) sits beside the apps; the package rules count it as the kernel's own.
CONFIG = "config"
# The configuration modules whose job is to wire the apps together: the root urls
# and the Celery app (settings name classes by dotted string and import nothing).
WIRING = {"config/urls.py", "config/celery.py"}
# Top-level directories that hold no code of the project.
NOT_PACKAGES = {"docs", "var", "staticfiles", "media", "node_modules", "__pycache__"}

# Every edge one package other than the kernel may have to another package
# other than the kernel, and why (anything may import the kernel). Anything else fails.
ALLOWED = {
    ("batches", "payments"): "a batch funds and pays through the payments ledger and payment services",
    ("batches", "authn"): "submitting a batch takes the authn step-up confirmation",
    ("cards", "authn"): "showing card details takes the authn step-up confirmation",
    (
        "cards",
        "payments",
    ): "a card authorization is decided, held and cleared by the payments decision and ledger",
    ("payments", "events"): "payment state changes write their events in the same transaction",
    ("batches", "events"): "batch state changes write their events in the same transaction",
    ("cards", "events"): "a card issued writes its event in the same transaction",
    ("onboarding", "events"): "application changes write their events in the same transaction",
    ("approvals", "payments"): "an approved payment or schedule runs through the payment create services",
    ("approvals", "batches"): "an approved batch submit makes its batch through batch submit's services",
    ("approvals", "authn"): "approving takes the authn step-up (passkey over the content, or TOTP)",
    ("approvals", "events"): "approval state changes write their events in the same transaction",
    ("sandbox", "authn"): "a customer made on demand gets its user as the bootstrap makes its users",
    ("sandbox", "payments"): "customers on demand are funded through the ledger as the bootstrap's; "
    "an advance runs the payments' schedule runner",
    ("sandbox", "cards"): "a customer made on demand gets a card through the card issue service",
    **{("tests", package): "the tests exercise every app" for package in DOMAIN_APPS},
    ("tests", "bench"): "the tests build pain.001 files with the generator the benchmarks use",
    **{
        ("bench", package): "a benchmark seeds and drives the apps it measures"
        for package in ("authn", "payments", "batches", "cards", "events", "sandbox")
    },
}


def _type_checking_only(tree: ast.Module) -> set[int]:
    """The ids of the nodes under `if TYPE_CHECKING:` (imports for annotations only)."""
    hidden: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            hidden |= {id(inner) for statement in node.body for inner in ast.walk(statement)}
    return hidden


def import_statements(path: Path) -> list[ast.Import | ast.ImportFrom]:
    """Every import statement of the module that can run, at any depth."""
    tree = ast.parse(path.read_text(), filename=str(path))
    hidden = _type_checking_only(tree)
    return [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom) and id(node) not in hidden
    ]


def imported_modules(path: Path) -> list[tuple[int, str]]:
    found = []
    for node in import_statements(path):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif node.level == 0 and node.module:
            found.append((node.lineno, node.module))
    return found


def project_modules() -> dict[str, Path]:
    """Dotted name -> file, for every module of the project (a package by its `__init__`)."""
    modules = {}
    for package in (*PACKAGES, CONFIG):
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            if "migrations" in parts:
                continue
            modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return modules


def _project_module(name: str, modules: dict[str, Path]) -> str | None:
    """The project module `name` loads: itself, or the nearest package holding it."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def module_imports(modules: dict[str, Path]) -> set[tuple[str, str]]:
    """(importing module, imported module) for every import between two project
    modules: `from a.b import c` names the module `a.b.c` when there is one, else `a.b`."""
    edges = set()
    for module, path in modules.items():
        package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
        for node in import_statements(path):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                base = node.module or ""
                if node.level:
                    base = ".".join([*package[: len(package) - node.level + 1], *([base] if base else [])])
                targets = [
                    f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base
                    for alias in node.names
                ]
            for target in targets:
                imported = _project_module(target, modules)
                if imported is not None and imported != module:
                    edges.add((module, imported))
    return edges


def app_imports() -> dict[tuple[str, str], list[str]]:
    """(importing package, imported package) -> where, for every import between two."""
    package_of = {**{package: package for package in PACKAGES}, CONFIG: KERNEL}
    edges: dict[tuple[str, str], list[str]] = defaultdict(list)
    for folder, app in package_of.items():
        for path in sorted((ROOT / folder).rglob("*.py")):
            relative = path.relative_to(ROOT).as_posix()
            if "/migrations/" in relative:
                continue
            for line, module in imported_modules(path):
                target = package_of.get(module.split(".")[0])
                if target is not None and target != app:
                    edges[(app, target)].append(f"{relative}:{line} imports {module}")
    return edges


def cycle_in(edges: set[tuple[str, str]]) -> list[str] | None:
    """One cycle of the directed graph, as the list of its nodes, or None."""
    graph: dict[str, list[str]] = defaultdict(list)
    for source, target in edges:
        graph[source].append(target)
    state: dict[str, str] = {}

    def visit(node: str, path: list[str]) -> list[str] | None:
        state[node] = "open"
        for target in sorted(graph[node]):
            if state.get(target) == "open":
                return [*path[path.index(target) :], target]
            if target not in state and (found := visit(target, [*path, target])):
                return found
        state[node] = "done"
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node, [node])):
            return found
    return None


def test_every_top_level_package_is_in_the_graph():
    with_code = {
        path.name
        for path in ROOT.iterdir()
        if path.is_dir()
        and not path.name.startswith(".")
        and path.name not in NOT_PACKAGES
        and any(path.rglob("*.py"))
    }

    assert with_code - {*PACKAGES, CONFIG} == set()


def test_the_kernel_imports_no_domain_app():
    kernel_imports = [
        where
        for (source, _), places in app_imports().items()
        if source == KERNEL
        for where in places
        if where.split(":")[0] not in WIRING
    ]

    assert kernel_imports == []


def test_packages_import_each_other_only_along_the_allowed_edges():
    unexplained = {
        edge: places for edge, places in app_imports().items() if KERNEL not in edge and edge not in ALLOWED
    }

    assert unexplained == {}


def test_the_app_import_graph_has_no_cycle():
    edges = {
        edge
        for edge, places in app_imports().items()
        if edge[0] != KERNEL or any(where.split(":")[0] not in WIRING for where in places)
    }

    assert cycle_in(edges) is None


def test_the_module_import_graph_has_no_cycle():
    """No circle of modules, not even one closed only by an import inside a function:
    the piece two modules share lives where both can import it at the top."""
    circle = cycle_in(module_imports(project_modules()))

    assert circle is None


def test_the_module_graph_sees_imports_inside_functions_and_relative_imports(tmp_path):
    package = tmp_path / "app"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "services.py").write_text("def queue():\n    from app.tasks import run\n")
    (package / "tasks.py").write_text("from . import services\nfrom typing import TYPE_CHECKING\n")
    (package / "views.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from app.services import queue\n"
    )
    modules = {
        "app": package / "__init__.py",
        **{f"app.{n}": package / f"{n}.py" for n in ("services", "tasks", "views")},
    }

    edges = module_imports(modules)

    assert edges == {("app.services", "app.tasks"), ("app.tasks", "app.services")}
    assert cycle_in(edges) == ["app.services", "app.tasks", "app.services"]


def test_the_cycle_finder_finds_a_cycle_and_none_in_a_chain():
    assert cycle_in({("events", "payments"), ("payments", "events")}) == ["events", "payments", "events"]
    assert cycle_in({("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")}) == ["a", "b", "c", "a"]
    assert cycle_in({("batches", "payments"), ("payments", "bankapi"), ("batches", "bankapi")}) is None
