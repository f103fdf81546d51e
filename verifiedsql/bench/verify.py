"""``verifiedsql bench verify``: every record/replay cache under ``benchmarks/runs/`` replayed with no model, and
each figure that the docs' benchmark pages (``docs/benchmarks/``) state checked against what the replay prints.

A run's page holds its replay command (the ``--replay`` command whose ``--cache`` is the committed cache); that
command runs, on a copy of the cache with ``--out`` in a scratch folder, and the figures it prints must equal
``EXPECTED``, which must in turn be what the page says: EX, Pass@N (and questions, where the table has that
column) in the page's table row of each strategy, tokens/q somewhere on the page. The pages that compare runs
(repair and tiers, stages, adaptive sampling, the scope check) are replayed from the same caches with the
strategies their own commands name, and their tables must equal what ``bench`` prints for the replay. A cache
that misses a recorded question loses that question (``ReplayMissError`` counts as an error, left out of the
figures), so the question counts catch it. Replays run side by side (``--jobs``) and are shared by the checks
that read them. It needs a checkout (the docs and ``benchmarks/runs``), the Spider dev data, and for the
PostgreSQL run a server (``--pg-url``, else a throw-away one, ``pgserver``)."""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor, as_completed
from contextlib import closing, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .data import DEFAULT_DATA_DIR

# cache folder under benchmarks/runs -> strategy -> (questions, EX %, Pass@N %, tokens/q), as the replay prints them
EXPECTED: dict[str, dict[str, tuple[int, str, str, int]]] = {
    "spider-sqlite-0.5b-n200": {
        "greedy": (200, "47.5", "47.5", 1297),
        "self-consistency": (200, "51.0", "55.5", 6906),
    },
    "spider-sqlite-1.5b-n200": {  # the first 120 questions; the rest miss the cache
        "greedy": (120, "52.5", "52.5", 1289),
        "self-consistency": (120, "60.8", "70.0", 6497),
    },
    "spider-sqlite-1.5b-n120": {  # the seeded 120-question sample, recorded for the 1.5B scope check
        "self-consistency+repair": (120, "66.7", "77.5", 5186),
        "self-consistency+repair+literals": (120, "61.7", "76.7", 5186),
        "default": (120, "63.3", "76.7", 5186),
        "default+scope": (120, "63.3", "76.7", 5450),
    },
    "spider-duckdb-0.5b-n200": {  # the first 64 questions
        "self-consistency": (64, "50.0", "53.1", 8029),
        "self-consistency+repair": (64, "60.9", "70.3", 6066),
        "default": (64, "59.4", "70.3", 6066),
        "default+scope": (64, "59.4", "70.3", 6418),
    },
    "spider-postgresql-0.5b-n200": {  # all 189 questions with a dump
        "self-consistency+repair": (189, "52.9", "62.4", 5759),
        "default": (189, "54.0", "61.9", 5759),
        "greedy+repair": (189, "52.9", "52.9", 1066),
        "default+scope": (189, "54.0", "61.9", 6125),
    },
    "spider-sqlite-0.5b-dpc": {
        "self-consistency": (200, "51.0", "55.5", 6906),
        "+dpc": (200, "51.5", "55.5", 7163),
    },
    "spider-sqlite-0.5b-probe": {  # the first 63 questions
        "self-consistency": (63, "58.7", "65.1", 7589),
        "+verify": (63, "58.7", "65.1", 7858),
        "+probe": (63, "60.3", "60.3", 10360),
        "+probe+verify": (63, "60.3", "60.3", 10427),
    },
    "spider-sqlite-0.5b-issue7": {  # the first 61 questions
        "greedy": (61, "54.1", "54.1", 1415),
        "self-consistency": (61, "60.7", "65.6", 7663),
        "+compress": (61, "60.7", "65.6", 7663),
        "+consensus": (61, "60.7", "63.9", 9430),
        "+review": (61, "60.7", "65.6", 12720),
        "review-only": (61, "49.2", "54.1", 4871),
        "+compress-250": (61, "49.2", "59.0", 3401),
        "+vet": (61, "60.7", "65.6", 12682),
        "vet-only": (61, "52.5", "54.1", 6433),
    },
}

# Where the recorded prompts hold a sandboxed pandas traceback, its frames name the recording checkout's virtual
# environment (/work/main/.venv). The cache key masks that path and the traceback is cut with the path counted at
# a fixed width (``llm.portable``), so the prompts hash alike in any checkout, except where a recorded cut fell
# inside the path itself: two of the 0.5B DPC run's solver requests begin with the path's last characters
# ("...ork/main/.venv/lib/..."), which only a checkout whose path ends the same way reproduces. There the check
# asks that nearly all questions replay, and the figures only where every question did.
RECORDED_PREFIX = "/work/main/.venv"
PATH_DEPENDENT = {"spider-sqlite-0.5b-dpc"}

PRINTED = re.compile(r"^(\S+)\s+n=(\d+)\s+EX=\s*([\d.]+)%\s+Pass@N=\s*([\d.]+)%.*\btokens/q=(\d+)\b", re.MULTILINE)
SCOPE_PRINTED = re.compile(r"^(\S+)\s+n=(\d+)\s+(.*); verified: (\d+)$", re.MULTILINE)
OUTCOMES = ("no-data", "no-answer", "unverified", "doubtful", "probable", "verified")

# the docs' pages under docs/benchmarks/
REPAIR_PAGE, STAGES_PAGE, SPEED_PAGE, SCOPE_PAGE = "repair-and-tiers.md", "stages.md", "speed.md", "scope-sqlite.md"

