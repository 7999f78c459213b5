"""The configuration schema: one typed dataclass per section, and :class:`Config`, the one
object every stage receives. Defaults live here; loading is in `load.py`, value checks in
`validate.py`. The config imports the library, never the reverse: a section the library reads
whole is defined beside the code that reads it (:class:`LLMConfig` in `lib/llm/settings.py`, the
retrievers' sections in `lib/retrieval/systems.py`, `bm25.py` and `dense.py`) and used here as a
field type; every other section gains a method building the small parameter object a library
function takes (`ingest.rules()`, `grading.judging()`, :meth:`Config.question_writing`, ...)."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from ..lib.answer.answers import AnswerDesign
    from ..lib.judge.relevance import RelevanceJudging, TableDesign
    from ..lib.report.power import PowerPlan
    from ..lib.report.setup_table import RunSetup
    from ..lib.synth.questions import QuestionWriting

from ..lib.answer.gate import CONFIRMATION_PATTERNS, STRONG_CLAIM_PATTERNS
from ..lib.ingest.bibliography import BibliographyRules
from ..lib.llm.settings import LLMConfig
from ..lib.names import TASKS
from ..lib.retrieval.bm25 import BM25Config
from ..lib.retrieval.dense import DenseConfig
from ..lib.retrieval.rerankers.settings import RerankerConfig
from ..lib.retrieval.systems import HybridConfig, RetrievalSetup


class ConfigError(ValueError):
    """A configuration file is missing, malformed, or holds an unknown key / wrong type."""


# --------------------------------------------------------------------------- sections
@dataclass
class CorpusConfig:
    raw_dir: str = "data/raw"
    golden_samples: str = "data/raw/golden_samples.jsonl"
    # the corpus list the folder should match (a name under spacelm/data/corpora or a .tsv path):
    # its identity goes to the manifest and its attribution lines beside outputs quoting documents
    file_list: str | None = None
    # the corpus size (chunks) the config's sizes and budget were set for: a run on a much larger
    # corpus says in the log, before the stages that read every chunk, what they will cost
    sized_for_chunks: int | None = None
    extensions: list[str] = field(default_factory=lambda: [".pdf", ".md", ".txt"])
    exclude: list[str] = field(default_factory=lambda: ["README.md"])


@dataclass
class PathsConfig:
    processed_dir: str = "data/processed"
    synthetic_dir: str = "data/synthetic"
    results_dir: str = "results"
    cache_dir: str = ".cache/spacelm"


@dataclass
class IngestConfig:
    reference_filter: bool = True  # remove bibliographies, found by their content
    noise_filter: bool = True  # remove page numbers, rotated stamps, letter-by-letter figure text, running heads
    layout: Literal["columns", "stream"] = "columns"  # reading order on two-column pages (see README "Ingest")
    ocr: bool = False  # read pages without a text layer with Tesseract (PyMuPDF OCR)
    ocr_language: str = "eng"
    # a block is part of a bibliography when this share of its characters is in citation-like entries
    bibliography_min_score: float = BibliographyRules.min_score
    # ... and a run of such blocks needs this many entries when no References heading announces it
    bibliography_min_entries: int = BibliographyRules.min_entries
    # a citation-like entry has at most this share of function words (prose has about 40%)
    bibliography_max_stopwords: float = BibliographyRules.max_stopword_share
    garbled_threshold: float = 0.02
    min_doc_chars: int = 200

    def rules(self):
        """The ingest rules as the library takes them."""
        from ..lib.ingest.documents import IngestRules

        return IngestRules(
            self.reference_filter,
            self.noise_filter,
            self.layout,
            self.ocr,
            self.ocr_language,
            BibliographyRules(
                self.bibliography_min_score, self.bibliography_min_entries, self.bibliography_max_stopwords
            ),
        )


@dataclass
class ChunkingConfig:
    max_tokens: int = 256
    overlap: float = 0.0
    tokenizer: str = "embedded:minilm"


@dataclass
class RetrievalConfig:
    systems: list[str] = field(default_factory=lambda: ["bm25", "dense", "bm25+rerank", "dense+rerank", "hybrid"])
    k_values: list[int] = field(default_factory=lambda: [3, 5, 7, 10])
    # the reranker's pool: the first stage's top-`pool` passages are rescored. A number below 1 is a
    # share of the corpus (0.1: a tenth of the chunks), so the first stage still decides what the
    # reranker sees; never fewer than the largest k. Rankings are stored to this depth.
    pool: int | float = 0.1
    # ... but never more than this many passages (null: no cap): a share of a large corpus would
    # make the reranker's cost per question grow with the corpus (10% of 1,575 chunks = 158)
    pool_max: int | None = 50
    near_page_window: int = 1
    # where the torch models run (the dense retriever, the rerankers, the cross-encoder's training):
    # "auto" is CUDA when torch sees a GPU, else the CPU; "cuda" without a GPU is refused before any
    # model loads. The manifest records the device each stage used
    device: Literal["auto", "cpu", "cuda"] = "auto"
    bm25: BM25Config = field(default_factory=BM25Config)
    dense: DenseConfig = field(default_factory=DenseConfig)
    hybrid: HybridConfig = field(default_factory=HybridConfig)
    reranker: RerankerConfig = field(default_factory=RerankerConfig)

    def setup(self) -> RetrievalSetup:
        """The systems to build and how, as :func:`~spacelm.lib.retrieval.systems.build_systems` takes them."""
        return RetrievalSetup(
            tuple(self.systems),
            self.bm25,
            self.dense,
            self.hybrid,
            self.reranker,
            self.pool,
            self.pool_max,
            tuple(self.k_values),
            self.resolved_device(),
        )

    def resolved_device(self) -> str:
        """`device` with "auto" resolved: "cuda" when torch sees a GPU, else "cpu"."""
        from ..lib.retrieval.systems import resolve_device

        return resolve_device(self.device)


@dataclass
class ModelsConfig:
    generator: LLMConfig = field(default_factory=LLMConfig)
    judge: LLMConfig = field(default_factory=LLMConfig)
    question_writer: LLMConfig = field(default_factory=LLMConfig)


@dataclass
class UnanswerableConfig:
    """Questions the corpus cannot answer, written from answerable ones and checked: a candidate
    is kept only when no passage in the union of the BM25 and dense top-`check_k` is graded
    `answerable_grade` or more by the judge."""

    enabled: bool = True
    # out_of_corpus: same topic, another mission, figure, date or body; strong_claim: asks whether
    # the documents confirm a claim that goes beyond what the source passage says
    kinds: list[Literal["out_of_corpus", "strong_claim"]] = field(
        default_factory=lambda: ["out_of_corpus", "strong_claim"]
    )
    per_task: int | None = 2  # candidates per task type and kind (null: one per answerable question)
    # further rounds, one candidate per kind each, for task types still without a kept question
    max_rounds: int = 3
    check_k: int = 3
    answerable_grade: int = 2
    # a text file of subjects (one per line, # comments) an out-of-corpus question may name, those the
    # corpus never mentions; null: the package's space-operations list (a team in another domain writes its own)
    subjects: str | None = None


@dataclass
class QuestionChecksConfig:
    """Checks every written question must pass before the retrieval filter (lib/synth/checks.py).
    The copy thresholds come from the golden samples' own distribution: on the shared corpus their
    longest verbatim run with their chunk is 2 words at the median and 5 at most, and their
    content-word coverage 0.43 on average and 0.73 at most; the synth stage reports how many golden
    questions each threshold would reject, so a team's own golden set shows whether they fit it."""

    # a question sharing a longer run of words with its chunk, or a larger share of its content
    # words, restates the chunk (a reader needs no retrieval; a judge rewarding overlap looks valid)
    max_verbatim_run: int = 5
    max_coverage: float = 0.8
    # reject a question naming what neither its chunk's neighbourhood (`context_chunks` each side),
    # the document's first `front_chars` characters (title, issuer, date) nor its document holds;
    # a name found only elsewhere in the document goes to the judge
    premise: bool = True
    context_chunks: int = 2
    front_chars: int = 3000
    # never write from a licence, reference list, table of contents, caption, header or code chunk
    skip_boilerplate: bool = True
    # the judge checks each fact-check claim against its chunk (asked both ways, so its lean cancels):
    # a supported claim must be supported, a refuted or unverifiable one must not
    label_check: bool = True

    def checks(self):
        from dataclasses import asdict

        from ..lib.synth.checks import QuestionChecks

        return QuestionChecks(**asdict(self))


