#!/usr/bin/env python3
"""Every reference in the repository's docs and code points at something that exists.

Usage: check_references.py [REPO_ROOT]   (default: two folders above this script)

Reads the tracked files (`git ls-files`; without git, a walk of the tree) and checks:

1. Markdown links. In every *.md and in the Markdown cells of every *.ipynb, a relative
   link [text](path) or [text](path#anchor) names a tracked file or folder (resolved
   against the linking file's folder), and an anchor names a heading of the target
   (GitHub's slugs: lower case, punctuation dropped, spaces to hyphens, -1, -2 for
   repeats). [text](#anchor) names a heading of the same file.
2. Repository paths. In Markdown text, and in the comments and string literals of
   *.h, *.cpp, *.sh, *.py, *.cmake, CMakeLists.txt and *.ipynb, every word that starts
   with a top-level folder name (TOP_FOLDERS below) followed by a slash is a path that
   must exist: a tracked file, or a folder holding one, looked up from the repository
   root and then from the citing file's folder. A path with placeholders stands for
   every path it matches and must match at least one: <name>, * and a trailing ... or
   the ellipsis character match anything, {a,b} either alternative. A path that git
   ignores (the .gitignore rules: build folders, notebooks/out/) is an output, not a
   repository path, and is skipped; so is anything not starting with a top-level
   folder name (build/cli/splitsim, include/..., splitsim/sim/...).
3. Sections. A file followed by a quoted title, `FILE.md "Title"`, `FILE.md, "Title"`
   or `README "Title"` (README: the repository's top-level README.md), names a heading
   of that file (the heading's text starts with the title, case ignored).
4. Nothing outside the repository: no relative path that climbs above the repository
   root, and none of FORBIDDEN (notes and specifications that are not part of it).

tests/docs/pending_paths.txt lists paths that another branch adds: they count as
existing (anchors into them are not checked) until the path really exists, when the
check fails and asks for the line to be removed.

Exit 0 when everything resolves; 1 with one line per broken reference otherwise.
"""

import fnmatch
import json
import os
import re
import subprocess
import sys

TOP_FOLDERS = ["costmodel", "sim", "exec", "cli", "scenarios", "tests", "notebooks", ".ci"]
TOP_FILES = ["README.md", "bootstrap.sh", "CMakeLists.txt", ".clang-format", ".gitignore"]
PENDING_FILE = "tests/docs/pending_paths.txt"
# Words shaped like paths that are not: the column "ratio exec/sim" of validate's report.
NOT_PATHS = {"exec/sim"}
# Citations of things that are not in the repository (written so that this file does not
# match itself).
FORBIDDEN = [
    (re.compile(r"\b" + "SP" + r"EC\b"), "cites a specification that is not in the repository"),
    (re.compile(r"\.\./" + "shared" + r"\b"), "cites a folder outside the repository"),
    (re.compile(r"/" + "work" + r"/"), "cites a path of the development machine"),
]

PATH_CHARS = r"(?:[\w.\-/<>*\u2026]|\{[\w.,\-*]*\})"
PATH_RE = re.compile(
    r"(?<![\w.\-/~$@])((?:" + "|".join(re.escape(t) for t in TOP_FOLDERS) + r")/" + PATH_CHARS + r"*)"
)
TOP_FILE_RE = re.compile(
    r"(?<![\w.\-/~$@])(" + "|".join(re.escape(f) for f in TOP_FILES) + r")(?![\w\-/])"
)
UP_RE = re.compile(r"(?<![\w.\-/])((?:\.\./)+" + PATH_CHARS + r"*)")
# FILE "Title", FILE, "Title" (quotes possibly escaped inside a C++ string literal).
SECTION_RE = re.compile(
    r"(?<![\w.\-/])((?:[\w.\-]+/)*[\w.\-]+\.md|README)`?,?\s+\\?\"([^\"\\\n]{1,80})\\?\""
)
LINK_RE = re.compile(r"\[((?:[^\[\]]|\[[^\]]*\])*)\]\(([^()\s]+)(?:\s+\"[^\"]*\")?\)")
FENCE_RE = re.compile(r"^\s*(```|~~~)")
HEADING_RE = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$")


def run_git(root, args, stdin=None):
    return subprocess.run(["git", "-C", root] + args, input=stdin, capture_output=True,
                          text=True, check=False)