# schema repair, replayed from the 0.5B and 1.5B pools: model -> (cache folder, the label in the docs' table)
REPAIR_STRATEGIES = ("greedy,self-consistency,greedy+repair,self-consistency+repair,greedy+repair+literals,"
                     "self-consistency+repair+literals")
REPAIR_RUNS = {"0.5b": ("spider-sqlite-0.5b-n200", "0.5B"), "1.5b": ("spider-sqlite-1.5b-n200", "1.5B")}
FACTS_STRATEGIES = "greedy+repair,greedy+repair+facts,self-consistency+repair,self-consistency+repair+facts"
ADAPTIVE_STRATEGIES = "self-consistency,self-consistency+adaptive,default,default-adaptive"
# questions the data cannot answer: cache folder -> model, label in the docs' table
SCOPE_RUNS = {"scope-sqlite-0.5b": ("0.5b", "0.5B"), "scope-sqlite-1.5b": ("1.5b", "1.5B")}
UNLIKE = "unlike-spider-0.5b"
# the analytics sets (bench analytics): cache folder -> model, engine, strategies, the words above its table, the
# question set's folder under benchmarks/
ANALYTICS_PAGE = "analytics.md"
_ANALYTICS_STRATEGIES = "default-constraints,default"
_ENGINE_NAMES = {"sqlite": "SQLite", "postgresql": "PostgreSQL"}
# the later date question sets (benchmarks/analytics-heldout<suffix>): suffix, ordinal, engines recorded
_LATER_SETS = (("", "first", ("sqlite", "postgresql")), ("-2", "second", ("sqlite", "postgresql")),
               ("-3", "third", ("sqlite", "postgresql")), ("-4", "fourth", ("sqlite", "postgresql")),
               ("-5", "fifth", ("sqlite", "postgresql")), ("-6", "sixth", ("sqlite",)),
               ("-7", "seventh", ("sqlite", "postgresql")), ("-8", "eighth", ("sqlite", "postgresql")),
               ("-9", "ninth", ("sqlite", "postgresql")), ("-10", "tenth", ("sqlite", "postgresql")))
ANALYTICS_RUNS = {
    "analytics-sqlite-1.5b": ("1.5b", "sqlite", _ANALYTICS_STRATEGIES, "On SQLite, the 1.5B model", "analytics"),
    "analytics-postgresql-1.5b": ("1.5b", "postgresql", _ANALYTICS_STRATEGIES, "On PostgreSQL, the 1.5B model",
                                  "analytics"),
    **{f"analytics-heldout{suffix}-{engine}-1.5b": (
        "1.5b", engine, _ANALYTICS_STRATEGIES, f"The {ordinal} set of later date questions on {_ENGINE_NAMES[engine]}",
        f"analytics-heldout{suffix}") for suffix, ordinal, engines in _LATER_SETS for engine in engines},
}

# which stages are on by default (bench stages): run -> (model, sample size, cache folder, page, the page's
# lead-in to its table, the strategies the table needs)
STAGES_RUNS = {
    "1.5b": ("1.5b", 200, "spider-sqlite-1.5b-n200", STAGES_PAGE, "On the default 1.5B model",
             "self-consistency,self-consistency+repair,self-consistency+repair+literals,default,default-adaptive,"
             "default-constraints,default+scope,default+facts,default+verify,default+dpc,default+consensus,"
             "default+compress"),
    "0.5b": ("0.5b", 200, "spider-sqlite-0.5b-n200", STAGES_PAGE, "On 0.5B (200 questions",
             "self-consistency,self-consistency+repair,self-consistency+repair+literals,self-consistency+repair+facts,"
             "default,default-adaptive,default-constraints,default+scope"),
    "1.5b-vet": ("1.5b", 200, "spider-sqlite-1.5b-n200", STAGES_PAGE, "VET (`vet`, on top of `default`) was recorded",
                 "default,default+vet"),  # 49 of the first 50 questions: the rest miss the cache and are left out
    "1.5b-probe": ("1.5b", 200, "spider-sqlite-1.5b-n200", STAGES_PAGE, "`probe` (on top of `default`) was recorded",
                   "default,default+probe"),  # the first questions only: the rest miss the cache and are left out
    "1.5b-review": ("1.5b", 200, "spider-sqlite-1.5b-n200", STAGES_PAGE, "`review` (on top of `default`) was recorded",
                    "default,default+review"),  # the first 6 questions only, likewise
    "1.5b-n120": ("1.5b", 120, "spider-sqlite-1.5b-n120", "spider-sqlite-1.5b-n120.md",
                  "`bench stages` on the same records",
                  "self-consistency+repair,self-consistency+repair+literals,default,default+scope"),
}
# confidence tiers (bench tiers) on the stages replays: run of STAGES_RUNS -> (the strategy rated, the page's words
# just above its tier table)
TIER_TABLES = {
    "0.5b": ("self-consistency+repair", "(`verifiedsql bench tiers`; 0.5B, self-consistency+repair, 100 held-out "
                                        "questions):"),
    "1.5b": ("self-consistency+repair+literals", "five candidates in agreement:"),
}
# the calibrated confidence (bench calibrate), on the default pipeline's replay: model -> (cache folder, the
# folders under it whose caches are merged into the copy, the seeds of its rows). The 1.5B's questions 121-200
# were recorded (greedy, self-consistency, default) into a folder of their own, so that the run's other tables,
# whose optional stages were recorded on the first 120 only, keep their questions.
CALIBRATION_PAGE = "calibration.md"
CALIBRATION_RUNS = {"0.5b": ("spider-sqlite-0.5b-n200", (), (0, 1, 2)),
                    "1.5b": ("spider-sqlite-1.5b-n200", ("questions-121-200",), (0, 1, 2))}
