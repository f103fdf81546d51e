"""The verification report: what every stage did and why the answer's SQL was chosen."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from verifiedsql import report_html

# "distinguished": candidates disagreed and a dual-paradigm test (DPC) on a distinguishing database chose
Vote = Literal["unanimous", "majority", "distinguished", "unverified"]
# how far the answer can be trusted, from the evidence (``verifiedsql.stages.evidence``), lowest first
Confidence = Literal["unverified", "doubtful", "probable", "verified"]
CONFIDENCE_TIERS: tuple[Confidence, ...] = ("unverified", "doubtful", "probable", "verified")
EvidenceVerdict = Literal["for", "against", "neutral"]
CandidateStatus = Literal["ok", "error", "unsafe", "timeout"]
# where a candidate's SQL came from: greedy or sampled generation, the R3 review, a VET execution trace
CandidateOrigin = Literal["greedy", "sample", "review", "vet"]
MatchKind = Literal["exact", "case-insensitive", "prefix", "contains"]
# what a model call was for (``ChatRequest.purpose``), by stage: generation and refinement; verify's repair;
# PV-SQL's probes; schema linking (compress_schema); ReFoRCE's column exploration and its corrections; DPC's
# schema slice, distinguishing database and pandas solver; R3's reviewer professions, reviews and revisions;
# VET's steps, stop check, SQL reconstruction and restated question; the answer step's scope check (scope_check)
LLMPurpose = Literal[
    "generate", "refine", "repair", "probe", "link", "explore", "explore-fix", "slice", "mdd", "solver",
    "review-professions", "review", "review-revise", "vet-step", "vet-stop", "vet-sql", "vet-question", "scope",
]


@dataclass
class LLMCall:
    purpose: LLMPurpose
    model: str
    prompt_tokens: int
    completion_tokens: int
    seconds: float
    cached: bool = False


@dataclass
class ValueMatch:
    """A question literal found in a text column: ``value`` is how the database stores it."""

    table: str
    column: str
    value: str
    kind: MatchKind
    term: str


ProbeStatus = Literal["ok", "error", "unsafe", "timeout", "invalid"]
DPCStatus = Literal["unanimous", "decided", "fallback"]
SliceMethod = Literal["lineage", "model"]  # how DPC cut the schema slice: SQL column lineage, or the model
MDDMethod = Literal["deterministic", "model"]  # how the distinguishing database was built
ConsensusTrigger = Literal["tie", "all-failed"]
ProfessionsSource = Literal["model", "fallback"]
StopVerdict = Literal["YES", "NO", "unclear"]
ConsensusOutcome = Literal["resolved", "undecided", "failed"]


@dataclass
class Probe:
    """One exploratory query the model asked for (PV-SQL probing) and what it showed.

    ``sql`` is the query as run (LIMIT bounded); ``invalid`` means the reply was not the JSON asked for.
    """

    sql: str
    status: ProbeStatus
    error: str | None = None
    row_count: int | None = None
    preview: str = ""


@dataclass
class Findings:
    """What probing established: stored values for question terms (only values a probe actually returned)
    and the columns the model judged relevant (only columns that exist)."""

    value_mappings: dict[str, str] = field(default_factory=dict)
    relevant_columns: dict[str, list[str]] = field(default_factory=dict)
    dropped_mappings: dict[str, str] = field(default_factory=dict)  # claimed, but never seen in a probe


@dataclass
class DualParadigmTest:
    """What dual-paradigm selection (DPC) did: the two candidates it compared, the schema slice, the
    minimal distinguishing database (MDD), the independent pandas solution and the decision.

    ``status``: ``unanimous`` (one cluster, nothing to test), ``decided`` (the scores chose), or
    ``fallback`` (a step failed; the champion stands and ``reason`` says why)."""

    status: DPCStatus
    reason: str = ""
    champion: int | None = None  # candidate indexes of the two representatives
    challenger: int | None = None
    winner: int | None = None
    slice_tables: dict[str, list[str]] = field(default_factory=dict)
    slice_method: SliceMethod | None = None
    transpiled: bool = False  # Snowflake: the MDD ran on DuckDB after transpiling with sqlglot
    mdd_method: MDDMethod | None = None
    mdd_tries: int = 0
    mdd_tables: dict[str, list[list[Any]]] = field(default_factory=dict)
    champion_result: list[list[Any]] = field(default_factory=list)
    challenger_result: list[list[Any]] = field(default_factory=list)
    solver_code: str | None = None
    solver_result: list[list[Any]] = field(default_factory=list)
    solver_attempts: int = 0
    scores: dict[str, float] = field(default_factory=dict)  # "champion"/"challenger" -> BS-F1 vs solver
    votes: dict[str, int] = field(default_factory=dict)
    tokens: int = 0
    seconds: float = 0.0


ExplorationStatus = Literal["ok", "error", "unsafe", "timeout"]


@dataclass
class Exploration:
    """One column-exploration query of consensus enforcement, as run (LIMIT bounded), and its outcome.
    ``correction`` is 0 for the model's proposal and 1.. for its self-corrections after a failure."""

    sql: str
    status: ExplorationStatus
    rows: int | None = None
    error: str | None = None
    preview: str = ""
    correction: int = 0


