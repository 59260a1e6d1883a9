"""The project's text stands alone: no file cites a design note or a contract
document kept outside the project, or their section numbers. A decision a
maintainer must know is written in docs/ (docs/architecture.md first)."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TEXT_SUFFIXES = {".py", ".md", ".html", ".txt", ".toml", ".cfg", ".ini", ".yml", ".yaml", ".json", ".sh"}
TEXT_NAMES = {"Makefile", "Dockerfile"}
# Parts of the tree that are not the project's own text.
SKIPPED_DIRS = {".venv", ".git", "var", "__pycache__", "node_modules", "staticfiles"}
CITATIONS = [
    re.compile(r"DESIGN\.md"),
    re.compile(r"API-SPEC"),
    re.compile(r"\.\./shared"),
    re.compile(r"\bDESIGN\s+(sections?\s+)?[0-9]+"),
    re.compile(r"\bspec\s+[0-9]+"),
]


def project_text_files() -> list[Path]:
    found = []
    for path in ROOT.rglob("*"):
        relative = path.relative_to(ROOT)
        if any(part in SKIPPED_DIRS or part.startswith(".") for part in relative.parts[:-1]):
            continue
        if path.is_file() and (path.suffix in TEXT_SUFFIXES or path.name in TEXT_NAMES):
            found.append(path)
    return found


def citations_in(text: str) -> list[str]:
    return [match.group(0) for pattern in CITATIONS for match in pattern.finditer(text)]


def test_no_project_file_cites_outside_design_notes():
    this_file = Path(__file__).resolve()
    cited = {
        str(path.relative_to(ROOT)): found
        for path in project_text_files()
        if path.resolve() != this_file and (found := citations_in(path.read_text(errors="replace")))
    }

    assert cited == {}


def test_the_citation_patterns_find_what_they_must_and_leave_rfcs_alone():
    assert citations_in("see DESIGN" + ".md section 5") == ["DESIGN.md"]
    assert citations_in("as DESIGN 13 promises") == ["DESIGN 13"]
    assert citations_in("(DESIGN sections 5 and 12)") == ["DESIGN sections 5"]
    assert citations_in("(spec 3.6)") == ["spec 3"]
    assert citations_in("read ../shared/notes") == ["../shared"]
    assert citations_in("RFC 3339 timestamps; the Standard Webhooks specification v1") == []


def test_the_walk_reads_the_project_code_and_docs():
    names = {str(path.relative_to(ROOT)) for path in project_text_files()}

    assert {"README.md", "docs/architecture.md", "config/settings.py", "manage.py"} <= names