@dataclass
class SynthConfig:
    tasks: list[str] = field(default_factory=lambda: list(TASKS))
    n_fewshot: int = 5
    # per_chunk: each prompt's examples drawn for its chunk from other documents' golden samples
    # (no example's wording dominates a task); per_task_fixed: one draw per task (prompts share a
    # prefix, but two examples opening "Summarise what the Council..." put the Council everywhere)
    # per_document: one draw per task and document, from other documents' samples (a document's
    # prompts of a task share their examples, a prefix the engine evaluates once per group)
    fewshot_sampling: Literal["per_chunk", "per_document", "per_task_fixed"] = "per_chunk"
    # stratified: one question per source chunk, `max_chunks` chunks spread round-robin over the
    # documents with the tasks rotating (questions = source chunks); every_task: the paper's
    # design, every selected chunk x every task (questions = max_chunks x tasks)
    sampling: Literal["stratified", "every_task"] = "stratified"
    # source chunks to write from (null: every substantial chunk)
    max_chunks: int | None = None
    with_reference_answer: bool = False
    min_question_words: int = 4
    filter_top_n: int = 50
    filter_retriever: Literal["bm25", "dense", "union"] = "union"
    checks: QuestionChecksConfig = field(default_factory=QuestionChecksConfig)
    unanswerable: UnanswerableConfig = field(default_factory=UnanswerableConfig)
    # false: the run writes no questions and reads those in paths.synthetic_dir, written by the
    # (committed) run of another config over the same chunks, e.g. a Table 2 study over the
    # questions of the Table 1 study; `spacelm check` refuses it when that file is missing
    enabled: bool = True