@dataclass
class Consensus:
    """What consensus enforcement did when the vote tied or every candidate failed.

    ``trigger``: ``tie`` or ``all-failed``. ``rounds``: regeneration rounds after exploration (0 or 1).
    ``outcome``: ``resolved`` (the re-vote has a unique largest cluster), ``undecided`` (the tie remains:
    the dual-paradigm test settles it, see ``report.dpc``, and when it cannot the answer is unverified) or
    ``failed`` (no candidate ran in any round). ``first_round`` keeps the candidates of the first vote
    when the answer's candidates (``report.candidates``) are the regenerated ones."""

    trigger: ConsensusTrigger
    rounds: int = 0
    outcome: ConsensusOutcome = "undecided"
    reason: str = ""
    first_round: list[Candidate] = field(default_factory=list)


@dataclass
class Repair:
    """One repair of a candidate that ran but broke a requirement, and how the repaired SQL fared."""

    sql: str
    status: CandidateStatus
    error: str | None = None
    violations: list[str] = field(default_factory=list)
    row_count: int | None = None


LiteralOutcome = Literal["found", "repaired", "variant", "elsewhere", "absent", "unchecked"]


@dataclass
class LiteralCheck:
    """A string or date literal of a candidate's SQL, looked up in the column it is compared with
    (``check_literals``). ``outcome``: ``found`` as written; ``repaired`` (a case, whitespace or near variant
    is stored, and the SQL now compares with it); ``variant`` (one is stored, but the repaired SQL did not
    run); ``elsewhere`` (not in the column, but in a text column of a table linked to its table by a key);
    ``absent`` (in neither); ``unchecked`` (the lookup failed, or past the per-candidate limit)."""

    literal: str
    column: str  # table.column, as the schema names them
    outcome: LiteralOutcome
    detail: str = ""


@dataclass
class Certainty:
    """The model's own token log-probabilities over the SQL a candidate wrote (where the endpoint gives them):
    mean, lowest and sum over the SQL's tokens, the mean over the tokens of schema names and of literals (None
    where the SQL has none), and the mean entropy of the top alternatives."""

    tokens: int
    mean: float
    low: float
    total: float
    names: float | None
    literals: float | None
    entropy: float


