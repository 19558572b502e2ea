"""CSV cells a spreadsheet reads as text, never as a formula (CSV injection, per OWASP)."""

from __future__ import annotations

from typing import Any

# A cell starting with one of these is a formula to Excel, LibreOffice and Google Sheets
# (tab and carriage return too: some strip them and read what follows).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def safe_cell(value: Any) -> Any:
    """Text that would start a formula, with a single quote in front (OWASP's advice: the
    spreadsheet shows the text, the quote is visible in a text editor). Numbers, dates and
    None are left as they are: a negative count is a number, not a formula."""
    if isinstance(value, dict | list):
        value = str(value)
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


def safe_row(values: list[Any]) -> list[Any]:
    return [safe_cell(v) for v in values]
