"""Checks on the repository's text files: no work-log labels, no broken relative links.

The documentation, docstrings, comments and benchmark reports say what things are and
do; they do not refer to how the project was developed ("session 18", "issue 21",
"#39"): such labels point at records outside the repository and mean nothing to a
reader of it. And every relative link in the Markdown and reStructuredText files
(notebooks' Markdown cells included) resolves to a file or folder of the repository.
"""

import json
import pathlib
import re
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]


#: This file holds examples of what it looks for; it is not scanned.
THIS_FILE = pathlib.Path(__file__).resolve().relative_to(ROOT)


def _tracked_files():
    """Tracked files that exist in the working tree (this one excepted), relative to ROOT."""
    try:
        out = subprocess.run(
            ["git", "ls-files", "-z"], cwd=ROOT, check=True, capture_output=True
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    names = [n for n in out.decode("utf-8").split("\0") if n]
    return [pathlib.Path(n) for n in names if (ROOT / n).is_file() and pathlib.Path(n) != THIS_FILE]


def _text(path):
    """The file's text, or None for binary files."""
    data = (ROOT / path).read_bytes()
    if b"\0" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


#: Work-log labels: "session 18", "sessions 10-23", "issue 21", "issues 3, 4",
#: "issue-21", "issue #40", "stop 45", and "#39" standing alone in prose (after a
#: space, an opening bracket or a comma, with 1-4 digits not starting with 0 and not
#: followed by a word character, so that colours such as "#1f77b4" or "#000000",
#: anchors and "#" comments are not taken for one).
LABEL_PATTERNS = [
    re.compile(r"\bsessions? \d+", re.IGNORECASE),
    re.compile(r"\bissues?[- ]#?\d+", re.IGNORECASE),
    re.compile(
        r"\bstops? \d+\b(?! ?(?:iterations?|steps?|evaluations?|seconds?|s\b|ms\b))", re.IGNORECASE
    ),
    re.compile(r"(?:^|(?<=[\s(\[,;]))#[1-9]\d{0,3}\b(?![\w.-])"),
]

#: A peer project's own issue tracker may be cited when the text describes that
#: project's bug: the label is allowed when the project's name directly precedes it
#: ("QDax issue 228", "JAX's issue #1234").
THIRD_PARTY = re.compile(
    r"\b(?:QDax|qdax|JAX|jax|jaxlib|XLA|pyribs|ribs|brax|flax|optax|orbax|numpy|NumPy|"
    r"scipy|SciPy|numba|dask|Dask|mujoco|MuJoCo|evosax|flashbax|chex|torch|PyTorch)"
    r"(?:'s)? (?:issues? )?$"
)


def _labels(text):
    """(line number, line) for every line of text that holds a work-log label."""
    found = []
    for number, line in enumerate(text.splitlines(), start=1):
        for pattern in LABEL_PATTERNS:
            for match in pattern.finditer(line):
                if THIRD_PARTY.search(line[: match.start()]):
                    continue
                found.append((number, line.strip()))
                break
            else:
                continue
            break
    return found


def test_label_patterns_catch_labels_and_spare_the_rest():
    caught = [
        "as measured in session 18",
        "Sessions 10-23 changed it",
        "(issue 21)",
        "issues 3, 4 and 5",
        "the issue-21 targets",
        "see issue #40",
        "at stop 45",
        "fixed in #39",
        "(#7)",
        "see #12, #13",
    ]
    spared = [
        "color='#1f77b4'",
        "fill #000000",
        "# comment 12",
        "sha256 digest",
        "QDax issue 228 describes it",
        "JAX's issue #1234",
        "see https://github.com/adaptive-intelligent-robotics/QDax/issues/228",
        "the loop stops 3 iterations later",
        "[link](#anchor-2)",
        "a ProximityArchive session",
        "gpu_session.sh",
    ]
    assert all(_labels(text) for text in caught), [t for t in caught if not _labels(t)]
    assert not any(_labels(text) for text in spared), [t for t in spared if _labels(t)]


def test_no_work_log_labels_in_tracked_text_files():
    offending = []
    for path in _tracked_files():
        text = _text(path)
        if text is None:
            continue
        offending += [f"{path}:{n}: {line}" for n, line in _labels(text)]
    assert not offending, "work-log labels (say what the thing is or does instead):\n" + "\n".join(
        offending
    )


#: Files that are cited by path but are not part of the repository.
MISSING_FILE_MENTIONS = re.compile(r"(?:\.\./)*\bshared/spec/\S*|\bDESIGN\.md\b")


def test_no_mentions_of_files_outside_the_repository():
    offending = []
    for path in _tracked_files():
        text = _text(path)
        if text is None:
            continue
        for number, line in enumerate(text.splitlines(), start=1):
            for match in MISSING_FILE_MENTIONS.finditer(line):
                cited = match.group(0).rstrip(".,;:)`'\"")
                if not (ROOT / cited).exists() and not (ROOT / path.parent / cited).exists():
                    offending.append(f"{path}:{number}: {line.strip()}")
                    break
    assert not offending, "mentions of files the repository does not have:\n" + "\n".join(offending)


# --- relative links -----------------------------------------------------------------

_FENCE = re.compile(r"^(```|~~~).*?^\1[^\n]*$", re.MULTILINE | re.DOTALL)
_INLINE_CODE = re.compile(r"`[^`\n]*`")
_MD_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_MD_REFERENCE = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)", re.MULTILINE)
_RST_INLINE = re.compile(r"`[^`<]*<([^>`]+)>`__?")
_RST_DIRECTIVE = re.compile(
    r"^\s*\.\. (?:image|figure|include|literalinclude|csv-table)::\s*(\S+)", re.MULTILINE
)
_RST_DOC_ROLE = re.compile(r":doc:`(?:[^`<]*<)?([^`>]+)>?`")


