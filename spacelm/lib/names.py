"""The suite's shared vocabulary, defined once: task types, retrieval systems, answer
rubrics, the scale of a run judged from its numbers, and the name of every file a run writes."""

from __future__ import annotations

# the five synthetic-question task types of the paper
TASKS = ("direct_qa", "abstract_qa", "fact_checking", "summarization", "analysis")
# fact-checking verdicts of golden samples
VERDICTS = ("supported", "refuted", "not_enough_info")
# a fact-checking question's label (its claim's true verdict against its source chunk), as synth writes it
FACT_CHECK_LABELS = ("supported", "refuted", "unverifiable")
# first-stage retrievers and the systems built on them
FIRST_STAGE = ("bm25", "dense", "hybrid")
SYSTEMS = ("bm25", "dense", "bm25+rerank", "dense+rerank", "hybrid", "hybrid+rerank")
PIPELINES = ("A", "B", "C")
# Table 2 rubrics, scored 1-5
RUBRICS = ("faithfulness", "relevance", "noise_robustness", "negative_rejection")

# below this many questions a table shows that the machinery works, not a finding
FINDINGS_MIN_QUESTIONS = 30


def reads_dense(systems) -> bool:
    """Whether any of the named retrieval systems needs the dense encoder (dense or hybrid)."""
    return any(s.startswith(("dense", "hybrid")) for s in systems)


def reranked(system: str) -> str:
    """The name of `system` followed by the reranker."""
    return f"{system}+rerank"


def scale(n_questions: int, min_questions: int = FINDINGS_MIN_QUESTIONS) -> str:
    """'smoke-scale run' when a table rests on too few questions to support a conclusion,
    else 'findings scale' (enough questions for a verdict to be attempted; not the whole question
    set). The one place this is decided."""
    return "findings scale" if n_questions >= min_questions else "smoke-scale run"


# a ranked list of (chunk_id, score), best first: what every retriever returns per query
Ranking = list[tuple[str, float]]


# --------------------------------------------------------------------------- run-folder files
# Every file a run writes, named once: paths relative to the run folder (`results/<run>/`), or to
# the data folders a run shares (`paths.processed_dir`, `paths.synthetic_dir`). A module that reads
# or writes one of them uses the constant, so a file's name can be searched for and changed here.

# the run as a whole
MANIFEST = "manifest.json"
LOGS_DIR = "logs"  # a run's log files (git-ignored)
RUN_LOG = "spacelm.log"
RESOLVED_CONFIG = "config.resolved.yaml"
REPORT = "report.md"
REPORT_DETAILS = "report_details.md"  # the detail sections behind report.md, linked from it
BROWSE = "browse.html"  # the drill-down page: per question its passages, grades and answers
ATTRIBUTION = "ATTRIBUTION.md"
PLOTS = "plots"  # folder of the report's figures
NOTEBOOKS = "notebooks"
LOGS = "logs"

# retrieve
RETRIEVAL = "retrieval"
RETRIEVAL_SUMMARY = "retrieval/summary.csv"
RETRIEVAL_SUMMARY_MD = "retrieval/summary.md"
RETRIEVAL_SIGNIFICANCE = "retrieval/significance.csv"
RETRIEVAL_PER_QUERY = "retrieval/per_query.jsonl"
RETRIEVAL_PER_TASK = "retrieval/per_task.csv"
TREC_RUN = "retrieval/run.{system}.trec"  # one TREC run file per system (6 columns)
TREC_QRELS = "retrieval/qrels.trec"  # the source chunk of each answerable question (grade 1)
TREC_QRELS_JUDGE = "retrieval/qrels.judge.trec"  # the judge's 0-3 grades of the passages it graded
RANKINGS = "retrieval/rankings.jsonl"
# the golden samples' answerable questions ranked beside the run's (grading.question_sets has "golden")
GOLDEN_RANKINGS = "retrieval/golden/rankings.jsonl"
GOLDEN_PER_QUERY = "retrieval/golden/per_query.jsonl"