def tracked_files(root):
    r = run_git(root, ["ls-files", "-z"])
    if r.returncode == 0 and r.stdout:
        return sorted(p for p in r.stdout.split("\0") if p and os.path.isfile(os.path.join(root, p)))
    files = []
    for d, dirs, names in os.walk(root):
        rel = os.path.relpath(d, root)
        dirs[:] = [x for x in dirs if not (x == ".git" or (rel == "." and x.startswith("build"))
                                            or x in ("out", "__pycache__", ".ipynb_checkpoints"))]
        files += [os.path.normpath(os.path.join(rel, n)) for n in names]
    return sorted(files)


def ignored_by_git(root, paths):
    """The subset of `paths` that .gitignore's rules match (outputs, not sources)."""
    if not paths:
        return set()
    r = run_git(root, ["check-ignore", "--no-index", "--stdin"], stdin="\n".join(paths) + "\n")
    if r.returncode not in (0, 1):
        return set()
    return set(r.stdout.split("\n")) - {""}


class Tree:
    def __init__(self, root, files, pending):
        self.root = root
        self.files = set(files)
        self.pending = set(pending)
        self.dirs = set()
        for p in list(self.files) + list(self.pending):
            parts = p.rstrip("/").split("/")
            for i in range(1, len(parts)):
                self.dirs.add("/".join(parts[:i]))
        self.all = sorted(self.files | self.dirs | self.pending)
        self.headings = {}

    def exists(self, path):
        p = path.rstrip("/")
        return p in self.files or p in self.dirs or p in self.pending or p == ""

    def matches(self, pattern):
        return any(fnmatch.fnmatchcase(p, pattern) for p in self.all)

    def heading_slugs(self, path):
        if path not in self.headings:
            self.headings[path] = headings_of(read(self.root, path)) if path in self.files else None
        return self.headings[path]


def read(root, path):
    with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
        return f.read()


def plain_heading(text):
    text = LINK_RE.sub(lambda m: m.group(1), text)
    return text.replace("`", "").replace("*", "").strip()


def slug(text):
    s = plain_heading(text).lower()
    s = "".join(c for c in s if c.isalnum() or c in "-_ ")
    return s.replace(" ", "-")


def headings_of(markdown):
    """(slugs, plain texts) of a Markdown text's headings outside fenced code."""
    slugs, texts, seen = set(), [], {}
    in_fence = False
    for line in markdown.splitlines():
        if FENCE_RE.match(line):
            in_fence = not in_fence
            continue
        m = None if in_fence else HEADING_RE.match(line)
        if not m:
            continue
        base = slug(m.group(2))
        n = seen.get(base, 0)
        seen[base] = n + 1
        slugs.add(base if n == 0 else "%s-%d" % (base, n))
        texts.append(plain_heading(m.group(2)).lower())
    return slugs, texts


def markdown_prose(markdown):
    """(line number, text) of a Markdown text with fenced code blocks blanked out; their
    contents (commands, JSON) still cite paths, so they are returned apart."""
    prose, code = [], []
    in_fence = False
    for i, line in enumerate(markdown.splitlines(), 1):
        if FENCE_RE.match(line):
            in_fence = not in_fence
            continue
        (code if in_fence else prose).append((i, line))
    return prose, code


def joined(lines):
    """(first line, the lines joined by spaces, [(offset, line)] where each begins)."""
    starts, parts, offset = [], [], 0
    for ln, t in lines:
        starts.append((offset, ln))
        parts.append(t)
        offset += len(t) + 1
    return (lines[0][0], " ".join(parts), starts)


def cpp_comments_and_strings(text):
    """(line, text) pieces of C++ comments and string literals; consecutive // lines are
    joined, so a title broken over two comment lines is read as one."""
    out = []
    i, n, line = 0, len(text), 1
    block, block_end = [], -1

    def flush():
        nonlocal block
        if block:
            out.append(joined(block))
            block = []

    while i < n:
        c = text[i]
        if c == "\n":
            line += 1
            i += 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            if block and block_end != line - 1:
                flush()
            block.append((line, text[i + 2:j].strip()))
            block_end = line
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j
            out.append((line, text[i + 2:j], None))
            line += text.count("\n", i, j)
            i = j + 2
        elif c == "R" and text.startswith('R"', i) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            k = text.find("(", i + 2)
            delim = text[i + 2:k]
            j = text.find(")" + delim + '"', k)
            j = n if j < 0 else j
            out.append((line, text[k + 1:j], None))
            line += text.count("\n", i, j)
            i = j + len(delim) + 2
        elif c == '"' or (c == "'" and not (i > 0 and text[i - 1].isalnum())):
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append((line, text[i:j + 1], None))
            i = j + 1
        else:
            i += 1
    flush()
    return out


