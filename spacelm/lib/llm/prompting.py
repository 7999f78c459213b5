"""Prompt templates live as plain text files in `spacelm/prompts/` so a reader sees them whole.

A template file has a system part and a user part separated by a line `=== user ===`;
placeholders are `{name}` fields filled with str.format (literal braces are doubled).

Untrusted text (corpus passages, questions, answers) stays data: templates put a passage
between fixed lines of three double quotes, and every field value passes through
:func:`as_data`, which turns a run of three or more double quotes inside the text into single
quotes, so no text can close its block and continue as instructions. The delimiter is the same for every prompt, so
prompts that share a question or few-shot prefix still share it (the LLM prefix cache).
"""

from __future__ import annotations

import bisect
import hashlib
import re
from functools import cache, lru_cache
from importlib import resources

SEPARATOR = "=== user ==="


@cache
def template(name: str) -> tuple[str, str]:
    """(system, user) parts of `spacelm/prompts/<name>.txt`."""
    text = resources.files("spacelm").joinpath("prompts", f"{name}.txt").read_text(encoding="utf-8")
    if SEPARATOR not in text:
        raise ValueError(f"spacelm/prompts/{name}.txt: missing the '{SEPARATOR}' line between system and user parts")
    system, user = text.split(SEPARATOR, 1)
    return system.strip(), user.strip()


@cache
def task_text(name: str) -> str:
    """The text of a task file `spacelm/prompts/<name>.txt`: a task is the last part of a prompt
    rendered inside a frame template (see :func:`render_in_frame`), so it has no system part and
    no separator line."""
    text = resources.files("spacelm").joinpath("prompts", f"{name}.txt").read_text(encoding="utf-8")
    if SEPARATOR in text:
        raise ValueError(f"spacelm/prompts/{name}.txt is a task for a frame: it must not hold a '{SEPARATOR}' line")
    return text.strip()


def has_template(name: str) -> bool:
    return resources.files("spacelm").joinpath("prompts", f"{name}.txt").is_file()


_DELIMITER_RUN = re.compile(r'"{3,}')
# the fields a template may hold outside a triple-quote block: text the project writes itself (a
# task, a header, a fixed instruction or check, a subject from the project's own list). Every other
# field is untrusted text (corpus passages, questions, answers, claims, model-written references,
# file names) and sits alone on a line between two lines of three double quotes;
# tests/lib/llm/test_prompt_blocks.py holds every template to it
TRUSTED_FIELDS = frozenset({"task", "documents_header", "instruction", "check", "subject"})
BLOCK = '"""'  # the line that opens and closes a block of untrusted text


_EVALUATOR = r"(?:grader|judge|evaluator|assessor|reviewer|assistant|rater|annotator|ai|language model)s?"
# text addressed to whoever reads the prompt: a note or message to the grader, a forged answer or
# evaluator section, a demand for a given grade, an order to drop the instructions
_ADDRESSED = re.compile(
    "|".join(
        [
            rf"\b(?:note|message|instructions?|hint|comment)s?\s+(?:to|for)\s+(?:the\s+|any\s+)?{_EVALUATOR}\b",
            rf"\b(?:dear|attention|hello)\s*,?\s+(?:the\s+)?{_EVALUATOR}\b",
            rf"^\s*(?:the\s+)?{_EVALUATOR}'?s?\s+(?:note|answer|verdict|grade|score|reply)\s*:",
            r"^\s*(?:(?:please|now|just|so)\s+)?"
            r"(?:reply|respond|answer|output|return|(?:grade|rate|score)(?:\s+(?:it|this))?)"
            r"\s+(?:with\s+)?(?:(?:a|the)\s+)?(?:(?:grade|score|digit|number|rating)\s+)?(?:of\s+)?(?:[0-5]|yes|no)"
            r"\s*[.!]*[\"'”’)]*\s*$",
            r"\bignore\s+(?:all\s+|any\s+|the\s+)?(?:previous|above|prior|earlier|other)\s+(?:instructions?|rules?|text)",
        ]
    ),
    re.IGNORECASE | re.MULTILINE,
)
# a forged section's header alone on its line ("Assistant's answer:"): the lines under it, up to a
# blank line, are the section's body
_FORGED_HEADER = re.compile(
    rf"^\s*(?:the\s+)?{_EVALUATOR}'?s?\s+(?:note|answer|verdict|grade|score|reply)\s*:\s*$", re.I
)
# a word one of those sentences needs: text without any is returned at once
_ADDRESSED_CUE = re.compile(
    rf"\b(?:{_EVALUATOR}|reply|respond|answer|output|return|grade|rate|score|ignore)\b", re.IGNORECASE
)
# the same cues, matched on case-folded text (about 2x faster than IGNORECASE on the corpus chunks)
_ADDRESSED_CUE_FOLDED = re.compile(_ADDRESSED_CUE.pattern)
_SEGMENT = re.compile(r"[^\n.!?]*(?:[.!?]+|\n|$)")
_BLANK_RUN = re.compile(r"\n[ \t]*\n(?:[ \t]*\n)+")