# the same on another engine, from the run's documented replay: cache folder -> (the engine's name in the rows'
# model column, the model's size as the page names it, the seeds of its rows)
CALIBRATION_OTHER_ENGINES = {"spider-postgresql-0.5b-n200": ("PostgreSQL", "0.5B", (0, 1, 2))}
# cache folder of EXPECTED -> (the strategy rated, the words above its tier table on the run's page)
OTHER_ENGINE_TIERS = {"spider-postgresql-0.5b-n200": ("default", "The tiers of `default` on PostgreSQL")}
# cache folder of EXPECTED -> (the strategy rated, the words above its table): the library's tier rule as it is
# (fitted on SQLite), over every question of the run, for a run too small to split into halves of its own
LIBRARY_RULE_TIERS = {
    "spider-duckdb-0.5b-n200": ("default",
                                "With the library's tier rule as it is (fitted on SQLite), on all 64 questions:"),
}


class Mismatch(AssertionError):
    """A figure the docs state that the replay does not print (or the other way round)."""


class NotComparable(Exception):
    """The replay cannot reproduce the figures in this checkout (``PATH_DEPENDENT``); not a failure."""


def expect(condition: object, message: object) -> None:
    if not condition:
        raise Mismatch(str(message))


# ------------------------------------------------------------------------------------------- the docs' text


@dataclass(frozen=True)
class Docs:
    """The benchmark pages of a checkout."""

    root: Path

    @property
    def folder(self) -> Path:
        return self.root / "docs" / "benchmarks"

    def page(self, name: str) -> str:
        return (self.folder / name).read_text("utf-8")

    def pages(self) -> dict[str, str]:
        return {path.name: path.read_text("utf-8") for path in sorted(self.folder.glob("*.md"))}

    def replay_commands(self) -> dict[str, tuple[str, list[str]]]:
        """cache folder -> (page, the arguments after ``verifiedsql`` of its ``--replay`` command)."""
        commands: dict[str, tuple[str, list[str]]] = {}
        for page, text in self.pages().items():
            for block in re.findall(r"```bash\n(.*?)```", text, re.DOTALL):
                for line in re.sub(r"\\\n\s*", " ", block).splitlines():
                    words = shlex.split(line, comments=True)
                    if "bench" not in words or "--replay" not in words:
                        continue
                    cache = Path(words[words.index("--cache") + 1])
                    if cache.parent.parent != Path("benchmarks/runs"):  # a replay from a copy: checked on its own
                        continue
                    expect(cache.parent.name not in commands, f"two replay commands for {cache}")
                    commands[cache.parent.name] = (page, words[words.index("bench"):])
        return commands

    def run_section(self, name: str) -> str:
        """From the heading above the first mention of the run's folder on its page to the end of the code block
        holding its replay command."""
        page, _ = self.replay_commands()[name]
        text = self.page(page)
        headings, offset, fenced = [], 0, False
        for line in text.splitlines(keepends=True):
            fenced ^= line.startswith("```")
            if not fenced and line.startswith("#"):
                headings.append(offset)
            offset += len(line)
        first = text.index(f"benchmarks/runs/{name}/")
        start = max(h for h in headings if h < first)
        command = text.index(f"--cache benchmarks/runs/{name}/llm-cache.sqlite")
        return text[start: text.index("```", command)]

    def after(self, page: str, heading: str, until: str | None = None) -> str:
        """The text of ``page`` after ``heading``, up to ``until`` when given."""
        text = self.page(page)
        expect(heading in text, f"docs/benchmarks/{page} has no {heading!r}")
        rest = text.split(heading, 1)[1]
        return rest.split(until, 1)[0] if until else rest


def table_row(section: str, strategy: str) -> dict[str, str]:
    """The first table row of ``strategy`` in the section, keyed by its table's header."""
    header: list[str] = []
    for line in section.splitlines():
        if not line.startswith("|"):
            header = []
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if not header:
            header = cells
        elif cells[0] == strategy:
            return dict(zip(header, cells))
    raise Mismatch(f"no table row for {strategy!r}")


def table_after(text: str, lead_in: str) -> str:
    """The table just below the paragraph holding ``lead_in``."""
    expect(lead_in in text, f"the docs lost the words {lead_in!r}")
    return text.split(lead_in, 1)[1].split("\n\n", 2)[1]


def tier_line(tier: str, answers: int, right: int, precision: float | None, coverage: float) -> str:
    """One row of the docs' tier tables."""
    shown = "-" if precision is None else f"{precision:.1%}"
    return f"| {tier} | {answers} | {right} | {shown} | {coverage:.1%} |"


def tier_rows_after(text: str, lead_in: str) -> list[str]:
    """The rows of the tier table just below ``lead_in`` (header and rule left out)."""
    return [line for line in table_after(text, lead_in).splitlines()
            if line.startswith("| ") and not line.startswith("| tier |")]


def printed_figures(stdout: str) -> dict[str, tuple[int, str, str, int]]:
    """strategy -> (questions, EX, Pass@N, tokens/q) as ``bench spider`` prints them."""
    return {m[0]: (int(m[1]), m[2], m[3], int(m[4])) for m in PRINTED.findall(stdout)}


