"""The deterministic question checks of issue 40 on hand-built cases: a false premise named, a copy
measured, boilerplate recognised, and a fair question passing all three."""

from __future__ import annotations

import pytest

from spacelm.lib.synth.checks import (
    boilerplate_reason,
    content_coverage,
    longest_verbatim_run,
    premise_terms,
    summarise,
    unsupported_premises,
)

CHUNK = (
    "NASA's CARA team screens every conjunction of a protected asset. When the probability of collision "
    "exceeds 1e-4, the owner operator plans a mitigation manoeuvre. Null or non-positive-definite covariances "
    "are repaired before the probability is computed."
)
DOCUMENT = CHUNK + " The handbook was revised in 2023 by the Conjunction Assessment Risk Analysis office."


def test_a_few_shot_premise_put_onto_a_chunk_that_never_names_it_is_found():
    q = "Summarise what the Council recommended about null covariances in conjunction assessment."
    assert premise_terms(q) == ["Council"]
    assert unsupported_premises(q, CHUNK, DOCUMENT) == ["Council"]
    # an acronym or a year the document holds (not the chunk) is supported by the document
    assert unsupported_premises("What did CARA change in the 2023 revision?", CHUNK, DOCUMENT) == []
    # a number nowhere in the sources is a premise too
    assert unsupported_premises("Why does CARA act above a probability of 1e-3?", CHUNK, DOCUMENT) == ["1e-3"]


def test_possessives_plurals_and_word_order_do_not_make_a_false_premise():
    assert unsupported_premises("How does NASA screen conjunctions?", CHUNK) == []
    assert unsupported_premises("What do owner operators plan when CARA flags a conjunction?", CHUNK) == []


def test_a_copied_question_has_a_long_verbatim_run_and_full_coverage_a_fair_one_neither():
    copy = "When the probability of collision exceeds 1e-4, what does the owner operator plan?"
    fair = "Which threshold on collision risk makes an operator move its satellite?"
    assert longest_verbatim_run(copy, CHUNK) == 7  # when the probability of collision exceeds 1e-4
    assert content_coverage(copy, CHUNK) == 1.0
    assert longest_verbatim_run(fair, CHUNK) <= 2 and content_coverage(fair, CHUNK) < 0.5
    assert content_coverage("What is it?", CHUNK) == 0.0  # no content word: nothing to cover


@pytest.mark.parametrize(
    "text, reason",
    [
        (
            "This article is licensed under a Creative Commons Attribution 4.0 International License, which "
            "permits use and sharing in any medium. © The Author(s) 2023.",
            "licence",
        ),
        (
            "[1] Smith J, et al. Debris growth. Acta Astronaut. 2019; 12: 1-10. [2] Doe A, et al. Conjunction "
            "screening. J. Space Saf. 2020; 7: 4-9. [3] Roe B, et al. Tracking. Adv. Space Res. 2021.",
            "references",
        ),
        (
            "Contents\n1 Introduction ........ 3\n2 Scope ........ 5\n3 Methods ........ 9\n4 Results ........ 12",
            "table_of_contents",
        ),
        ("Figure 3: Conjunctions per month in LEO, 2015-2023.", "caption"),
        ("def screen(a, b):\n    d = dist(a, b);\n    if d < 5: {flag(a)};\n    return d;", "code"),
        ("EUROPEAN SPACE AGENCY\nAnnual Report\n2023\nSpace Debris Office", "header"),
    ],
)
def test_boilerplate_chunks_are_recognised_with_their_reason(text, reason):
    assert boilerplate_reason(text) == reason


def test_a_chunk_of_prose_is_worth_asking_about():
    assert boilerplate_reason(CHUNK) is None
    legal = (
        "3.1. In taking all necessary measures, Union space operators shall at least:\n(a) adequately secure "
        "the launch sites and premises;\n(b) maintain all physical assets in adequate condition;\n(c) for "
        "operators in MEO and GEO, steps to remove spacecraft to an alternative orbit;\n(d) steps to ensure "
        "the safe re-entry of the spacecraft from LEO;"
    )
    assert boilerplate_reason(legal) is None  # an enumeration's semicolons are not code
    assert boilerplate_reason(DOCUMENT + " It cites Smith et al. (2019) once.") is None


def test_summaries_of_a_distribution():
    assert summarise([]) == {"n": 0, "mean": None, "median": None, "p90": None}
    assert summarise([3, 1, 2, 10]) == {"n": 4, "mean": 4.0, "median": 3, "p90": 10}


def test_a_capitalised_word_opening_any_sentence_is_not_a_name():
    q = "Operators compare each case with a threshold. They plan a manoeuvre when needed: Which office decides?"
    assert premise_terms(q) == []
    assert premise_terms("Operators tell the Council. They act.") == ["Council"]


def test_a_superscript_in_the_source_matches_its_plain_digit():
    source = "The IRIS² constellation serves governments."
    assert unsupported_premises("What will IRIS2 offer governments?", source) == []
