"""The report as a document: ``summary.html`` from Jinja2 templates (autoescaped) and
``summary.md`` with the same structure: contents first, then each section's text, tables and
figures together.

Every string on the page may come from the input (arm names, strategy names, transcripts that
quote retrieved web pages), so the templates escape everything they are given, control and
bidirectional characters are shown as visible escapes, and a Content-Security-Policy forbids
scripts; only fragments this package builds itself (Great Tables' HTML of escaped cells, the
strategy explorer rendered by the same autoescaping environment) are inserted as markup.
Images are referenced by relative path inside the output folder.
"""
from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup

from mechanism.core.names import escape_control
from mechanism.core.text import md_escape
from mechanism.report.tables import ReportTable

_STYLE = """
body{font-family:system-ui,sans-serif;max-width:64em;margin:auto;padding:0 1em 3em;line-height:1.45;color:#222}
h1{font-size:1.6em}h2{border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:2em}
nav#contents{background:#f6f8fa;border:1px solid #ddd;padding:.3em 1em;margin:1em 0}
nav#contents ol{columns:2;margin:.3em 0}
.table{margin:1em 0;overflow-x:auto;max-width:100%}.table table{margin-left:0!important}
#table-strategies td:nth-child(2){min-width:16em}
.figures{display:block}
figure{margin:1.2em 0}figure img{width:100%;height:auto;border:1px solid #ddd}
figcaption{font-size:.9em;color:#444}
ul.findings li{margin:.25em 0}
.explorer input{margin-left:.8em}
.strategy{border-top:2px solid #bbb;margin-top:1.5em}
article.member{border:1px solid #ddd;border-left:4px solid #0072B2;padding:.2em .8em;margin:.8em 0;background:#fcfcfc}
article.member.failure{border-left-color:#D55E00}
article.member h4{margin:.4em 0}
ol.calls li.call{margin:.4em 0}li.call.failed{background:#fff3f0}
ul.values{margin:.1em 0;font-size:.92em}
p.observation,p.thought,p.sources{margin:.1em 0;font-size:.9em;color:#444;overflow-wrap:anywhere}
ol.calls li.user-turn{list-style:none;margin:.4em 0 .4em -1.2em;padding:.2em .5em;background:#eef5ff;
border-left:3px solid #56B4E9;overflow-wrap:anywhere}
li.provenance-user{color:#0b5394}
nav.pages,nav.questions{margin:.5em 0;font-size:.92em;overflow-wrap:anywhere}
section.question-group{border-top:1px solid #ddd;margin-top:1em}
code{overflow-wrap:anywhere;background:#f3f3f3;padding:0 .2em}
.bad{color:#b00}p.top{font-size:.85em}
#outcome-success:checked~.strategies .member:not(.success){display:none}
#outcome-failure:checked~.strategies .member:not(.failure){display:none}
"""

PAGE_STYLE = _STYLE  # the page's CSS, shared by the pages of strategy members


@dataclass
class PageSection:
    """One section of the page: ``key`` (its anchor), ``title``, ``paragraphs`` and ``items``
    (text, escaped), ``tables`` (:class:`~mechanism.report.tables.ReportTable`), ``figures``
    (``(caption, relative PNG path)``), and ``html``/``markdown``: a fragment built by this
    package (the strategy explorer, a lead study table), inserted as it is."""

    key: str
    title: str
    paragraphs: list[str] = field(default_factory=list)
    items: list[str] = field(default_factory=list)
    tables: list[ReportTable] = field(default_factory=list)
    figures: list[tuple[str, str]] = field(default_factory=list)
    html: Any = None
    markdown: str | None = None


def as_section(item: Any, *, taken: set[str] | None = None) -> PageSection:
    """A :class:`PageSection` from a section, a ``(heading, text)`` pair (multi-line text
    becomes a list, never a preformatted block) or any object with ``title`` and ``html``
    and/or ``markdown`` (the lead sections a caller puts first)."""
    if isinstance(item, PageSection):
        section = item
    elif isinstance(item, tuple):
        heading, text = item
        lines = [line.strip() for line in str(text).splitlines() if line.strip()]
        section = (PageSection(key=anchor(heading), title=heading, paragraphs=lines) if len(lines) <= 1
                   else PageSection(key=anchor(heading), title=heading, paragraphs=lines[:1], items=lines[1:]))
    else:
        title = str(item.title)
        fragment = getattr(item, "html", None)
        section = PageSection(key=str(getattr(item, "key", None) or anchor(title)), title=title,
                              html=Markup(fragment) if fragment is not None else None,
                              markdown=getattr(item, "markdown", None))
    if taken is not None:  # anchors stay unique on the page
        base, i = section.key, 2
        while section.key in taken:
            section.key, i = f"{base}-{i}", i + 1
        taken.add(section.key)
    return section


