"""Every relative link of the README and the docs resolves, anchors included, and so does every
`docs/<page>.md#anchor` the package prints in a message (a user follows them from an error)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\]\(([^)\s]+)\)")


def anchors(page: Path) -> set[str]:
    """The anchors GitHub gives a page's headings: lower case, punctuation dropped, spaces to dashes,
    a repeated heading numbered."""
    seen: dict[str, int] = {}
    out = set()
    in_code = False
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            in_code = not in_code
        if in_code or not line.startswith("#"):
            continue
        text = line.lstrip("#").strip()
        slug = re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        out.add(slug if n == 0 else f"{slug}-{n}")
    return out


def _check(source: str, target: str, base: Path) -> str | None:
    path, _, anchor = target.partition("#")
    page = (base / path).resolve() if path else None
    if page is not None and not page.exists():
        return f"{source} links to {target}: no such file"
    if anchor and page is not None and page.suffix == ".md" and anchor not in anchors(page):
        return f"{source} links to {target}: {page.name} has no heading with that anchor"
    return None


def test_every_relative_link_and_anchor_in_the_docs_resolves():
    bad = []
    for page in PAGES:
        for target in LINK.findall(page.read_text(encoding="utf-8")):
            if "://" in target or target.startswith("mailto:"):
                continue
            if target.startswith("#"):
                if target[1:] not in anchors(page):
                    bad.append(f"{page.name} links to {target}: no heading with that anchor")
                continue
            why = _check(page.name, target, page.parent)
            if why:
                bad.append(why)
    assert not bad, "\n".join(bad)


def test_every_docs_link_the_package_prints_resolves():
    bad = []
    for src in (ROOT / "spacelm").rglob("*.py"):
        for target in re.findall(r"docs/[\w.-]+\.md(?:#[\w-]+)?", src.read_text(encoding="utf-8")):
            why = _check(str(src.relative_to(ROOT)), target, ROOT)
            if why:
                bad.append(why)
    assert not bad, "\n".join(bad)