@lru_cache(maxsize=1 << 16)
def neutralise_addressed(text: str) -> str:
    """`text` with every sentence (or line) that addresses the reader of the prompt as a grader
    left out: a note or message to the grader, judge or assistant, a forged "Assistant's answer:"
    or "Evaluator's note:" section, a demand for a grade ("Reply 3", "Reply yes", "Score 5."), an
    order to ignore the instructions; under a forged section's header alone on its line, the
    section's body up to a blank line (its "answer"). Nothing marks the place: a mark saying that
    text was left out moved the faithfulness judge as the text itself had (bench/judge_injection.py),
    so the judge reads the passage as if the text had never been there (blank lines left by a
    removed section close up). Corpus text, questions and answers are evidence, never
    instructions; such a sentence is no evidence of anything, and a small judge obeys it. Text
    without one (nearly all) is returned unchanged, so its prompts, and their cached calls, are too."""
    low = text.casefold()  # as IGNORECASE folds (the long s is an s), not only lower case
    # a folded character of another length (ß to ss) would move the cues' positions: then IGNORECASE
    cues = [
        m.start()
        for m in (_ADDRESSED_CUE_FOLDED.finditer(low) if len(low) == len(text) else _ADDRESSED_CUE.finditer(text))
    ]
    if not cues:
        return text
    out, forged, removed, after_newline = [], False, False, True
    for m in _SEGMENT.finditer(text):
        seg = m.group()
        if not seg.strip():
            forged = forged and not ("\n" in seg and after_newline)  # a blank line ends the section
        else:
            # each pattern holds a cue word: a segment with none is kept without the full search
            k = bisect.bisect_left(cues, m.start())
            addressed = k < len(cues) and cues[k] < m.end() and _ADDRESSED.search(seg)
            if addressed or forged:
                forged = forged or bool(_FORGED_HEADER.match(seg))
                seg, removed = ("\n" if seg.endswith("\n") else ""), True
        if m.group():
            after_newline = m.group().endswith("\n")
        out.append(seg)
    if not removed:
        return text
    kept = _BLANK_RUN.sub("\n\n", "".join(out))
    # the ends as the text had them: no blank line or space left where a section was cut off
    head = text[: len(text) - len(text.lstrip())]
    tail = text[len(text.rstrip()) :]
    return head + kept.strip() + tail


@lru_cache(maxsize=1 << 16)
def as_data(text: str) -> str:
    """`text` as it may sit inside a prompt's triple-quote block: every run of three or more double
    quotes becomes as many single quotes, and every sentence addressed to the grader is left out
    (:func:`neutralise_addressed`). Text with neither, nearly all, is unchanged. Memoised: the same
    passage fills many prompts."""
    if '"""' in text:
        text = _DELIMITER_RUN.sub(lambda m: "'" * len(m.group()), text)
    return neutralise_addressed(text)


def render(name: str, **fields) -> list[dict]:
    """Chat messages for template `name` with its fields filled in (text fields through
    :func:`as_data`, so they cannot close the template's delimiters)."""
    system, user = template(name)
    fields = {k: as_data(v) if isinstance(v, str) else v for k, v in fields.items()}
    return [{"role": "system", "content": system.format(**fields)}, {"role": "user", "content": user.format(**fields)}]


def render_in_frame(frame: str, task: str, task_fields: dict | None = None, **fields) -> list[dict]:
    """Chat messages for task `task` inside template `frame`: the frame's system part and its user
    part up to `{task}` are the same for every task, so all the tasks asked about one piece of
    material (e.g. every judge of one answer) begin with the same tokens and the model evaluates
    that beginning once (the LLM prefix cache). `task_fields` fill the task's own placeholders."""
    task_fields = {k: as_data(v) if isinstance(v, str) else v for k, v in (task_fields or {}).items()}
    return render(frame, task=task_text(task).format(**task_fields), **fields)


def undelimited_fields(name: str) -> list[str]:
    """The untrusted fields (any but TRUSTED_FIELDS) of template or task `name` that do not sit alone on
    a line between two BLOCK lines: what the one delimiting scheme forbids."""
    text = resources.files("spacelm").joinpath("prompts", f"{name}.txt").read_text(encoding="utf-8")
    lines = [ln.strip() for ln in text.split("\n")]
    bad = []
    for i, ln in enumerate(lines):
        for f in re.findall(r"(?<!\{)\{([a-z_]+)\}(?!\})", ln):
            if f in TRUSTED_FIELDS:
                continue
            framed = 0 < i < len(lines) - 1 and lines[i - 1] == BLOCK and lines[i + 1] == BLOCK
            if not (framed and ln == "{" + f + "}"):
                bad.append(f)
    return bad


def template_hash(name: str) -> str:
    """A short hash of a template's (or task's) text ("<missing>" when there is no such file)."""
    if not has_template(name):
        return "<missing>"
    text = resources.files("spacelm").joinpath("prompts", f"{name}.txt").read_text(encoding="utf-8")
    if SEPARATOR not in text:
        return hashlib.sha256(text.strip().encode()).hexdigest()[:12]
    s, u = template(name)
    return hashlib.sha256((s + SEPARATOR + u).encode()).hexdigest()[:12]


def relevance_messages(question: str, passage: str) -> list[dict]:
    """The 0–3 relevance judge prompt (question first, so prompts for one question share a prefix)."""
    return render("relevance", question=question, passage=passage)