@dataclass
class GradingConfig:
    max_questions: int | None = None
    # false: the run has no grade stage (no Table 1): a Table 2 study, whose Table 1 another run tests
    enabled: bool = True
    # a nested design: this many of the questions (seeded) graded to the largest top-k, the others to
    # the smallest only (null: every question to the largest)
    deep_questions: int | None = None
    retrievers: list[str] = field(default_factory=lambda: ["bm25", "dense"])
    top_k: list[int] = field(default_factory=lambda: [3, 5, 7, 10])
    n_bootstrap: int = 1000
    consistency_check: bool = True  # re-grade the validity pairs with the passage before the question
    auc_warning: float = 0.75  # judge-validity AUC below this is flagged in the report
    # the judge's prompt template (spacelm/prompts/<name>.txt; <name>_swapped.txt puts the passage
    # first): "relevance" (the scale after the passage) or "relevance_rubric" (a descriptive rubric
    # before the query, so it joins the prefix shared by every prompt)
    prompt: str = "relevance"
    # "both_orders": grade every pair question-first and passage-first and use the mean of the two
    # expected grades (against position bias; twice the judge calls)
    debias: Literal["none", "both_orders"] = "none"
    # "prompt": the judge's own 0-3 digit from `prompt` (what a large judge on vLLM or a server
    # runs, as the paper did); "calibrated": several signals of the judge combined and cut into
    # 0-3 by a calibration fitted on human labels (spacelm/lib/judge/calibrated.py), for the
    # small embedded judge whose digit probabilities are nearly flat
    method: Literal["prompt", "calibrated"] = "prompt"
    # a calibration name (spacelm/data/judges/<name>.json) or a path to one; fitted for one judge model
    calibration: str = "qwen2.5-coder-1.5b-llm-only"
    # the grader may not read a score of any system it grades (the same model file, or a feature
    # computed by a system's scorer: spacelm/lib/instruments.py); the config check refuses such a
    # combination. true only to reproduce an old run: every finding comparing a system whose
    # scorer the grader shares then reads "no evidence (the judge shares the scorer of X)"
    allow_shared_scorer: bool = False
    # prompt features of the judge measured beside a calibrated grade and never part of it
    # (e.g. [digit_expected]: the paper's digit prompt), so the report can show Table 1's
    # comparisons under each signal alone (grading/decomposition.csv); each costs a judge call per pair
    diagnostic_features: list[str] = field(default_factory=list)
    # the question sets Table 1 is graded on: "run" (the run's evaluation questions, the paper's
    # design) and "golden" (the golden samples' answerable questions, natural wording; retrieve ranks
    # them too, the judge grades both sets' pairs in one turn, and their tables go to grading/golden/)
    question_sets: list[Literal["run", "golden"]] = field(default_factory=lambda: ["run"])
    # golden questions graded at most (null: every answerable golden sample found in the corpus)
    max_golden_questions: int | None = None
    # the unit Table 1's (and Table 2's) paired tests and cluster-bootstrap CIs treat as independent:
    # questions nest in source chunks, which nest in documents; "document" (the default) allows for
    # questions of one document moving together, "question" assumes none do
    cluster: Literal["document", "source_chunk", "question"] = "document"
    # what Table 1's verdicts read: "judge" (the grader above), "labels" (the assessor's labels in
    # the label store, docs/labels.md) or "both" (verdicts through labels; the judge is measured
    # against them on the same pairs, a finding about the judge)
    instrument: Literal["judge", "labels", "both"] = "judge"
    # with instrument "both": the embedded judge grades this many of each question set's Table 1
    # questions (seeded), the assessor's labels read them all; the judge's tables and its agreement
    # with the labels rest on that sample (null: the judge grades every question)
    judge_questions: int | None = None

    def judging(self, base: Path | None = None) -> RelevanceJudging:
        """The library's description of how pairs are graded (a calibration path is resolved
        against `base`, the project folder)."""
        from ..lib.judge.relevance import RelevanceJudging

        cal = self.calibration
        if self.method == "calibrated" and cal.endswith(".json") and base is not None and not Path(cal).is_absolute():
            cal = str(Path(base) / cal)
        return RelevanceJudging(
            self.method, self.prompt, cal if self.method == "calibrated" else None, tuple(self.diagnostic_features)
        )


@dataclass
class GateWeights:
    similarity: float = 0.5
    keywords: float = 0.3
    confirmation: float = 0.2


@dataclass
class GateConfig:
    """The evidence gate before generation (see spacelm/lib/answer/gate.py): a confidence from the
    question's similarity to the top passages, its keyword coverage and, for strong-claim
    queries, confirmation language in the same sentence as the claim."""

    enabled: bool = True
    top_n: int = 3
    weights: GateWeights = field(default_factory=GateWeights)
    threshold: float = 0.45
    strong_weights: GateWeights = field(default_factory=lambda: GateWeights(0.2, 0.3, 0.5))
    strong_threshold: float = 0.6
    strong_patterns: list[str] = field(default_factory=lambda: list(STRONG_CLAIM_PATTERNS))
    confirmation_patterns: list[str] = field(default_factory=lambda: list(CONFIRMATION_PATTERNS))
    sweep_steps: int = 41  # thresholds 0..1 drawn in the refusal-recall / false-refusal sweep

    def rules(self):
        from ..lib.answer.gate import GateRules

        return GateRules(
            dataclasses.asdict(self.weights),
            self.threshold,
            dataclasses.asdict(self.strong_weights),
            self.strong_threshold,
            tuple(self.strong_patterns),
            tuple(self.confirmation_patterns),
            self.top_n,
        )


