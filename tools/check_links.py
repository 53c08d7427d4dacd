#!/usr/bin/env python3
"""Check the relative links and #anchors of the project's Markdown pages.

    python3 tools/check_links.py [ROOT]

Checks README.md, CHANGELOG.md and docs/**/*.md under ROOT (default: the repository this script
is in). Every Markdown link or image ([text](target), ![alt](target), [ref]: target) and every
HTML href/src whose target is relative (no scheme such as https:) must name a file or directory
that exists; a #fragment pointing into a Markdown page (or the page itself) must be one of its
anchors, as GitHub generates them: the heading's text lowercased, punctuation removed, each
space turned into '-', a repeated one suffixed -1, -2, ...; plus explicit <a id=...> and
<a name=...>. Links inside code blocks and code spans are not links and are skipped.

Prints "file:line: dead link X" for each dead one and exits 1 if there is any, else 0.
Python 3 standard library only.
"""
import os
import re
import sys
import urllib.parse

FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})")
ATX = re.compile(r"^\s{0,3}(#{1,6})(?:\s+(.*?))?\s*$")
SETEXT = re.compile(r"^\s{0,3}(=+|-+)\s*$")
EXPLICIT = re.compile(r"<a\s+[^>]*?(?:id|name)\s*=\s*[\"']([^\"']+)[\"']", re.I)
# [text](target "title") with one level of balanced parentheses inside the target.
INLINE = re.compile(r"\]\(\s*(<[^>]*>|(?:[^()\s]|\([^()\s]*\))+)(?:\s+(?:\"[^\"]*\"|'[^']*'|\([^)]*\)))?\s*\)")
REFDEF = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*(<[^>]*>|\S+)")
HTMLREF = re.compile(r"<(?:a|img|source)\s[^>]*?(?:href|src)\s*=\s*[\"']([^\"']+)[\"']", re.I)
SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
CODESPAN = re.compile(r"(`+)(.+?)\1")


def strip_code_spans(line):
    """Blank out inline code so that links in it are not seen (columns kept)."""
    return CODESPAN.sub(lambda m: " " * len(m.group(0)), line)


def heading_text(raw):
    """The rendered text of a heading, roughly as GitHub sees it before making the slug."""
    t = re.sub(r"<[^>]+>", "", raw)                       # HTML tags
    t = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", t)      # links and images: their text
    t = re.sub(r"!?\[([^\]]*)\]\[[^\]]*\]", r"\1", t)     # reference links
    t = t.replace("`", "")
    t = re.sub(r"(\*+)(.+?)\1", r"\2", t)                 # *emphasis*, **strong**
    t = re.sub(r"(?<!\w)_+(.+?)_+(?!\w)", r"\1", t)       # _emphasis_ (not snake_case)
    return t.strip()


def slug(text):
    s = text.lower()
    s = "".join(c for c in s if c.isalnum() or c in "_- " or _is_mark(c))
    return s.replace(" ", "-")


def _is_mark(c):
    import unicodedata
    return unicodedata.category(c).startswith("M")


def lines_outside_code(text):
    """Yields (line number, line, in_code) for every line."""
    fence = None
    for n, line in enumerate(text.split("\n"), 1):
        m = FENCE.match(line)
        if fence is None and m:
            fence = m.group(1)[0] * len(m.group(1))
            yield n, line, True
            continue
        if fence is not None:
            if line.strip().startswith(fence) and set(line.strip()) <= set(fence[0]):
                fence = None
            yield n, line, True
            continue
        yield n, line, False


def anchors_of(path, cache={}):
    if path in cache:
        return cache[path]
    with open(path, encoding="utf-8") as f:
        text = f.read()
    found, seen = set(), {}
    prev, prev_code = "", True

    def add(base):
        if base in seen:
            seen[base] += 1
            found.add(f"{base}-{seen[base]}")
        else:
            seen[base] = 0
            found.add(base)

    for _, line, code in lines_outside_code(text):
        if not code:
            for a in EXPLICIT.findall(line):
                found.add(a)
            m = ATX.match(line)
            if m:
                add(slug(heading_text(re.sub(r"\s+#+\s*$", "", m.group(2) or ""))))
            elif (SETEXT.match(line) and prev.strip() and not prev_code and "|" not in prev
                  and not re.match(r"^\s{0,3}([-*+]|\d+[.)])\s", prev) and not ATX.match(prev)
                  and not (line.strip().startswith("-") and len(line.strip()) < 2)):
                add(slug(heading_text(prev)))
        prev, prev_code = line, code
    cache[path] = found
    return found


def pages(root):
    out = [os.path.join(root, n) for n in ("README.md", "CHANGELOG.md") if os.path.isfile(os.path.join(root, n))]
    for d, dirs, files in os.walk(os.path.join(root, "docs")):
        dirs.sort()
        out += [os.path.join(d, f) for f in sorted(files) if f.endswith(".md")]
    return out


def targets(line):
    s = strip_code_spans(line)
    for m in INLINE.finditer(s):
        yield m.group(1)
    m = REFDEF.match(s)
    if m:
        yield m.group(1)
    for m in HTMLREF.finditer(s):
        yield m.group(1)


def check(root):
    dead = []
    for page in pages(root):
        rel = os.path.relpath(page, root)
        with open(page, encoding="utf-8") as f:
            text = f.read()
        for n, line, code in lines_outside_code(text):
            if code:
                continue
            for t in targets(line):
                t = t[1:-1] if t.startswith("<") and t.endswith(">") else t
                if not t or SCHEME.match(t) or t.startswith("//"):
                    continue
                path, _, frag = t.partition("#")
                path = urllib.parse.unquote(path.split("?")[0])
                if path.startswith("/"):
                    full = os.path.normpath(os.path.join(root, path.lstrip("/")))
                elif path:
                    full = os.path.normpath(os.path.join(os.path.dirname(page), path))
                else:
                    full = page
                if not os.path.exists(full):
                    dead.append(f"{rel}:{n}: dead link {t}")
                    continue
                if frag and os.path.isfile(full) and full.endswith(".md"):
                    if urllib.parse.unquote(frag) not in anchors_of(full):
                        dead.append(f"{rel}:{n}: dead link {t}")
    return dead


def main(argv):
    root = argv[1] if len(argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    root = os.path.abspath(root)
    if not os.path.isdir(root):
        print(f"check_links: {root}: not a directory", file=sys.stderr)
        return 2
    dead = check(root)
    for d in dead:
        print(d)
    if dead:
        print(f"check_links: {len(dead)} dead link(s)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