# judge-check
JUDGE_CHECK = "judge_check"
JUDGE_RELEVANCE = "judge_check/relevance.json"
JUDGE_PAIRS = "judge_check/pairs.jsonl"
JUDGE_CONTROLS = "judge_check/controls.csv"
JUDGE_CONTROLS_ROWS = "judge_check/controls.jsonl"
JUDGE_CONTROLS_BY_KIND = "judge_check/controls_by_kind.csv"
JUDGE_CHECK_PLOTS = "judge_check/plots"

# grade (Table 1)
GRADES = "grades.jsonl"
TABLE1 = "table1_relevance.csv"
TABLE1_MD = "table1_relevance.md"
TABLE1_TEX = "table1_relevance.tex"
JUDGE_VALIDITY = "judge_validity.json"
GRADING = "grading"
PAIRED_TESTS = "grading/paired_tests.csv"
RELEVANT_SHARES = "grading/relevant_shares.csv"
GRADED_METRICS = "grading/graded_metrics.csv"
GRADING_PER_TASK = "grading/per_task.csv"
PPI_DIFFERENCES = "grading/ppi_differences.csv"
# Table 1's comparisons read through each signal of the grade alone (grade, score, each feature)
GRADE_DECOMPOSITION = "grading/decomposition.csv"
# Table 1 on the golden questions (grading.question_sets has "golden"): its grades and tables, and
# the judge's grades against the in-domain reference labels pair by pair
GOLDEN_GRADING = "grading/golden"
GOLDEN_GRADES = "grading/golden/grades.jsonl"
GOLDEN_TABLE1 = "grading/golden/table1_relevance.csv"
GOLDEN_PAIRED_TESTS = "grading/golden/paired_tests.csv"
GOLDEN_RELEVANT_SHARES = "grading/golden/relevant_shares.csv"
GOLDEN_REFERENCE_AGREEMENT = "grading/golden/reference_agreement.csv"
GOLDEN_LABEL_TABLE1 = "grading/golden/labels/table1_relevance.csv"
GOLDEN_LABEL_PAIRED_TESTS = "grading/golden/labels/paired_tests.csv"
GOLDEN_LABEL_RELEVANT_SHARES = "grading/golden/labels/relevant_shares.csv"
# per question set, system and k: the judge's nDCG@k beside the known gold's and the reference labels'
JUDGE_VS_GOLD = "grading/judge_vs_gold.csv"
# each paired test with each document left out and without the questions the checks flag
GRADING_SENSITIVITY = "grading/sensitivity.csv"
QUESTION_SCREENING = "grading/question_screening.json"
TABLE1_QUESTIONS = "grading/table1_questions.json"
# human labels for prediction-powered inference, in a folder of their own (grading.labels_dir)
# Table 1 through the assessor's labels (grading.instrument labels or both): its paired tests and
# relevant shares, and the embedded judge measured against the labels on the same pairs
LABEL_PAIRED_TESTS = "grading/labels/paired_tests.csv"
LABEL_RELEVANT_SHARES = "grading/labels/relevant_shares.csv"
JUDGE_VS_LABELS = "grading/labels/judge_vs_labels.json"
# Table 2 through the assessor's rubric scores (answer.instrument labels or both)
LABEL_TABLE2_TESTS = "answer_labels/table2_tests.csv"
ANSWER_JUDGES_VS_LABELS = "answer_labels/judges_vs_labels.json"
# the assessor's 0-3 grade of each passage the negative setting's answers read (its premise)
NEGATIVE_PASSAGES = "answer_labels/negative_passages.json"