@dataclass
class AnswerConfig:
    max_questions: int | None = None
    # false: the run has no answer stage (no Table 2, no answerability): a Table 1 study, whose
    # Table 2 findings another run with its own plan tests
    enabled: bool = True
    # what Table 2's verdicts read: "judge" (the embedded answer judges), "labels" (the assessor's
    # rubric scores in the label store) or "both" (verdicts through labels; each answer judge is
    # measured against the assessor on the same answers)
    instrument: Literal["judge", "labels", "both"] = "judge"
    # with instrument "both": the embedded judges score the answers of this many of the answered
    # questions (seeded; the unanswerable ones in the same proportion), the assessor scores every
    # answer; the judges' tables and their agreement with the labels rest on that sample (null: the
    # judges score every answer)
    judge_questions: int | None = None
    # settings with the relevant passage plus N wrong ones ("standard" is N = 0) ...
    n_wrong_values: list[int] = field(default_factory=lambda: [0, 3])
    # ... and the negative setting: N wrong passages and no relevant one (0 to skip it)
    negative_n_wrong: int = 5
    # wrong passages: "random" chunks of other documents; "hard", BM25's top chunks of other documents;
    # "same_document", other chunks of the source's document; "bm25", BM25's top chunks of any document.
    # The last two leave out the source, its neighbours and chunks overlapping it, so they can mislead
    # without holding the answer
    wrong_sampling: Literal["random", "hard", "same_document", "bm25"] = "random"
    # the negative setting's passages, drawn the same ways (None: as `wrong_sampling`). A setting with
    # no relevant passage measures declining only when its passages cannot answer; "bm25" often fills
    # it with chunks holding the same fact (the report checks it: findings.negative_premise), "hard"
    # draws BM25's top chunks of other documents
    negative_sampling: Literal["random", "hard", "same_document", "bm25"] | None = field(
        default=None, metadata={"neutral_default": True}
    )
    pipelines: list[str] = field(default_factory=lambda: ["A", "B", "C"])
    retriever: str = "bm25"  # the system whose ranking feeds pipelines B and C
    retrieve_k: int = 3
    binary_judges: bool = True
    # how a 1-5 rubric call becomes a score: the digit the judge picks ("digit", the paper's), or
    # its expected score, the mean of 1-5 weighted by the judge's probability of each digit
    # ("expected"). A small judge that gives good and bad answers the same digit can still rank
    # them by its expected score (docs/judges.md); the controls are scored the same way, so a
    # rubric's verdict is about the score its table reports. "expected" needs the backend's token
    # probabilities (llama.cpp and vLLM give them); a call without them is left unscored.
    scoring: Literal["digit", "expected"] = "digit"
    # the yes/no refusal judge (prompts judge_refusal and its mirror judge_refusal_mirrored, asked
    # both ways so a lean to "yes" cancels) on every answer whose passages cannot answer
    # (the negative setting, unanswerable questions): with the phrase check, the refusal rate that
    # negative rejection reports first
    refusal_judge: bool = True
    n_bootstrap: int = 1000
    # passages shown as [1]..[n] (numbered) or by chunk id (ids); both are parsed back to chunk ids
    citations: Literal["numbered", "ids"] = "numbered"
    # split answers into claims and judge each against the passages it cites: in every answer
    # with passages ("all"), or in the pipelines' answers only ("pipelines": about half the calls)
    claims: bool = True
    claims_scope: Literal["all", "pipelines"] = "all"
    # unanswerable questions answered by pipeline B for the refusal evaluation (None: all kept)
    max_unanswerable: int | None = None
    # write a reference answer (question writer, from the source passage) for every question the
    # pipelines answer that has none from synth, so their correctness can be judged: only the
    # questions answered here pay for one (synth.with_reference_answer writes one for all)
    reference_answers: bool = True
    gate: GateConfig = field(default_factory=GateConfig)

    @property
    def negative_draw(self) -> str:
        """How the negative setting draws its passages: `negative_sampling`, else as the noise."""
        return self.negative_sampling or self.wrong_sampling

    def judges(self) -> tuple[str, ...]:
        """The judges this section calls: the four 1-5 rubrics always, the yes/no judges, the
        claim judge and the refusal judge when switched on. judge-check's controls check these."""
        from ..lib.answer.answers import BINARY_JUDGES
        from ..lib.judge.validity import ANSWER_RUBRICS, CLAIM_JUDGE, REFUSAL_JUDGE

        return (
            *ANSWER_RUBRICS,
            *(BINARY_JUDGES if self.binary_judges else ()),
            *((CLAIM_JUDGE,) if self.claims else ()),
            *((REFUSAL_JUDGE,) if self.refusal_judge else ()),
        )


