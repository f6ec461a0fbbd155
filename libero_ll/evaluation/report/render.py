"""Rendering of report tables and sections as self-contained HTML, Markdown and CSV text."""

from __future__ import annotations

import csv
import html
import io
import math
from collections.abc import Sequence

from libero_ll.evaluation.report.tables import Table

STYLE = """
body { font-family: sans-serif; margin: 2em auto; max-width: 1200px; color: #222; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 2em; border-bottom: 1px solid #ccc; }
h3 { font-size: 1.0em; }
table { border-collapse: collapse; margin: 0.5em 0; font-size: 0.85em; }
th, td { border: 1px solid #ccc; padding: 3px 7px; text-align: right; }
th { background: #f3f3f3; } td:first-child, th:first-child { text-align: left; }
.note { color: #555; font-size: 0.8em; margin: 0.2em 0; }
img { max-width: 100%; border: 1px solid #eee; margin: 0.3em 0; }
.figs { display: flex; flex-wrap: wrap; gap: 0.5em; } .figs figure { margin: 0; }
figcaption { font-size: 0.75em; color: #555; max-width: 320px; word-break: break-all; }
code { background: #f5f5f5; padding: 0 3px; }
"""


def table_html(table: Table) -> str:
    """A table as an HTML fragment: a heading, the table, its notes."""
    out = [f"<h3>{html.escape(table.title)}</h3>", "<table>", "<tr>"]
    out += [f"<th>{html.escape(h)}</th>" for h in table.headers]
    out.append("</tr>")
    for row in table.rows:
        cells = []
        for c in row:
            text = html.escape(c.text) + (f"<sup>{html.escape(c.mark)}</sup>" if c.mark else "")
            cells.append(f"<td><b>{text}</b></td>" if c.bold else f"<td>{text}</td>")
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</table>")
    out += [f'<p class="note">{html.escape(n)}</p>' for n in table.notes]
    return "\n".join(out)


def _md_escape(text: str) -> str:
    return text.replace("|", "\\|")


def table_markdown(table: Table) -> str:
    """A table as Markdown: a heading, a pipe table, its notes."""
    lines = [f"### {table.title}", "", "| " + " | ".join(_md_escape(h) for h in table.headers) + " |"]
    lines.append("|" + "|".join(["---"] + ["---:"] * (len(table.headers) - 1)) + "|")
    for row in table.rows:
        cells = []
        for c in row:
            text = _md_escape(c.text) + c.mark
            cells.append(f"**{text}**" if c.bold and c.text else text)
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    lines += [f"- {n}" for n in table.notes]
    return "\n".join(lines) + "\n"


def records_csv(records: Sequence[dict]) -> str:
    """CSV text of records (one dict per row; the union of their keys, in first-seen order, as header).

    Floats are written with full precision (repr); NaN as an empty field.
    """
    keys: list[str] = []
    for r in records:
        keys += [k for k in r if k not in keys]
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=keys, lineterminator="\n")
    writer.writeheader()
    for r in records:
        writer.writerow({k: _csv_value(r.get(k)) for k in keys})
    return buf.getvalue()


def _csv_value(v):
    if isinstance(v, float):
        return "" if math.isnan(v) else repr(v)
    return "" if v is None else v


def figure_html(src: str, caption: str) -> str:
    """An image referenced by a relative path, with a caption."""
    return (
        f'<figure><img src="{html.escape(src)}" alt="{html.escape(caption)}">'
        f"<figcaption>{html.escape(caption)}</figcaption></figure>"
    )


def page_html(title: str, body: Sequence[str]) -> str:
    """A complete HTML page: inline style, no scripts, no external resources."""
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f"<title>{html.escape(title)}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n"
        + "\n".join(body)
        + "\n</body>\n</html>\n"
    )