# answer (Table 2, the pipelines, answerability, claims)
ANSWERS = "answers.jsonl"
TABLE2 = "table2_answer_quality.csv"
TABLE2_MD = "table2_answer_quality.md"
TABLE2_TEX = "table2_answer_quality.tex"
TABLE2_TESTS = "table2_tests.csv"
TABLE2_PER_TASK = "table2_per_task.csv"
ANSWER_CHECKS = "answer_checks.json"
PIPELINES_TABLE = "pipelines.csv"
ANSWERABILITY = "answerability.csv"
ANSWERABILITY_SWEEP = "answerability_sweep.csv"
CLAIMS = "claims.csv"
CLAIM_ROWS = "claims.jsonl"
FACT_CHECK_VERDICTS = "fact_check_verdicts.csv"
ANSWER_MEASURES = "answer_measures.csv"

# chunk-sizes
CHUNK_SIZES = "chunk_sizes"
CHUNK_SIZES_SUMMARY = "chunk_sizes/summary.csv"
CHUNK_SIZES_COSTS = "chunk_sizes/costs.csv"
CHUNK_SIZES_SUMMARY_MD = "chunk_sizes/summary.md"
CHUNK_SIZES_DIFFERENCES = "chunk_sizes/differences.csv"
# hit rate and coverage of the evidence span at equal reader tokens (and at equal k, labelled)
CHUNK_SIZES_EQUAL_BUDGET = "chunk_sizes/equal_budget.csv"
CHUNK_SIZES_EQUAL_BUDGET_DIFFERENCES = "chunk_sizes/equal_budget_differences.csv"
CHUNK_SIZE_TESTS = "paired_tests.csv"  # in chunk_sizes/<size>/: Table 1's paired tests at that size


def chunk_size_tests(size: int) -> str:
    """Table 1's paired tests (reranked − retrieved, dense − BM25) of the chunk-size study at `size`."""
    return f"{CHUNK_SIZES}/{size}/{CHUNK_SIZE_TESTS}"


# findings and report
FINDINGS = "findings.json"
PAPER_VS_RUN = "paper_vs_run.csv"
SETUP_VS_PAPER = "setup_vs_paper.csv"

# the report's figures, under PLOTS
PLOT_CHUNK_LENGTHS = "plots/chunk_lengths.png"
PLOT_SYNTH_KEPT = "plots/synth_generated_kept.png"
PLOT_RECALL = "plots/recall_at_k.png"
PLOT_CHUNK_BUDGET = "plots/chunk_sizes_budget.png"
PLOT_JUDGE_CALIBRATION = "plots/judge_calibration.png"  # drawn by the report in runs before the one below
JUDGE_CALIBRATION = "judge_check/plots/calibration.png"  # drawn by judge-check, so the notebooks show it
PLOT_GRADES = "plots/grade_distribution.png"
PLOT_TABLE1_PER_TASK = "plots/table1_per_task.png"
PLOT_FOREST = "plots/findings_forest.png"
PLOT_ANSWER_SCORES = "plots/answer_scores.png"
PLOT_NOISE = "plots/noise_curve.png"
PLOT_TABLE2_PER_TASK = "plots/table2_per_task.png"
PLOT_REFUSAL_SWEEP = "plots/refusal_sweep.png"

# shared data folders: under paths.processed_dir (ingest, chunk) and paths.synthetic_dir (synth)
DOCUMENTS = "documents.jsonl"
DOCUMENTS_TABLE = "documents.csv"
CHUNKS = "chunks.jsonl"
CHUNKS_PER_DOCUMENT = "chunks_per_document.csv"
INGEST_SKIPPED = "ingest_skipped.json"
INGEST_DROPPED = "ingest_dropped.jsonl"
QUESTIONS = "questions.jsonl"
RETENTION = "retention.csv"
RETENTION_MD = "retention.md"
UNANSWERABLE = "unanswerable.csv"
REJECTIONS = "rejections.csv"
REJECTIONS_MD = "rejections.md"
QUESTION_AUDIT = "question_audit.csv"
GOLDEN_CHECKS = "golden_checks.jsonl"