def docs_state(docs: Docs, name: str) -> None:
    """The run's page states ``EXPECTED[name]``: EX and Pass@N (and questions) in each strategy's table row,
    tokens/q somewhere in the run's section."""
    section = docs.run_section(name)
    for strategy, (questions, ex, pass_at_n, tokens) in EXPECTED[name].items():
        row = table_row(section, strategy)
        expect((row.get("EX"), row.get("Pass@N")) == (f"{ex}%", f"{pass_at_n}%"), (name, strategy, row))
        if "questions" in row:
            expect(row["questions"] == str(questions), (name, strategy, row))
        number = rf"(?<![\d.])(?<!\d,){tokens:,}(?![.,]?\d)"  # 7,072 but not 17,072 or 7,0725
        expect(re.search(number, section), f"{name}: {strategy}'s {tokens:,} tokens/q is not on its page")


def replayed_runs_match(docs: Docs, runs: Path) -> None:
    """Every committed cache has a replay command on a page (or a check of its own), and no page replays a cache
    that is not committed."""
    spider = sorted(p.parent.name for p in runs.glob("spider-*/llm-cache.sqlite"))
    expect(sorted(docs.replay_commands()) == sorted(EXPECTED) == spider,
           (sorted(docs.replay_commands()), sorted(EXPECTED), spider))
    others = sorted(p.parent.name for p in runs.glob("*/llm-cache.sqlite") if not p.parent.name.startswith("spider-"))
    expect(others == sorted([*SCOPE_RUNS, UNLIKE, *ANALYTICS_RUNS]), others)


# ----------------------------------------------------------------------------------------------- replays


@dataclass
class Replay:
    stdout: str
    out: Path  # the output folder

    def records(self) -> Path:
        return next(self.out.glob("*.jsonl"))


@dataclass
class Replays:
    """The replays the checks read, each run once (in the thread of the first check that asks for it) and shared."""

    root: Path
    data: Path
    scratch: Path
    pg_url: Callable[[], str]
    _done: dict[tuple, Any] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def _once(self, key: tuple, make: Callable[[], Replay]) -> Replay:
        with self._lock:
            entry = self._done.get(key)
            if entry is None:
                entry = self._done[key] = {"event": threading.Event(), "mine": True}
                mine = True
            else:
                mine = False
        if mine:
            try:
                entry["value"] = make()
            except BaseException as error:  # the checks that share it fail with the same error
                entry["error"] = error
            finally:
                entry["event"].set()
        entry["event"].wait()
        if "error" in entry:
            raise entry["error"]
        replay: Replay = entry["value"]
        return replay

    def _folder(self, label: str) -> Path:
        return Path(tempfile.mkdtemp(prefix=f"{label}-", dir=self.scratch))

    def _copy_cache(self, name: str, folder: Path, later: tuple[str, ...] = ()) -> Path:
        """A copy of the committed cache: a replay opens it in WAL mode and must not touch the committed file.
        The caches of the ``later`` folders under the run's (questions recorded apart) are merged into the copy."""
        cache = folder / "llm-cache.sqlite"
        run = self.root / "benchmarks" / "runs" / name
        shutil.copy(run / "llm-cache.sqlite", cache)
        if not later:
            return cache
        with closing(sqlite3.connect(cache)) as conn, conn:
            for part in later:
                conn.execute("ATTACH DATABASE ? AS later", (str(run / part / "llm-cache.sqlite"),))
                conn.execute("INSERT OR IGNORE INTO responses SELECT * FROM later.responses")
                conn.commit()
                conn.execute("DETACH DATABASE later")
        return cache

    def _run(self, argv: list[str], cwd: Path) -> str:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("VERIFIEDSQL_LLM_", "OPENAI_"))}
        env.pop("VERIFIEDSQL_LOCAL_MODEL", None)
        done = subprocess.run([sys.executable, *argv], cwd=cwd, env=env, capture_output=True, text=True)
        expect(done.returncode == 0, f"{shlex.join(argv)} exited with {done.returncode}:\n{done.stderr[-3000:]}")
        return done.stdout

    def documented(self, docs: Docs, name: str) -> Replay:
        """The run's own replay command from its page."""
        def make() -> Replay:
            _, args = docs.replay_commands()[name]
            args = list(args)
            if "--pg-url" in args:  # the page names a server of its own; the replay loads the dumps into ours
                args[args.index("--pg-url") + 1] = self.pg_url()
            folder = self._folder(name)
            args[args.index("--cache") + 1] = str(self._copy_cache(name, folder))
            args[args.index("--out") + 1] = str(folder / "results")
            stdout = self._run(["-m", "verifiedsql.cli", *args, "--data", str(self.data), "--quiet"], folder)
            return Replay(stdout, folder / "results")
        return self._once(("documented", name), make)

    def spider(self, name: str, model: str, strategies: str, n: int = 200, later: tuple[str, ...] = ()) -> Replay:
        """``bench spider`` on SQLite, replayed from a copy of ``benchmarks/runs/<name>``'s cache (and its
        ``later`` folders')."""
        def make() -> Replay:
            folder = self._folder(name)
            cache = self._copy_cache(name, folder, later)
            stdout = self._run(["-m", "verifiedsql.cli", "bench", "spider", "-n", str(n), "--model", model,
                                "--replay", "--cache", str(cache), "--strategies", strategies,
                                "--out", str(folder / "out"), "--data", str(self.data), "--quiet"], folder)
            return Replay(stdout, folder / "out")
        return self._once(("spider", name, model, strategies, n, later), make)

    def scope(self, name: str, strategies: str | None = None) -> Replay:
        """``bench scope`` replayed from a copy of ``benchmarks/runs/<name>``'s cache."""
        def make() -> Replay:
            model, _ = SCOPE_RUNS[name]
            folder = self._folder(name)
            cache = self._copy_cache(name, folder)
            stdout = self._run(["-m", "verifiedsql.cli", "bench", "scope", "--model", model, "--replay",
                                "--cache", str(cache), "--out", str(folder / "out"), "--data", str(self.data),
                                "--quiet", "--questions", str(self.root / "benchmarks" / "out_of_scope.json"),
                                *(["--strategies", strategies] if strategies else [])], folder)
            return Replay(stdout, folder / "out")
        return self._once(("scope", name, strategies), make)

    def analytics(self, name: str) -> Replay:
        """``bench analytics`` replayed from a copy of ``benchmarks/runs/<name>``'s cache (questions not recorded
        miss the cache and are left out of the figures)."""
        def make() -> Replay:
            model, engine, strategies, _, question_set = ANALYTICS_RUNS[name]
            folder = self._folder(name)
            cache = self._copy_cache(name, folder)
            stdout = self._run(["-m", "verifiedsql.cli", "bench", "analytics", "--model", model, "--engine", engine,
                                "--replay", "--cache", str(cache), "--out", str(folder / "out"),
                                "--strategies", strategies, "--set", str(self.root / "benchmarks" / question_set),
                                "--quiet", *(["--pg-url", self.pg_url()] if engine == "postgresql" else [])], folder)
            return Replay(stdout, folder / "out")
        return self._once(("analytics", name), make)

    def unlike(self) -> Replay:
        """``benchmarks/unlike_spider.py`` replayed from a copy of its cache."""
        def make() -> Replay:
            folder = self._folder(UNLIKE)
            cache = self._copy_cache(UNLIKE, folder)
            stdout = self._run([str(self.root / "benchmarks" / "unlike_spider.py"), "--model", "0.5b",
                                "--cache", str(cache), "--replay"], folder)
            return Replay(stdout, folder)
        return self._once(("unlike",), make)

    def stages(self, run: str) -> Replay:
        model, n, folder, _, _, strategies = STAGES_RUNS[run]
        return self.spider(folder, model, strategies, n)