@dataclass
class CheckSource:
    """A folder of human relevance labels in BEIR format (corpus.jsonl, queries.jsonl and
    qrels/<split>.tsv or qrels.tsv; binary or graded 0-3)."""

    name: str = "scifact"
    path: str = "../shared/beir/scifact"
    split: str = "test"
    n_queries: int = 10
    # labels of other (automatic) judges on the same pairs, TREC qrels files `<name>.qrels.txt`
    # ("query-id Q0 passage-id label"); null: `<path>/reference_judges` when that folder exists
    reference_judges: str | None = None
    # labels on the run's own corpus (e.g. ../shared/judge/space-corpus): the source Table 1's
    # verdicts read the judge's validity and its bias between systems from
    in_domain: bool = False
    # the system-bias audit on this source (null: judge_check.bias_audit); Table 1's verdicts read
    # the in-domain source's audit only
    bias_audit: bool | None = None


@dataclass
class ChunkStudyConfig:
    """Retrieval, and optionally Table 1, at several chunk sizes over the same documents and the
    same questions, scored against chunk-independent gold (each question's evidence as a span of
    its document; see lib/retrieval/span_gold.py). Empty `sizes`: no study."""

    sizes: list[int] = field(default_factory=list)
    # tokens are counted with this tokenizer (null: chunking.tokenizer); it should be the one of
    # the dense retriever that reads the chunks
    tokenizer: str | None = None
    # the dense retriever at every size (null: retrieval.dense.model); it must read the largest size
    # (embedded:nomic-embed-text-v1.5 reads 2,048 tokens; all-MiniLM-L6-v2 only 256)
    dense_model: str | None = None
    systems: list[str] = field(default_factory=lambda: ["bm25", "dense", "bm25+rerank", "dense+rerank"])
    # which questions: "run" (the run's evaluation questions), "golden" (the golden samples whose
    # passage is found verbatim: the most precise spans)
    question_sets: list[Literal["run", "golden"]] = field(default_factory=lambda: ["run", "golden"])
    # a retrieved chunk is relevant when it shares this share of the shorter of chunk and span
    min_share: float = 0.5
    # Table 1 at every size on this many of the run's questions (0: retrieval only); the judge
    # reads whole chunks, so a 2,000-token pair costs about 8x a 256-token one
    grade_questions: int = 0
    grade_top_k: list[int] = field(default_factory=lambda: [3])
    # Table 1 at a size is graded only when grade_questions reaches this many (null: no minimum;
    # the analysis plan's need for the chunk-size finding) and the judge reads that size's longest
    # chunk whole (stages/chunk_gate.py); otherwise the size is left ungraded and the reason recorded
    min_grade_questions: int | None = None
    # reader budgets in tokens (the study's tokenizer): hit rate and coverage of the evidence span
    # when a reader takes the ranked chunks in order within each budget (lib/retrieval/budget.py)
    budgets: list[int] = field(default_factory=lambda: [512, 1024, 2048, 4096])


@dataclass
class JudgeCheckConfig:
    """Measuring the judge before trusting it: agreement with human labels, an in-domain check
    on the golden samples, known-answer controls for every answer rubric, position bias."""

    enabled: bool = True
    sources: list[CheckSource] = field(
        default_factory=lambda: [
            CheckSource("scifact", "../shared/beir/scifact", "test", 10),
            CheckSource("trec-dl-2020", "../shared/judge/trec-dl-2020", "test", 6),
        ]
    )
    in_domain: bool = True
    n_in_domain: int = 10  # golden samples, each with two hard negatives
    controls: bool = True
    # known-answer controls per judge (each a good and a bad answer of one question; the kinds of
    # bad answer rotate between questions); a pass rate's 95% Wilson interval clears 0.8 only
    # from about 17 controls passed out of 17, so verdicts need 30 or more
    n_controls: int = 30
    # bad answers drawn from the generator's own outputs too: judge-check answers the answer stage's
    # questions under its Table 2 settings (the same prompts, so the answer stage reads them from the
    # cache) and the answers deterministic checks flag (lib/answer/failures.py) become controls
    control_outputs: bool = True
    # a control passes when its good answer scores at least this share of the judge's scale above
    # the bad one (0.125: half a point on the 1-5 rubrics, twice the 0.25 equivalence margin; on a
    # yes/no judge any flip); 0 counts any positive gap
    min_control_gap: float = 0.125
    # a judge's set needs this many kinds of bad answer, none more than a third of the set, for a verdict
    min_control_kinds: int = 3
    position_bias: bool = True  # grade the check pairs passage-first too
    # ... only those of the first N queries of each source (null: every pair); ignored when
    # grading.debias is both_orders, which needs every pair in both orders
    position_bias_queries: int | None = None
    n_bootstrap: int = 1000
    # verdicts from CI bounds (lib/judge_check.verdict): "too few pairs to tell" below min_pairs;
    # where a source has reference judges, relative to them (valid: our lower bounds reach every
    # reference's AUC and kappa; fails: below every reference); elsewhere absolute: valid when the
    # lower bounds reach valid_auc and valid_kappa, fails when the AUC's upper bound is under
    # fail_auc, too few to tell when the AUC's CI is wider than max_ci_width, else weak
    min_pairs: int = 30
    max_ci_width: float = 0.3
    valid_auc: float = 0.8
    valid_kappa: float = 0.4
    fail_auc: float = 0.65
    # controls: valid when the lower bound of the pass rate's 95% Wilson interval (good answer
    # scored above bad, as the tables score) reaches valid_pass_rate, fails when its upper bound is
    # under fail_pass_rate; fewer than min_controls per judge is too few to tell
    valid_pass_rate: float = 0.8
    fail_pass_rate: float = 0.6
    min_controls: int = 10
    # each boundary a Table 1 finding reads (grade >= 1, >= 2, = 3) is checked on its own: valid when
    # kappa at that cut reaches boundary_kappa and its 95% CI's lower bound boundary_kappa_low;
    # fails when the upper bound is under boundary_kappa_low; too few to tell with fewer than
    # min_boundary_pairs labels on either side of the cut
    boundary_kappa: float = 0.4
    boundary_kappa_low: float = 0.2
    min_boundary_pairs: int = 10
    # system-bias audit: on each source, the run's Table 1 systems retrieve (top bias_top_k) from the
    # source's labelled passages plus the BM25 top bias_pool of each sampled query; the judge grades
    # what they retrieve and its grade - label residual is compared between systems
    bias_audit: bool = True
    bias_top_k: int = 3
    bias_pool: int = 100
    # a comparison of two systems gets a verdict only when the judge's bias difference between
    # them (its 95% CI, at the boundary the finding reads) lies within this share of the
    # finding's detectable difference
    bias_share_of_mde: float = 0.5


