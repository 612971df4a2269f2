"""The one-page summary: ``summary.md`` and ``summary.html`` with every figure and the verdicts.

Every string on the page may come from the input (arm names, strategy keywords, notes that
quote a file), so the HTML escapes all of it and forbids scripts with a Content-Security-Policy;
images are referenced by relative path inside the output folder.
"""
from __future__ import annotations

import html
from collections.abc import Sequence
from pathlib import Path

_STYLE = ("body{font-family:sans-serif;max-width:62em;margin:auto;padding:0 1em;line-height:1.4}"
          "pre{white-space:pre-wrap;background:#f6f6f6;padding:.6em}figure{margin:1.2em 0}"
          "img{max-width:100%;border:1px solid #ddd}li{margin:.3em 0}")


def write_page(out: str | Path, *, title: str, sections: Sequence[tuple[str, str]],
               figures: Sequence[tuple[str, str]], verdicts: Sequence[str] = (),
               lead: Sequence[tuple[str, str, str]] = ()) -> tuple[Path, Path]:
    """Write ``out/summary.md`` and ``out/summary.html``.

    Parameters
    ----------
    out
        Report folder; figure paths are relative to it.
    title
        Page title.
    sections
        ``(heading, text)`` pairs; multi-line text is shown preformatted.
    figures
        ``(caption, relative path of the PNG)`` pairs; missing files are left out.
    verdicts
        One sentence per comparison, shown first as a list.
    lead
        ``(heading, Markdown, HTML)`` blocks shown before everything else, already rendered
        (and escaped) by their producer, e.g. the demo's reproduced study.

    Returns
    -------
    (Path, Path)
        The Markdown and HTML files.
    """
    out = Path(out)
    figures = [(cap, rel) for cap, rel in figures if (out / rel).is_file()]
    md = [f"# {_md(title)}", ""]
    for heading, markdown, _ in lead:
        md += [f"## {_md(heading)}", "", markdown, ""]
    if verdicts:
        md += ["## Verdicts", ""] + [f"- {_md(v)}" for v in verdicts] + [""]
    for heading, text in sections:
        md += [f"## {_md(heading)}", ""]
        md += (["```text", text.replace("```", "'''"), "```", ""] if "\n" in text else [_md(text), ""])
    md += ["## Figures", ""]
    for caption, rel in figures:
        md += [f"![{_md(caption)}]({rel.replace(' ', '%20').replace(')', '%29')})", "", f"*{_md(caption)}*", ""]
    md_path = out / "summary.md"
    md_path.write_text("\n".join(md) + "\n", encoding="utf-8")

    body = [f"<h1>{html.escape(title)}</h1>"]
    body += [f"<h2>{html.escape(heading)}</h2>{block}" for heading, _, block in lead]
    if verdicts:
        body.append("<h2>Verdicts</h2><ul class='verdicts'>"
                    + "".join(f"<li>{html.escape(v)}</li>" for v in verdicts) + "</ul>")
    for heading, text in sections:
        tag = "pre" if "\n" in text else "p"
        body.append(f"<h2>{html.escape(heading)}</h2><{tag}>{html.escape(text)}</{tag}>")
    body.append("<h2>Figures</h2>")
    for caption, rel in figures:
        body.append(f'<figure><img src="{html.escape(rel, quote=True)}" alt="{html.escape(caption, quote=True)}">'
                    f"<figcaption>{html.escape(caption)}</figcaption></figure>")
    page = ("<!doctype html><html lang='en'><head><meta charset='utf-8'>"
            "<meta http-equiv='Content-Security-Policy' content=\"default-src 'none'; img-src 'self'; "
            "style-src 'unsafe-inline'\">"
            f"<title>{html.escape(title)}</title><style>{_STYLE}</style></head><body>"
            + "\n".join(body) + "</body></html>\n")
    html_path = out / "summary.html"
    html_path.write_text(page, encoding="utf-8")
    return md_path, html_path


def _md(text: str) -> str:
    """Inline Markdown with the characters that would start markup or raw HTML escaped."""
    out = []
    for ch in " ".join(str(text).split()):
        out.append("\\" + ch if ch in "\\`*_[]<>#|!" else ch)
    return "".join(out)