def load_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]


# ------------------------------------------------------------------------------------------------ checks


@dataclass(frozen=True)
class Check:
    name: str
    run: Callable[[Docs, Replays], None]
    cost: int = 1  # the longest first: the replays they start are the slowest


def check_documented_run(name: str) -> Callable[[Docs, Replays], None]:
    def run(docs: Docs, replays: Replays) -> None:
        docs_state(docs, name)
        printed = printed_figures(replays.documented(docs, name).stdout)
        expected = EXPECTED[name]
        every_question = all(printed.get(s, (None,))[0] == figures[0] for s, figures in expected.items())
        if name in PATH_DEPENDENT and not every_question and not sys.prefix.endswith(RECORDED_PREFIX[1:]):
            expect(printed.keys() == expected.keys(), printed)
            shortest = min(questions for questions, *_ in printed.values())
            expect(shortest >= 0.9 * min(questions for questions, *_ in expected.values()), printed)
            raise NotComparable(f"recorded under another virtual environment path ({RECORDED_PREFIX}); "
                                f"{shortest} questions replayed")
        expect(printed == expected, f"printed {printed}, expected {expected}")
    return run


def check_repair_table(model: str) -> Callable[[Docs, Replays], None]:
    def run(docs: Docs, replays: Replays) -> None:
        folder, label = REPAIR_RUNS[model]
        printed = {s: figures[:3] for s, figures in printed_figures(replays.spider(folder, model, REPAIR_STRATEGIES)
                                                                    .stdout).items()}
        rows = re.findall(rf"^\| {label}, (\d+) \| ([\w+-]+) \| ([\d.]+)% \| ([\d.]+)% \|", docs.page(REPAIR_PAGE),
                          re.MULTILINE)
        stated = {strategy: (int(n), ex, pass_at_n) for n, strategy, ex, pass_at_n in rows}
        expect(stated and stated == printed, (stated, printed))
    return run


def check_scope_table(name: str) -> Callable[[Docs, Replays], None]:
    def run(docs: Docs, replays: Replays) -> None:
        _, label = SCOPE_RUNS[name]
        printed = {}
        for strategy, questions, counts, _ in SCOPE_PRINTED.findall(replays.scope(name).stdout):
            found = dict(part.rsplit(" ", 1) for part in counts.split(", ") if part)
            printed[strategy] = (questions, *(found.get(outcome, "0") for outcome in OUTCOMES))
        stated = {row[0]: tuple(row[1:]) for row in re.findall(
            rf"^\| {label} \| ([\w+-]+) \| (\d+) \| (\d+) \| (\d+) \| (\d+) \| (\d+) \| (\d+) \| (\d+) \|$",
            docs.page(SCOPE_PAGE), re.MULTILINE)}
        expect(printed and stated == printed, (stated, printed))
    return run