def _external(target):
    return target.startswith(("http://", "https://", "mailto:", "#", "ftp://")) or (
        re.match(r"^[a-z][a-z0-9+.-]*:", target) is not None
    )


def _markdown_targets(text):
    text = _FENCE.sub("", text)
    text = _INLINE_CODE.sub("", text)
    return _MD_LINK.findall(text) + _MD_REFERENCE.findall(text)


def _rst_targets(text):
    """(target, suffix to try) pairs of an rst file's relative references."""
    targets = [(t, "") for t in _RST_INLINE.findall(text)]
    targets += [(t, "") for t in _RST_DIRECTIVE.findall(text)]
    targets += [(t, ".rst") for t in _RST_DOC_ROLE.findall(text)]
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if not re.match(r"^\s*\.\. toctree::", line):
            continue
        for entry in lines[i + 1 :]:
            if entry.strip() and not entry.startswith((" ", "\t")):
                break
            entry = entry.strip()
            if not entry or entry.startswith(":"):
                continue
            match = re.match(r"^[^<]*<([^>]+)>$", entry)
            targets.append((match.group(1) if match else entry, ".rst"))
    return targets


def _resolves(source, target, suffix=""):
    target = target.split("#", 1)[0].split("?", 1)[0]
    if not target:
        return True
    base = ROOT if target.startswith("/") else ROOT / source.parent
    candidate = base / target.lstrip("/")
    return candidate.exists() or (suffix and candidate.with_name(candidate.name + suffix).exists())


def test_relative_links_in_markdown_and_rst_resolve():
    broken = []
    for path in _tracked_files():
        if path.suffix == ".md":
            pairs = [(t, "") for t in _markdown_targets(_text(path) or "")]
        elif path.suffix == ".rst":
            pairs = _rst_targets(_text(path) or "")
        elif path.suffix == ".ipynb":
            cells = json.loads((ROOT / path).read_text(encoding="utf-8")).get("cells", [])
            markdown = "\n".join(
                "".join(c.get("source", "")) for c in cells if c.get("cell_type") == "markdown"
            )
            pairs = [(t, "") for t in _markdown_targets(markdown)]
        else:
            continue
        broken += [
            f"{path}: {target}"
            for target, suffix in pairs
            if not _external(target) and not _resolves(path, target, suffix)
        ]
    assert not broken, "relative links that resolve to no file:\n" + "\n".join(broken)


def test_link_check_sees_broken_links(tmp_path):
    text = (
        "[ok](README.md) [gone](no/such/file.md) [web](https://x.org) [a](#b)\n"
        "```\n[code](not/a/link)\n```\n[ref]: missing.md\n"
    )
    targets = _markdown_targets(text)
    assert targets == ["README.md", "no/such/file.md", "https://x.org", "#b", "missing.md"]
    source = pathlib.Path("x.md")
    assert [t for t in targets if not _external(t) and not _resolves(source, t)] == [
        "no/such/file.md",
        "missing.md",
    ]
    rst = ".. toctree::\n   :maxdepth: 2\n\n   tutorials\n   nothing\n\nText `a <gone.rst>`_\n"
    assert [
        t for t, s in _rst_targets(rst) if not _resolves(pathlib.Path("docs/index.rst"), t, s)
    ] == ["gone.rst", "nothing"]