def hash_comments_and_strings(text):
    """(line, text) of the # comments and quoted strings of a shell, CMake or Python file."""
    out, block = [], []
    for ln, raw in enumerate(text.splitlines(), 1):
        if ln == 1 and raw.startswith("#!"):
            continue
        quote, comment = None, None
        for k, c in enumerate(raw):
            if quote:
                if c == quote:
                    quote = None
            elif c in "\"'":
                quote = c
            elif c == "#" and (k == 0 or raw[k - 1] in " \t("):
                comment = raw[k + 1:].strip()
                break
        if block and (comment is None or block[-1][0] != ln - 1):
            out.append(joined(block))
            block = []
        if comment is not None:
            block.append((ln, comment))
        out += [(ln, s, None) for s in re.findall(r"\"[^\"]*\"|'[^']*'", raw)]
    if block:
        out.append(joined(block))
    return out


def glob_of(path):
    """A path with placeholders as fnmatch patterns (one per {a,b} alternative), or None."""
    p = re.sub(r"(\.\.\.|\u2026)$", "*", path)
    p = re.sub(r"<[^<>/]*>", "*", p)
    pats = [p]
    while any("{" in q for q in pats):
        nxt = []
        for q in pats:
            m = re.search(r"\{([^{}]*)\}", q)
            if not m:
                nxt.append(q)
                continue
            nxt += [q[:m.start()] + alt + q[m.end():] for alt in m.group(1).split(",")]
        pats = nxt
    if pats == [path] and "*" not in path:
        return None
    return pats