def check_facts_table(docs: Docs, replays: Replays) -> None:
    stdout = replays.spider("spider-sqlite-0.5b-n200", "0.5b", FACTS_STRATEGIES).stdout
    printed = {s: figures[:3] for s, figures in printed_figures(stdout).items()}
    section = docs.after("spider-sqlite-0.5b-n200.md", "## Schema facts in the refinement prompt", "```")
    rows = re.findall(r"^\| ([\w+-]+) \| (\d+) \| ([\d.]+)% \| ([\d.]+)% \|", section, re.MULTILINE)
    stated = {strategy: (int(n), ex, pass_at_n) for strategy, n, ex, pass_at_n in rows}
    expect(stated and stated == printed, (stated, printed))


def check_adaptive_table(model: str) -> Callable[[Docs, Replays], None]:
    def run(docs: Docs, replays: Replays) -> None:
        folder, label = REPAIR_RUNS[model]
        replay = replays.spider(folder, model, ADAPTIVE_STRATEGIES)
        calls: dict[str, list[int]] = {}
        for record in load_jsonl(replay.records()):
            if record["candidates"]:  # questions past the recorded ones miss the cache and are left out
                calls.setdefault(record["strategy"], []).append(record["llm_calls"])
        printed = {s: (n, ex, pass_at_n, f"{sum(calls[s]) / len(calls[s]):.2f}", f"{tokens:,}")
                   for s, (n, ex, pass_at_n, tokens) in printed_figures(replay.stdout).items()}
        section = docs.after(SPEED_PAGE, "## Adaptive sampling (`adaptive`)", "```")
        rows = re.findall(rf"^\| ([\w+-]+) \| {label}, (\d+) \| ([\d.]+)% \| ([\d.]+)% \| ([\d.]+) \| ([\d,]+) \|$",
                          section, re.MULTILINE)
        stated = {s: (int(n), ex, pass_at_n, per_q, tokens) for s, n, ex, pass_at_n, per_q, tokens in rows}
        expect(stated and stated == printed, (stated, printed))
    return run


def check_scope_in_scope_and_fit(docs: Docs, replays: Replays) -> None:
    """The in-scope cost of the scope check (EX, NoDataError, calls/q, tokens/q), and the table of
    ``bench scope-fit`` (the share fitted on one half, with the out-of-scope set)."""
    from ..config import Options
    from .scope_fit import ALONE, fit_share, render
    from .stages import load_records

    replay = replays.spider("spider-sqlite-0.5b-n200", "0.5b", f"default,default+scope,{ALONE}")
    records = load_jsonl(replay.records())
    printed = {}
    for strategy, (n, ex, _, tokens) in printed_figures(replay.stdout).items():
        mine = [r for r in records if r["strategy"] == strategy]
        printed[strategy] = (n, ex, sum(bool(r.get("no_data")) for r in mine),
                             f"{sum(r['llm_calls'] for r in mine) / len(mine):.2f}", f"{tokens:,}")
    section = docs.after(SCOPE_PAGE, "# Questions the data cannot answer", "```")
    rows = re.findall(r"^\| ([\w+-]+) \| (\d+) \| ([\d.]+)% \| (\d+) \| ([\d.]+) \| ([\d,]+) \|$", section,
                      re.MULTILINE)
    stated = {strategy: (int(n), ex, int(refused), per_q, tokens) for strategy, n, ex, refused, per_q, tokens in rows}
    expect(stated and stated == printed, (stated, printed))

    scope_records = replays.scope("scope-sqlite-0.5b", ALONE).records()
    fitted, share_rows = fit_share(load_records(replay.records()), load_records(scope_records))
    expect(fitted == Options().scope_unmatched_share, (fitted, Options().scope_unmatched_share))
    table = render(fitted, share_rows, 200).split("\n\n", 1)[1].splitlines()
    stated_fit = [line.strip() for line in section.splitlines()
                  if re.match(r"\s*\| ([01]\.\d\d( \(fitted\))?|share) \|", line)]
    expect(table[2:] == stated_fit[1:] and table[0] == stated_fit[0], (stated_fit, table))


def check_stages_table(run: str) -> Callable[[Docs, Replays], None]:
    def run_check(docs: Docs, replays: Replays) -> None:
        from .stages import load_records, render, stage_rows

        page, lead_in = STAGES_RUNS[run][3:5]
        printed = render(stage_rows(load_records(replays.stages(run).records()))).splitlines()[2:]
        table = table_after(docs.page(page), lead_in)
        stated = [line for line in table.splitlines() if line.startswith("| ") and not line.startswith("| stage |")]
        expect(printed and stated == printed, (stated, printed))
    return run_check


def assert_tier_table(records_path: Path, strategy: str, text: str, lead_in: str) -> None:
    """The tier table below ``lead_in`` in ``text``, and the answers no check is against, by agreement, in the text
    after it, equal ``bench tiers`` on the records of ``strategy``."""
    from .tiers import agreement_text, fit_and_report

    figures = fit_and_report(load_jsonl(records_path), strategy)
    printed = [tier_line(row["tier"], row["answers"], row["right"], row["precision"], row["coverage"])
               for row in figures["tiers"]]
    stated = tier_rows_after(text, lead_in)
    expect(stated == printed, (stated, printed))
    after = " ".join(text.split(lead_in, 1)[1].split())  # the text below the table, with lines joined
    unopposed = agreement_text(figures["unopposed_by_agreement"], descending=True)
    expect(f"({unopposed})" in after, unopposed)


def check_tier_table(run: str) -> Callable[[Docs, Replays], None]:
    def run_check(docs: Docs, replays: Replays) -> None:
        strategy, lead_in = TIER_TABLES[run]
        assert_tier_table(replays.stages(run).records(), strategy, docs.page(REPAIR_PAGE), lead_in)
    return run_check