@dataclass
class FindingsMargins:
    """Each "changes little" finding's equivalence margin, in rubric points (1-5): the change from
    standard to 3 wrong passages is "little" when its 90% CI lies within ±margin."""

    faithfulness: float = 0.25
    relevance: float = 0.25


@dataclass
class FindingsControlKinds:
    """The known-answer control kinds (judge_check/controls.jsonl `kind`) whose good - bad gap must
    resolve each margin: the failures the wrong passages can cause (docs/judges.md lists the kinds).
    An empty list reads all of the rubric's controls, as do controls that carry no kind."""

    # the generator's own answers that took their content from an injected passage, and a claim taken
    # from an injected passage, alone or after the right one
    faithfulness: list[str] = field(default_factory=lambda: ["injected_content", "unrelated_claim", "partial"])
    # an answer to another question, and the generator's own answers that say nothing
    relevance: list[str] = field(default_factory=lambda: ["other_question", "non_answer"])


@dataclass
class FindingsConfig:
    """The findings' rules fixed before the run (spacelm/lib/report/findings.py): a margin is a
    claim about the instrument, so a verdict at it needs the judge's control gap for the relevant
    kinds (its lower 95% bound) to be at least twice the margin, else *no evidence*."""

    margins: FindingsMargins = field(default_factory=FindingsMargins)
    control_kinds: FindingsControlKinds = field(default_factory=FindingsControlKinds)


@dataclass
class PlanFindingConfig:
    """One finding the analysis plan fixes (spacelm/lib/report/plan.py: `id` from its FINDINGS)."""

    id: str = ""
    # one primary finding sizes the run: its questions must reach n_needed
    role: Literal["primary", "secondary"] = "secondary"
    # t: the cluster-robust paired t; t_and_permutation: and the cluster sign-flip permutation test
    test: Literal["t", "t_and_permutation"] = "t_and_permutation"
    alpha: float = 0.05
    cluster: Literal["document", "source_chunk", "question"] = "document"
    # questions for 80% power at the paper's effect, from `spacelm plan`'s power table on the
    # previous run's measured spread (null: no measured variance sizes it; the run measures it)
    n_needed: int | None = None
    basis: str = ""  # where n_needed comes from
    # the Table 1 question set it reads: the run's own questions, or the golden samples (grading.question_sets)
    question_set: Literal["run", "golden"] = "run"
    # the pilot's per-question SD of the finding's measure (its paired difference), which sized n_needed
    sd: float | None = None
    # the questions the run will read for it (after the exclusion rule), as the plan expects them
    n_planned: int | None = None
    # the budget cannot give it n_needed: stated here, before the run, so the report reads its
    # verdict as underpowered rather than discovering it afterwards
    underpowered: bool = False


@dataclass
class AnalysisPlanConfig:
    """The analysis plan, fixed before the run: the findings it tests and how. Its sha256 goes
    into the manifest before the first stage; findings it does not name are exploratory."""

    fixed: str = ""  # when it was fixed, and from which run's variances
    # the labelled pilot whose spread sized the findings: run, commit, questions, instrument
    pilot: str = ""
    # which questions leave the study, and by whose verdict (stated before any screening is read)
    exclusion: str = ""
    findings: list[PlanFindingConfig] = field(default_factory=list)

    def entries(self) -> list:
        from ..lib.report.plan import PlanEntry

        return [
            PlanEntry(
                f.id,
                f.role,
                f.test,
                f.alpha,
                f.cluster,
                f.n_needed,
                f.basis,
                f.question_set,
                f.sd,
                f.n_planned,
                f.underpowered,
            )
            for f in self.findings
        ]