@dataclass
class Candidate:
    """One generated SQL, how it fared, and which result cluster it landed in."""

    index: int
    origin: CandidateOrigin
    sql: str
    status: CandidateStatus = "ok"
    error: str | None = None
    attempts: list[str] = field(default_factory=list)  # SQL of every try before the final one
    row_count: int | None = None
    truncated: bool = False
    cluster: int | None = None
    violations: list[str] = field(default_factory=list)  # unmet requirements of the final SQL (verify)
    repairs: list[Repair] = field(default_factory=list)
    checks: list[str] = field(default_factory=list)  # checks the final SQL passed, e.g. parse, explain, run
    # schema_repair: what the deterministic repair changed, e.g. "T2.Population -> T1.Population (column of country)"
    fixes: list[str] = field(default_factory=list)
    literals: list[LiteralCheck] = field(default_factory=list)  # check_literals: each literal looked up
    certainty: Certainty | None = None  # the model's log-probabilities over the SQL it wrote, where given

    @property
    def literal_hints(self) -> tuple[str, ...]:
        """What the literal checks found against this SQL, one short line each (a literal that is stored in
        a linked table, not in the column compared with it), for a later prompt to carry."""
        return tuple(check.detail for check in self.literals if check.outcome == "elsewhere")


ScopeReply = Literal["yes", "no", "unclear", "failed"]


@dataclass
class ScopeCheck:
    """The scope check (``scope_check``): what the model said when asked whether the schema holds the data
    (``failed``: the call failed or ran out of time) and, after a NO, the question's content words and those
    that name nothing in the database (``stages/scope_terms.py``); ``ended``: the question ended in
    ``NoDataError``."""

    said: ScopeReply
    words: list[str] = field(default_factory=list)
    unmatched: list[str] = field(default_factory=list)
    complete: bool = True  # every stored value was read where a word was left (else the NO is not taken)
    ended: bool = False

    @property
    def unmatched_share(self) -> float:
        """The share of the question's content words that name nothing in the database (0 with no word)."""
        return len(self.unmatched) / len(self.words) if self.words else 0.0


ReviewVerdictKind = Literal["approve", "issues", "unclear", "unavailable"]


@dataclass
class ReviewVerdict:
    """One reviewer's verdict in one round of the R3 review."""

    reviewer: int
    profession: str
    verdict: ReviewVerdictKind  # "unclear": no verdict line; "unavailable": the call failed
    explanation: str = ""


@dataclass
class ReviewRound:
    """One round: the SQL reviewed, every verdict, the writer's rebuttal and revision, and how it ran."""

    number: int
    sql: str
    verdicts: list[ReviewVerdict] = field(default_factory=list)
    rebuttal: str = ""
    revision: str | None = None  # the writer's SQL when it differs from ``sql``
    status: CandidateStatus | None = None  # of the revision's read-only run
    error: str | None = None
    row_count: int | None = None


@dataclass
class Review:
    """The R3 review of the selected answer (option ``review``): reviewer professions, every round, the
    final SQL (always one that ran) and why the loop stopped. ``candidate`` is the index of the
    ``review`` candidate added to the pool, None when the review left the SQL as it was."""

    reviewed: int  # index of the candidate whose SQL was reviewed
    initial_sql: str
    professions: list[str] = field(default_factory=list)
    professions_source: ProfessionsSource = "model"
    rounds: list[ReviewRound] = field(default_factory=list)
    final_sql: str = ""
    stop: str = ""
    candidate: int | None = None

    @property
    def changed(self) -> bool:
        return self.final_sql != self.initial_sql


TraceOutcome = Literal["accepted", "rejected", "failed", "skipped"]
StepKind = Literal["aggregate", "join", "filter", "transform"]  # as read from a step's code (VET)


@dataclass
class TraceStep:
    """One pandas step of an execution trace (VET): the code finally run, its kind as read from the code,
    the rows before and after, the problem of each try that was turned down, and the stop check's answer."""

    number: int
    code: str = ""
    kind: StepKind | Literal[""] = ""  # "": not read (the step never produced code that ran)
    rows_in: int | None = None
    rows_out: int | None = None
    status: Literal["accepted", "failed"] = "failed"
    problems: list[str] = field(default_factory=list)
    sufficient: StopVerdict | None = None  # the stop check's reply