def check_calibration_table(run: str) -> Callable[[Docs, Replays], None]:
    def run_check(docs: Docs, replays: Replays) -> None:
        folder, later, seeds = CALIBRATION_RUNS[run]
        records = load_jsonl(replays.spider(folder, run, "default", 200, later).records())
        model = next(str(r["model"]) for r in records if r.get("model"))
        calibration_stated(records, model, seeds, docs.page(CALIBRATION_PAGE), run.upper())
    return run_check


def check_calibration_other_engine(name: str) -> Callable[[Docs, Replays], None]:
    def run_check(docs: Docs, replays: Replays) -> None:
        engine, size, seeds = CALIBRATION_OTHER_ENGINES[name]
        records = load_jsonl(replays.documented(docs, name).records())
        model = f"{next(str(r['model']) for r in records if r.get('model'))} ({engine})"
        calibration_stated(records, model, seeds, docs.page(CALIBRATION_PAGE), f"{engine} {size}")
    return run_check


def calibration_stated(records: list[dict[str, Any]], model: str, seeds: tuple[int, ...], page: str,
                       label: str) -> None:
    """The page's rows for ``model`` are ``bench calibrate``'s, with and without the sure stop, for each seed, and
    it gives the ceiling (``--ceiling``) as "**C%** of the <label>'s questions (AUC A)"."""
    from .calibrate import calibrate, ceiling, table_row

    printed = [table_row(calibrate(records, "default", model, seed, use_stop=stop)[1])
               for stop in (True, False) for seed in seeds]
    stated = [line for line in page.splitlines() if line.startswith(f"| {model} |")]
    expect(printed and stated == printed, (stated, printed))
    bound = ceiling(records, "default")
    said = f"**{100 * bound['coverage']:.1f}%** of the {label}'s questions (AUC {bound['auc']:.3f})"
    expect(said in " ".join(page.split()), f"the page does not say the ceiling: {said}")


def check_other_engine_tiers(name: str) -> Callable[[Docs, Replays], None]:
    def run(docs: Docs, replays: Replays) -> None:
        strategy, lead_in = OTHER_ENGINE_TIERS[name]
        page, _ = docs.replay_commands()[name]
        assert_tier_table(replays.documented(docs, name).records(), strategy, docs.page(page), lead_in)
    return run


def check_library_rule_tiers(name: str) -> Callable[[Docs, Replays], None]:
    def run(docs: Docs, replays: Replays) -> None:
        from ..stages.evidence import DEFAULT_RULE
        from .tiers import tier_table

        strategy, lead_in = LIBRARY_RULE_TIERS[name]
        records = [r for r in load_jsonl(replays.documented(docs, name).records())
                   if r["strategy"] == strategy and r["candidates"]]
        printed = [tier_line(row.tier, row.answers, row.right, row.precision, row.coverage)
                   for row in tier_table(records, DEFAULT_RULE)]
        page, _ = docs.replay_commands()[name]
        expect(tier_rows_after(docs.page(page), lead_in) == printed, printed)
    return run


def _outcomes(text: str) -> list[tuple[str, str, str]]:
    """(database, outcome, question) of each line ``unlike_spider.py`` prints; the seconds are left out."""
    return [(db, outcome, question) for db, outcome, _, question in
            (line.split("\t") for line in text.splitlines() if line.count("\t") == 3)]


def check_analytics_table(name: str) -> Callable[[Docs, Replays], None]:
    def run(docs: Docs, replays: Replays) -> None:
        lead_in = ANALYTICS_RUNS[name][3]
        summary = next(replays.analytics(name).out.glob("*.md")).read_text("utf-8")
        rows = lambda table: [line for line in table.splitlines() if line.startswith("| ") and "---" not in line]  # noqa: E731
        printed = rows(summary.split("\n\n")[2])
        stated = rows(table_after(docs.page(ANALYTICS_PAGE), lead_in))
        expect(printed and stated == printed, (stated, printed))
    return run


def check_unlike_spider(docs: Docs, replays: Replays) -> None:
    """The replay gives the recorded outcome of every question, and the page's counts of right answers per
    database are those."""
    replayed = _outcomes(replays.unlike().stdout)
    recorded = _outcomes((replays.root / "benchmarks" / "runs" / UNLIKE / "outcomes.tsv").read_text("utf-8"))
    expect(replayed == recorded and len(recorded) == 10, (replayed, recorded))
    page = docs.page("unlike-spider-0.5b.md")
    for database in ("awkward", "wide"):
        mine = [outcome for db, outcome, _ in replayed if db == database]
        right = sum(outcome.startswith("right") for outcome in mine)
        expect(f"`{database}`: {right} of {len(mine)} right" in page, f"`{database}`: {right} of {len(mine)} right")