class Checker:
    def __init__(self, root):
        self.root = root
        pending_text = read(root, PENDING_FILE) if os.path.isfile(os.path.join(root, PENDING_FILE)) else ""
        pending = [l.strip() for l in pending_text.splitlines() if l.strip() and not l.strip().startswith("#")]
        self.tree = Tree(root, tracked_files(root), pending)
        self.errors = []
        self.unresolved = []  # (where, path, why): ignored-by-git ones are dropped later
        for p in pending:
            if p.rstrip("/") in self.tree.files:
                self.errors.append("%s: %s exists now; remove it from the pending list" % (PENDING_FILE, p))

    def error(self, where, msg):
        self.errors.append("%s: %s" % (where, msg))

    def candidates(self, citing, path):
        """Repository-relative forms of a cited path: from the root, then from the citing
        file's folder."""
        here = os.path.dirname(citing)
        out = [os.path.normpath(path)]
        if here:
            out.append(os.path.normpath(os.path.join(here, path)))
        return [c for c in out if not c.startswith("..")]

    def check_path(self, where, citing, path):
        path = path.rstrip(".,;:")
        if not path or path.endswith("/..") or path in NOT_PATHS:
            return
        globs = glob_of(path)
        for cand in self.candidates(citing, path):
            if globs is None and self.tree.exists(cand):
                return
            if globs is not None:
                cg = glob_of(cand) or [cand]
                if all(self.tree.matches(g) for g in cg):
                    return
        self.unresolved.append((where, path))

    def check_text(self, citing, line, text, label=None, starts=None):
        def where(m):
            ln = line
            for offset, start_line in starts or []:
                if offset <= m.start():
                    ln = start_line
            return "%s:%d" % (label or citing, ln)

        for rx, why in FORBIDDEN:
            for m in rx.finditer(text):
                self.error(where(m), why + ": " + m.group(0))
        for m in PATH_RE.finditer(text):
            self.check_path(where(m), citing, m.group(1))
        for m in TOP_FILE_RE.finditer(text):
            self.check_path(where(m), citing, m.group(1))
        for m in UP_RE.finditer(text):
            target = os.path.normpath(os.path.join(os.path.dirname(citing), m.group(1)))
            if target.startswith(".."):
                self.error(where(m), "cites a path outside the repository: " + m.group(1))
            else:
                self.check_path(where(m), "", target)
        for m in SECTION_RE.finditer(text):
            self.check_section(where(m), citing, m.group(1), m.group(2))

    def check_section(self, where, citing, path, title):
        if path == "README":
            path = "README.md"
        for cand in self.candidates(citing, path):
            if cand in self.tree.files:
                _, texts = self.tree.heading_slugs(cand)
                t = title.lower().strip()
                if not any(h == t or h.startswith(t + " ") or h.startswith(t + ":") for h in texts):
                    self.error(where, '%s has no section "%s"' % (cand, title))
                return
            if cand in self.tree.pending:
                return
        # The file itself is reported by the path check when it starts with a top folder.
        if "/" not in path and path != "README.md":
            self.unresolved.append((where, path))

    def check_link(self, citing, line, target, label=None):
        where = "%s:%d" % (label or citing, line)
        if re.match(r"^[a-z][a-z0-9+.\-]*:", target, re.I):  # http:, mailto:, ...
            return
        path, _, anchor = target.partition("#")
        if path:
            if path.startswith("/"):
                self.error(where, "link to an absolute path: " + target)
                return
            full = os.path.normpath(os.path.join(os.path.dirname(citing), path))
            if full.startswith(".."):
                self.error(where, "link outside the repository: " + target)
                return
            if not self.tree.exists(full):
                self.error(where, "link to a missing file: " + target)
                return
        else:
            full = citing
        if anchor:
            if full in self.tree.pending or not full.endswith(".md"):
                return
            if full not in self.tree.files:
                self.error(where, "anchor into a folder: " + target)
                return
            slugs, _ = self.tree.heading_slugs(full)
            if anchor not in slugs:
                self.error(where, "link to a missing heading: %s (%s has %s)" % (
                    target, full, ", ".join(sorted("#" + s for s in slugs)) or "none"))

    def check_markdown(self, citing, markdown, label=None):
        prose, code = markdown_prose(markdown)
        for i, line in prose:
            # A link inside `code` is not a link; keep the span's place so [`x`](y) stays one.
            linkable = re.sub(r"`[^`]*`", "CODE", line)
            for m in LINK_RE.finditer(linkable):
                self.check_link(citing, i, m.group(2), label)
        # Paths and sections: the prose with links' targets removed (checked above), and
        # joined into paragraphs so that a quoted title broken over two lines is one.
        para = []
        for i, line in prose + [(None, "")]:
            if line.strip() and i is not None:
                para.append((i, LINK_RE.sub(lambda m: m.group(1), line)))
                continue
            if para:
                first, text, starts = joined(para)
                self.check_text(citing, first, text, label, starts)
                para = []
        for i, line in code:
            self.check_text(citing, i, line, label)

    def check_file(self, path):
        text = read(self.root, path)
        name = os.path.basename(path)
        if path.endswith(".md"):
            self.check_markdown(path, text)
        elif path.endswith((".h", ".cpp")):
            for line, piece, starts in cpp_comments_and_strings(text):
                self.check_text(path, line, piece, None, starts)
        elif path.endswith((".sh", ".py", ".cmake")) or name == "CMakeLists.txt" or path == ".ci/run":
            for line, piece, starts in hash_comments_and_strings(text):
                self.check_text(path, line, piece, None, starts)
        elif path.endswith(".ipynb"):
            for k, cell in enumerate(json.loads(text).get("cells", [])):
                src = "".join(cell.get("source", []))
                label = "%s[cell %d]" % (path, k)
                if cell.get("cell_type") == "markdown":
                    self.check_markdown(path, src, label)
                else:
                    for line, piece, starts in hash_comments_and_strings(src):
                        self.check_text(path, line, piece, label, starts)

    def run(self):
        for path in sorted(self.tree.files):
            self.check_file(path)
        ignored = ignored_by_git(self.root, sorted({p for _, p in self.unresolved}))
        for where, path in self.unresolved:
            if path not in ignored and path.rstrip("/") + "/" not in ignored:
                self.error(where, "no such file or folder in the repository: " + path)
        return self.errors


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
    root = os.path.abspath(root)
    errors = Checker(root).run()
    for e in errors:
        print(e)
    if errors:
        print("%d broken reference(s)" % len(errors))
        return 1
    print("every reference resolves")
    return 0


if __name__ == "__main__":
    sys.exit(main())