@dataclass
class Trace:
    """Verifiable execution tracing of the question (option ``vet``): the candidate column set, the steps,
    the SQL reconstructed from them, both consistency checks and the outcome. ``candidate`` is the index of
    the ``vet`` candidate added to the pool when the SQL was accepted."""

    columns: dict[str, list[str]] = field(default_factory=dict)  # the candidate column set, by table
    truncated: list[str] = field(default_factory=list)  # tables the trace saw only part of
    steps: list[TraceStep] = field(default_factory=list)
    stop: str = ""
    sql: str | None = None
    sql_problems: list[str] = field(default_factory=list)  # why each earlier reconstruction was turned down
    consistent: bool = False  # the SQL's result equals the last step's output
    reconstructed_question: str | None = None
    similarity: float | None = None
    similarity_check: str = ""  # "passed", "failed" or "not run: <why>"
    outcome: TraceOutcome = "failed"
    reason: str = ""
    candidate: int | None = None


@dataclass
class Cluster:
    index: int
    members: list[int]
    row_count: int


@dataclass
class Evidence:
    """One check on the chosen answer and what it says: ``for`` or ``against`` the answer, or ``neutral``."""

    check: str
    verdict: EvidenceVerdict
    detail: str


@dataclass
class VerificationReport:
    """Attached to every answer as ``result.verification``."""

    question: str
    dialect: str
    sql: str | None = None
    confidence: Confidence = "unverified"  # the tier the evidence supports
    # the calibrated chance that the answer is right (stages/calibration.py); None where the model gave no token
    # log-probabilities or has no calibration: then the tier follows the vote-based rule (``confidence_from``)
    probability: float | None = None
    confidence_from: str = "vote"  # "vote" (the rule over the vote and evidence) or "calibration"
    # what the calibration read: the answer's features, and the greedy candidate's alone (when it ran)
    features: dict[str, float] = field(default_factory=dict)
    first_features: dict[str, float] = field(default_factory=dict)
    reason: str = ""
    vote: Vote = "unverified"  # what the candidates' vote said
    evidence: list[Evidence] = field(default_factory=list)
    candidates: list[Candidate] = field(default_factory=list)
    clusters: list[Cluster] = field(default_factory=list)
    llm_calls: list[LLMCall] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    truncated: bool = False
    # the question's time budget ran out: the answer (if any) is the best candidate that ran, "unverified"
    timed_out: bool = False
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # about the connection's rights (verifiedsql.guard.privileges)
    value_matches: list[ValueMatch] = field(default_factory=list)  # grounding
    constraints: list[str] = field(default_factory=list)  # what the question requires (verify)
    probes: list[Probe] = field(default_factory=list)  # model probes, in order (probe)
    findings: Findings = field(default_factory=Findings)
    dpc: DualParadigmTest | None = None  # dual-paradigm selection (dpc)
    review: Review | None = None  # R3 review of the selected answer (review)
    exploration: list[Exploration] = field(default_factory=list)  # column exploration (consensus)
    consensus: Consensus | None = None  # consensus enforcement (consensus)
    trace: Trace | None = None  # verifiable execution tracing (vet)
    scope: ScopeCheck | None = None  # the scope check, when it was asked (scope_check)
    # compress_schema: tokens_before, tokens_after, ratio (before/after), groups, tables_kept, tables_total, steps
    schema_compression: dict[str, Any] | None = None

    @property
    def verified(self) -> bool:
        """The top tier: the evidence supports the answer without reservation."""
        return self.confidence == "verified"

    def at_least(self, tier: Confidence) -> bool:
        """Whether the answer's tier is ``tier`` or higher."""
        return CONFIDENCE_TIERS.index(self.confidence) >= CONFIDENCE_TIERS.index(tier)

    @property
    def prompt_tokens(self) -> int:
        return sum(c.prompt_tokens for c in self.llm_calls)

    @property
    def completion_tokens(self) -> int:
        return sum(c.completion_tokens for c in self.llm_calls)

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["total_tokens"] = self.total_tokens
        return data

    def to_html(self) -> str:
        """The whole report as one self-contained HTML page (inline CSS; no scripts, nothing fetched)."""
        return report_html.render_page(self)

    def _repr_html_(self) -> str:
        """How a notebook shows the report: the same page as a fragment, its style scoped to it."""
        return report_html.render_fragment(self)

    def summary(self) -> str:
        """A few human-readable lines: the chosen SQL, the vote and the cost."""
        ok = [c for c in self.candidates if c.status == "ok"]
        chosen = next((c for c in self.clusters if self.sql and any(
            self.candidates[m].sql == self.sql for m in c.members)), None)
        votes = f"{len(chosen.members)}/{len(self.candidates)}" if chosen else f"0/{len(self.candidates)}"
        lines = [
            f"confidence: {self.confidence}" + (f" (probability {self.probability:.2f})"
                                                if self.probability is not None else "")
            + f"; vote: {self.vote}" + (f" ({self.reason})" if self.reason else ""),
            f"sql: {self.sql}",
            f"candidates: {len(self.candidates)} ({len(ok)} ran), clusters: {len(self.clusters)}, "
            f"votes for the answer: {votes}",
            f"llm: {len(self.llm_calls)} calls, {self.total_tokens} tokens; "
            f"time: {sum(self.timings.values()):.2f}s",
        ]
        if self.truncated:
            lines.append("rows: truncated at the row cap (row_cap or max_result_bytes)")
        if self.timed_out:
            lines.append("time: the question's time budget ran out; answered with the best candidate that ran")
        lines.extend(f"value: {m.table}.{m.column} = {m.value!r} ({m.kind})" for m in self.value_matches)
        lines.extend(f"probe: {p.sql} -> {p.status}" + (f" ({p.row_count} rows)" if p.row_count is not None else "")
                     for p in self.probes)
        lines.extend(f"finding: {term!r} is stored as {value!r}"
                     for term, value in self.findings.value_mappings.items())
        lines.extend(f"constraint: {c}" for c in self.constraints)
        lines.extend(f"repair: candidate {c.index}: " + "; ".join(c.fixes) for c in self.candidates if c.fixes)
        if self.dpc is not None:
            lines.append(f"dpc: {self.dpc.status} ({self.dpc.reason})")
        if self.review is not None:
            r = self.review
            lines.append(f"review: {len(r.professions)} reviewers, {len(r.rounds)} round(s), "
                         f"{'revised' if r.changed else 'unchanged'}; {r.stop}")
        if self.consensus is not None:
            ran = sum(e.status == "ok" for e in self.exploration)
            lines.append(f"consensus: {self.consensus.trigger} -> {self.consensus.outcome} after "
                         f"{self.consensus.rounds} round(s), {len(self.exploration)} exploration queries "
                         f"({ran} ran) ({self.consensus.reason})")
        if self.trace is not None:
            t = self.trace
            accepted = sum(step.status == "accepted" for step in t.steps)
            lines.append(f"trace: {accepted} step(s) over {len(t.columns)} table(s) -> {t.outcome} ({t.reason})")
        if self.schema_compression is not None:
            s = self.schema_compression
            lines.append(f"schema: {s['tokens_before']} -> {s['tokens_after']} tokens ({s['ratio']}x smaller), "
                         f"{s['tables_kept']}/{s['tables_total']} tables kept; {', '.join(s['steps'])}")
        repairs = sum(len(c.repairs) for c in self.candidates)
        if repairs:
            lines.append(f"repairs: {repairs}")
        lines.extend(f"note: {n}" for n in self.notes)
        lines.extend(f"warning: {w}" for w in self.warnings)
        return "\n".join(lines)