def checks() -> list[Check]:
    """Every check, the slowest replays first."""
    found = [Check(f"run {name}", check_documented_run(name), 3 if "issue7" in name else 2) for name in EXPECTED]
    found += [Check(f"repair table {m}", check_repair_table(m)) for m in REPAIR_RUNS]
    found += [Check(f"stages table {run}", check_stages_table(run), 2 if run in ("1.5b", "0.5b") else 1)
              for run in STAGES_RUNS]
    found += [Check(f"tier table {run}", check_tier_table(run)) for run in TIER_TABLES]
    found += [Check(f"tier table {name}", check_other_engine_tiers(name)) for name in OTHER_ENGINE_TIERS]
    found += [Check(f"calibration table {run}", check_calibration_table(run)) for run in CALIBRATION_RUNS]
    found += [Check(f"calibration table {name}", check_calibration_other_engine(name))
              for name in CALIBRATION_OTHER_ENGINES]
    found += [Check(f"library rule tiers {name}", check_library_rule_tiers(name)) for name in LIBRARY_RULE_TIERS]
    found += [Check(f"scope table {name}", check_scope_table(name)) for name in SCOPE_RUNS]
    found += [Check("scope check in scope, and its fit", check_scope_in_scope_and_fit),
              Check("schema facts table", check_facts_table),
              Check(f"unlike spider {UNLIKE}", check_unlike_spider)]
    found += [Check(f"analytics table {name}", check_analytics_table(name)) for name in ANALYTICS_RUNS]
    found += [Check(f"adaptive table {m}", check_adaptive_table(m)) for m in REPAIR_RUNS]
    return sorted(found, key=lambda check: -check.cost)


# ------------------------------------------------------------------------------------------------ runner


@contextmanager
def postgres_url(given: str | None) -> Iterator[Callable[[], str]]:
    """The server the PostgreSQL replay loads its dumps into: ``given``, else a throw-away one started on first
    use and removed after."""
    if given:
        yield lambda: given
        return
    from .pgserver import PostgresServer, available

    lock, started = threading.Lock(), list[PostgresServer]()

    def url() -> str:
        with lock:
            if not started:
                expect(available(), "no PostgreSQL server binaries: pass --pg-url, or install Debian's postgresql")
                server = PostgresServer("verifiedsql-verify-pg-")
                started.append(server)
                server.start()
            return str(started[0].url)
    try:
        yield url
    finally:
        for server in started:
            server.remove()


def run_checks(root: Path, data: Path, pg_url: str | None, jobs: int, only: list[str],
               say: Callable[[str], None] = print) -> int:
    """Run the checks whose name holds one of ``only`` (every check when empty); the number that failed."""
    chosen = [c for c in checks() if not only or any(word in c.name for word in only)]
    docs = Docs(root)
    failed = 0
    with tempfile.TemporaryDirectory(prefix="verifiedsql-verify-") as scratch, postgres_url(pg_url) as url:
        replays = Replays(root, data, Path(scratch), url)
        try:
            replayed_runs_match(docs, root / "benchmarks" / "runs")
            say("ok    every committed run has a replay on the docs' pages")
        except Mismatch as error:
            failed += 1
            say(f"FAIL  every committed run has a replay on the docs' pages: {error}")

        def one(check: Check) -> tuple[Check, str, str, float]:
            began = time.monotonic()
            try:
                check.run(docs, replays)
                return check, "ok", "", time.monotonic() - began
            except NotComparable as reason:
                return check, "skip", str(reason), time.monotonic() - began
            except Exception as error:  # a failed replay or a figure that differs: reported, the others go on
                return check, "FAIL", f"{type(error).__name__}: {error}", time.monotonic() - began

        with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
            for future in as_completed([pool.submit(one, check) for check in chosen]):
                check, status, detail, seconds = future.result()
                failed += status == "FAIL"
                say(f"{status:<5} {check.name} ({seconds:.0f} s){': ' + detail if detail else ''}")
    say(f"{len(chosen) + 1 - failed} of {len(chosen) + 1} checks passed" if not failed else
        f"{failed} of {len(chosen) + 1} checks failed")
    return failed


def add_verify_command(commands: Any) -> None:
    verify = commands.add_parser("verify", help="replay every committed run under benchmarks/runs (no model) and "
                                                "check every figure the docs' benchmark pages state")
    verify.add_argument("--root", type=Path, default=Path.cwd(),
                        help="the checkout: docs/benchmarks and benchmarks/runs (default: the current folder)")
    verify.add_argument("--data", type=Path, default=Path(os.environ.get("VERIFIEDSQL_SPIDER_DIR", DEFAULT_DATA_DIR)),
                        help=f"Spider dev folder (default $VERIFIEDSQL_SPIDER_DIR, else {DEFAULT_DATA_DIR})")
    verify.add_argument("--pg-url", help="PostgreSQL server for the PostgreSQL run (default: a throw-away one)")
    verify.add_argument("--jobs", type=int, default=(os.cpu_count() or 2) + 2,
                        help="replays run side by side (default: the CPU cores plus 2; sandboxed steps mostly wait)")
    verify.add_argument("--only", action="append", default=[], metavar="WORDS",
                        help="only the checks whose name holds WORDS (repeatable), e.g. --only 'run spider-duckdb'")
    verify.add_argument("--list", action="store_true", help="list the checks and exit")
    verify.set_defaults(handler=run_verify_command)


def run_verify_command(args: argparse.Namespace) -> int:
    if args.list:
        for check in checks():
            print(check.name)
        return 0
    root, data = args.root.resolve(), args.data.resolve()
    if not (root / "docs" / "benchmarks").is_dir() or not (root / "benchmarks" / "runs").is_dir():
        print(f"error: {root} is not a checkout of verifiedsql (docs/benchmarks and benchmarks/runs); pass --root",
              file=sys.stderr)
        return 2
    if not (data / "dev.json").exists():
        print(f"error: Spider dev data not found at {data}; pass --data or set VERIFIEDSQL_SPIDER_DIR",
              file=sys.stderr)
        return 2
    return 1 if run_checks(root, data, args.pg_url, args.jobs, args.only) else 0
