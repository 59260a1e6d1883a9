"""Text written into a statement line, escaped for its format, in Python and
as the same rule in PostgreSQL (`payments.statement_formats` writes each
line both ways)."""

import re
from xml.sax.saxutils import escape

# A spreadsheet reads a cell starting with one of these as a formula.
_FORMULA_STARTS = ("=", "+", "-", "@")
# A text cell holding one of these is quoted (as csv.writer's minimal quoting does).
_CSV_QUOTED = (",", '"', "\r", "\n")
# Characters XML 1.0 cannot carry, even escaped (PostgreSQL's text holds
# neither NUL nor surrogates: the others are listed for it in _NOT_XML_SQL).
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
_NOT_XML_SQL = [*range(1, 9), 11, 12, *range(14, 32), 0xFFFE, 0xFFFF]


def xml_text(value: str) -> str:
    """Text as element content: escaped, and what XML 1.0 cannot carry replaced."""
    return escape(_NOT_XML.sub("\ufffd", value))


def csv_cell(value: str) -> str:
    """A text cell as `csv.writer` (minimal quoting) writes it, after the
    formula guard."""
    cell = f"'{value}" if value.startswith(_FORMULA_STARTS) else value
    if any(c in cell for c in _CSV_QUOTED):
        cell = '"' + cell.replace('"', '""') + '"'
    return cell


def sql_literal(text: str) -> str:
    """`text` as an SQL string literal, in a statement with named parameters."""
    return "'" + text.replace("'", "''").replace("%", "%%") + "'"


def csv_sql(column: str) -> str:
    """csv_cell in SQL."""
    guard = f"CASE WHEN left({column}, 1) IN ('=', '+', '-', '@') THEN '''' ELSE '' END"
    quoted = " OR ".join(f"strpos({column}, {part}) > 0" for part in ("','", "'\"'", "chr(13)", "chr(10)"))
    return (
        f"CASE WHEN {quoted} THEN '\"' || {guard} || replace({column}, '\"', '\"\"') || '\"' "
        f"ELSE {guard} || {column} END"
    )


def xml_sql(column: str) -> str:
    """xml_text in SQL. Each step only where the text needs it: translate() is
    slow (it looks every character up in its list), and most text holds
    neither markup nor control characters."""
    unfit = [f"chr({code})" for code in _NOT_XML_SQL]
    fitted = (
        f"CASE WHEN {column} ~ ('[' || {' || '.join(unfit)} || ']') "
        f"THEN translate({column}, {' || '.join(unfit)}, repeat(chr(65533), {len(unfit)})) "
        f"ELSE {column} END"
    )
    markup = " + ".join(f"strpos({column}, '{mark}')" for mark in "&<>")
    return (
        f"CASE WHEN {markup} > 0 "
        f"THEN replace(replace(replace({fitted}, '&', '&amp;'), '<', '&lt;'), '>', '&gt;') "
        f"ELSE {fitted} END"
    )