@dataclass
class LabelsFloorConfig:
    """What an assessor's standing must reach on the calibration items for its labels to be
    imported (spacelm/lib/labels/standing.py)."""

    # κ at grade >= 2 against the NIST grades of the calibration pairs
    relevance_kappa: float = 0.40
    # share of known-answer controls whose good answer the assessor scores above the bad one
    controls: float = 0.80
    # share of golden questions screened in the known direction (answerable or not)
    screening: float = 0.80


@dataclass
class LabelsConfig:
    """Labels from an assessor of measured standing (people, or a large LLM reading as an
    assessor): where they are kept, how blind batches are made, and the floor an import must reach.
    `spacelm label export | import` (docs/labels.md)."""

    # the label store's folder (null: the run's own results/<run>/labels); a team may share one
    # store between runs over the same corpus: labels are keyed by document span, not chunk id
    store: str | None = None
    # NIST-graded TREC DL pairs mixed blind into relevance batches (queries.jsonl, corpus.jsonl,
    # qrels.tsv in BEIR layout), and how many per NIST grade
    calibration_pairs: str = "../shared/judge/trec-dl-2020"
    calibration_per_grade: int = 25
    # golden questions (answerable and not) mixed into screening batches, and answer controls
    # (good and damaged answers) into answer batches: at most this many each
    calibration_questions: int = 30
    calibration_controls: int = 30
    # the share of items repeated once in another batch (the assessor against itself)
    repeat_share: float = 0.10
    floor: LabelsFloorConfig = field(default_factory=LabelsFloorConfig)


@dataclass
class Config:
    run_name: str = "quick"
    seed: int = 13
    corpus: CorpusConfig = field(default_factory=CorpusConfig)
    paths: PathsConfig = field(default_factory=PathsConfig)
    ingest: IngestConfig = field(default_factory=IngestConfig)
    chunking: ChunkingConfig = field(default_factory=ChunkingConfig)
    retrieval: RetrievalConfig = field(default_factory=RetrievalConfig)
    models: ModelsConfig = field(default_factory=ModelsConfig)
    synth: SynthConfig = field(default_factory=SynthConfig)
    grading: GradingConfig = field(default_factory=GradingConfig)
    answer: AnswerConfig = field(default_factory=AnswerConfig)
    judge_check: JudgeCheckConfig = field(default_factory=JudgeCheckConfig)
    chunk_study: ChunkStudyConfig = field(default_factory=ChunkStudyConfig)
    findings: FindingsConfig = field(default_factory=FindingsConfig)
    analysis_plan: AnalysisPlanConfig = field(default_factory=AnalysisPlanConfig)
    labels: LabelsConfig = field(default_factory=LabelsConfig)
    # where the YAML came from; relative paths in the config resolve against `root`
    source: str | None = field(default=None, metadata={"internal": True})
    root: str | None = field(default=None, metadata={"internal": True})
    # the `--set KEY=VALUE` arguments applied, as (argument, dotted key): errors name them
    sets: list = field(default_factory=list, metadata={"internal": True})

    # ------------------------------------------------------------------ helpers
    def path(self, p: str) -> Path:
        """Resolve a path from the config against the project root."""
        q = Path(p)
        return q if q.is_absolute() or self.root is None else Path(self.root) / q

    @property
    def processed_dir(self) -> Path:
        return self.path(self.paths.processed_dir)

    @property
    def synthetic_dir(self) -> Path:
        return self.path(self.paths.synthetic_dir)

    @property
    def run_dir(self) -> Path:
        return self.path(self.paths.results_dir) / self.run_name

    @property
    def cache_dir(self) -> Path:
        return self.path(self.paths.cache_dir)

    @property
    def labels_dir(self) -> Path:
        """The label store's folder: `labels.store`, else the run's own `labels/`."""
        return self.path(self.labels.store) if self.labels.store else self.run_dir / "labels"

    # ------------------------------------------------------------------ the library's parameters
    # (imported when asked for: loading a config does not load numpy)
    def question_writing(self) -> QuestionWriting:
        """How synth writes and filters questions, as `lib/synth/questions.py` takes it."""
        from ..lib.synth.questions import QuestionWriting

        sc, uc = self.synth, self.synth.unanswerable
        return QuestionWriting(
            seed=self.seed,
            tasks=tuple(sc.tasks),
            sampling=sc.sampling,
            max_chunks=sc.max_chunks,
            n_fewshot=sc.n_fewshot,
            fewshot_sampling=sc.fewshot_sampling,
            min_question_words=sc.min_question_words,
            max_tokens=self.models.question_writer.max_tokens,
            reference_max_tokens=self.models.generator.max_tokens,
            unanswerable_kinds=tuple(uc.kinds),
            unanswerable_per_task=uc.per_task,
            subjects_file=str(self.path(uc.subjects)) if uc.subjects else None,
            filter_top_n=sc.filter_top_n,
            filter_retriever=sc.filter_retriever,
            checks=sc.checks.checks(),
        )

    def table_design(self) -> TableDesign:
        """Table 1's retrievers and top-k cut-offs, as `lib/judge/relevance.py` takes them."""
        from ..lib.judge.relevance import TableDesign

        g = self.grading
        return TableDesign(tuple(g.retrievers), tuple(g.top_k), self.seed, g.deep_questions)

    def answer_design(self) -> AnswerDesign:
        """The answer stage's settings and generation, as `lib/answer/answers.py` takes them."""
        from ..lib.answer.answers import AnswerDesign

        a = self.answer
        return AnswerDesign(
            seed=self.seed,
            n_wrong_values=tuple(a.n_wrong_values),
            negative_n_wrong=a.negative_n_wrong,
            wrong_sampling=a.wrong_sampling,
            negative_sampling=a.negative_draw,
            pipelines=tuple(a.pipelines),
            retrieve_k=a.retrieve_k,
            citations=a.citations,
            max_tokens=self.models.generator.max_tokens,
        )

    def run_setup(self) -> RunSetup:
        """What the setup table compares with the paper's (`lib/report/setup_table.py`)."""
        from ..lib.report.setup_table import RunSetup

        r, m = self.retrieval, self.models
        return RunSetup(
            corpus_dir=self.corpus.raw_dir,
            chunk_tokens=self.chunking.max_tokens,
            tokenizer=self.chunking.tokenizer,
            dense_model=r.dense.model,
            reranker_kind=r.reranker.kind,
            reranker_model=r.reranker.model,
            pool=r.pool,
            judge_model=m.judge.model,
            generator_model=m.generator.model,
            question_writer_model=m.question_writer.model,
            n_fewshot=self.synth.n_fewshot,
            fewshot_sampling=self.synth.fewshot_sampling,
            filter_retriever=self.synth.filter_retriever,
            filter_top_n=self.synth.filter_top_n,
            judge_prompt=self.grading.prompt,
            wrong_sampling=self.answer.wrong_sampling,
            negative_sampling=self.answer.negative_draw,
        )

    def power_plan(self) -> PowerPlan:
        """What the power table needs (`lib/report/power.py`): the questions Table 1 will have are
        grading.max_questions, else one per source chunk (synth.max_chunks); Table 2's are
        answer.max_questions, else Table 1's."""
        from ..lib.report.power import PowerPlan

        planned1 = self.grading.max_questions or self.synth.max_chunks or None
        return PowerPlan(
            run_dir=self.run_dir,
            root=self.root,
            retrievers=tuple(self.grading.retrievers),
            top_k=tuple(self.grading.top_k),
            planned_table1=planned1,
            planned_table2=self.answer.max_questions or planned1,
            setup=self.run_setup(),
            cluster=self.grading.cluster,
        )

    def to_dict(self) -> dict:
        d = dataclasses.asdict(self)
        d.pop("source", None)
        d.pop("root", None)
        d.pop("sets", None)
        return d

    def section_hash(self, *names: str) -> str:
        """A short, stable hash of the named config sections (used to decide if a stage is stale).
        Each section is converted on its own: `status` hashes sections for every stage."""
        payload = {n: _plain(_dig(self, n)) for n in names}
        if isinstance(payload.get("synth"), dict):
            # synth.enabled decides whether the stage runs, not what it writes (a run without it
            # reads the questions file, an input by its content): it is no input of any stage
            payload["synth"].pop("enabled", None)
        return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:16]