def anchor(title: str) -> str:
    """An HTML id from a heading (ASCII letters, digits and hyphens).

    >>> anchor("PASS@(k,T) and the capability boundary")
    'pass-k-t-and-the-capability-boundary'
    """
    return re.sub(r"[^a-z0-9]+", "-", str(title).lower()).strip("-")[:60] or "section"


@functools.lru_cache(maxsize=1)
def environment():
    """The templates' environment: autoescaping on, every printed string first made safe to
    show (control and bidirectional characters as visible escapes, whitespace collapsed)."""
    def finalize(value: Any) -> Any:
        if isinstance(value, str) and not isinstance(value, Markup):
            return escape_control(" ".join(value.split()))
        return value

    return jinja2.Environment(loader=jinja2.PackageLoader("mechanism.report", "templates"),
                              autoescape=True, finalize=finalize, undefined=jinja2.StrictUndefined)


def render(template: str, **context: Any) -> Any:
    """Render a template of this package; returns ``markupsafe.Markup``."""
    return Markup(environment().get_template(template).render(**context))


def write_page(out: str | Path, *, title: str, sections: Sequence[Any], figures: Sequence[tuple[str, str]] = (),
               verdicts: Sequence[str] = (), style: str = "") -> tuple[Path, Path]:
    """Write ``out/summary.md`` and ``out/summary.html``.

    Parameters
    ----------
    out
        Report folder; figure paths are relative to it.
    title
        Page title.
    sections
        :class:`PageSection` objects, ``(heading, text)`` pairs, or objects with ``title`` and
        ``html``/``markdown``, in page order; each gets an entry in the contents.
    figures
        More ``(caption, relative PNG path)`` shown in a last section; missing files are left out.
    verdicts
        One sentence per comparison, shown as a first section when given.
    style
        More CSS (built by this package, e.g. the explorer's filters).

    Returns
    -------
    (Path, Path)
        The Markdown and HTML files.
    """
    out = Path(out)
    taken: set[str] = set()
    shown = ([PageSection(key="verdicts", title="Verdicts", items=list(verdicts))] if verdicts else [])
    shown += list(sections)
    if figures:
        shown.append(PageSection(key="figures", title="Figures", figures=list(figures)))
    shown = [as_section(s, taken=taken) for s in shown]
    for s in shown:
        s.figures = [(cap, rel) for cap, rel in s.figures if (out / rel).is_file()]
    page = render("page.html.j2", title=title, sections=shown, style=Markup(_STYLE + style))
    html_path = out / "summary.html"
    html_path.write_text(page + "\n", encoding="utf-8")
    md_path = out / "summary.md"
    md_path.write_text(markdown_page(title, shown) + "\n", encoding="utf-8")
    return md_path, html_path


def markdown_page(title: str, sections: Sequence[PageSection]) -> str:
    """The page as Markdown: the same sections in the same order, tables as pipe tables."""
    md = [f"# {md_escape(title)}", "", "## Contents", ""]
    md += [f"{i}. [{md_escape(s.title)}](#{s.key})" for i, s in enumerate(sections, start=1)] + [""]
    for s in sections:
        md += [f'<a id="{s.key}"></a>', "", f"## {md_escape(s.title)}", ""]
        md += [part for p in s.paragraphs for part in (md_escape(p), "")]
        if s.items:
            md += [f"- {md_escape(item)}" for item in s.items] + [""]
        md += [part for t in s.tables for part in (t.markdown(), "")]
        if s.markdown:
            md += [s.markdown, ""]
        for caption, rel in s.figures:
            md += [f"![{md_escape(caption)}]({rel.replace(' ', '%20').replace(')', '%29')})", "",
                   f"*{md_escape(caption)}*", ""]
    return "\n".join(md).rstrip()