def at_neutral_default(cfg: Any, dotted: str) -> bool:
    """Whether the setting at `dotted` is a field marked `neutral_default` holding its default: it
    then does what the code did before it existed, and is no input of any stage (`stage_inputs`)."""
    head, _, name = dotted.rpartition(".")
    parent = _dig(cfg, head) if head else cfg
    if not (dataclasses.is_dataclass(parent) and not isinstance(parent, type)):
        return False
    f = next((f for f in dataclasses.fields(parent) if f.name == name), None)
    return f is not None and _at_neutral(parent, f)


def _at_neutral(obj: Any, f: dataclasses.Field) -> bool:
    """Whether field `f` of `obj` is marked `neutral_default` and holds its default."""
    return bool(f.metadata.get("neutral_default")) and getattr(obj, f.name) == _default(f)


def _dig(obj: Any, dotted: str) -> Any:
    """The value at a dotted key, through dataclass fields and dict keys."""
    for part in dotted.split("."):
        obj = getattr(obj, part) if dataclasses.is_dataclass(obj) else obj[part]
    return obj


def _default(f: dataclasses.Field) -> Any:
    if f.default is not dataclasses.MISSING:
        return f.default
    return f.default_factory() if f.default_factory is not dataclasses.MISSING else dataclasses.MISSING


def _plain(value: Any) -> Any:
    """`value` as `dataclasses.asdict` would hold it inside a whole config's dict, less every field
    marked `metadata={"neutral_default": True}` that holds its default: a setting added later whose
    default does what the code did before it, so adding it leaves every committed run's hash as it was."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value) if not _at_neutral(value, f)}
    if isinstance(value, (list, tuple)):
        return type(value)(_plain(v) for v in value)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value
