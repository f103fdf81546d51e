"""Table-level schema linking: which table groups a question needs, in order of preference.

Lexical first: the question's words against each group's table and column names (split at ``_`` and
camelCase, lower case, plurals and ``-ed``/``-ing`` stemmed, stop words dropped), a word in a table name
counting ``NAME_WEIGHT`` times a word in a column name. Groups the question names literally come first;
the foreign-key neighbours of the best scorers follow them. Only when no group scores above zero does the
model get asked, one short Y/N call per group (purpose ``link``, temperature 0).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache

from ...errors import LLMError
from ...llm.base import ChatModel, ChatRequest, Message, messages
from ...llm.replies import yes_no
from ...report import VerificationReport
from ..calls import call_model
from .grouping import TableGroup

NAME_WEIGHT = 3
HIGH_SCORE_FRACTION = 0.5  # groups scoring at least this share of the best score bring their FK neighbours
LINK_MAX_TOKENS = 8
_STOPWORD_TEXT = (
    "a an the of in on at to for from by with and or not no is are was were be been being what which who whom "
    "whose when where why how many much count number list show give find return all each every per any some "
    "than that this these those there their its it do does did have has had most least top more less between "
    "over under into as me i we you they our your please tell get name names value values data table tables "
    "database record records row rows"
)
STOPWORDS = frozenset(_STOPWORD_TEXT.split())

LINK_SYSTEM = (
    "You decide whether one database table is needed to answer a question with SQL.\n"
    "Reply with Y if the question needs the table (or probably does), N if it does not, and nothing else."
)
LINK_USER = "Table:\n{table}\n\nQuestion: {question}\n\nIs this table needed? Reply Y or N."
_PARTS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")
_IDENTIFIER = re.compile(r"[\w$]+")


def stem(word: str) -> str:
    """A crude stem, the same on both sides of a match: plural first, then ``-ing``/``-ed``:
    ``countries`` -> ``country``, ``addresses`` -> ``address``, ``ratings``/``rating`` -> ``rat``."""
    if len(word) > 4 and word.endswith("ies"):
        word = word[:-3] + "y"
    elif word.endswith(("sses", "xes", "ches", "shes")) or (len(word) > 6 and word.endswith("uses")):
        word = word[:-2]
    elif len(word) > 2 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    if len(word) > 5 and word.endswith("ing"):
        return word[:-3]
    if len(word) > 5 and word.endswith("ed"):
        return word[:-2]
    return word


@lru_cache(maxsize=65_536)
def words(text: str) -> frozenset[str]:
    """The stemmed words of a name or a question, without stop words or single letters."""
    found = (part.lower() for part in _PARTS.findall(text))
    return frozenset(stem(w) for w in found if len(w) > 1 and w not in STOPWORDS)


def lexical_scores(groups: Sequence[TableGroup], question: str) -> list[int]:
    """One score per group: question words in its table names (x NAME_WEIGHT) plus other question words
    in its column names. Zero means no overlap at all."""
    wanted = words(question)
    scores = []
    for group in groups:
        names = frozenset().union(*(words(t.name) for t in group.tables)) & wanted
        columns = frozenset().union(*(words(c.name) for t in group.tables for c in t.columns)) & wanted
        scores.append(NAME_WEIGHT * len(names) + len(columns - names))
    return scores


def _names(name: str) -> set[str]:
    lowered = name.lower()
    return {lowered, lowered.rsplit(".", 1)[-1]}


def named_groups(groups: Sequence[TableGroup], question: str) -> set[int]:
    """Groups with a table the question names literally (whole word, any case, bare or qualified)."""
    lowered = question.lower()
    identifiers = set(_IDENTIFIER.findall(lowered))
    return {
        index for index, group in enumerate(groups)
        if any(n in identifiers if _IDENTIFIER.fullmatch(n) else n in lowered
               for table in group.tables for n in _names(table.name))
    }


def neighbours(groups: Sequence[TableGroup]) -> list[set[int]]:
    """For each group, the groups that its tables' foreign keys join it to, in either direction."""
    where = {n: index for index, group in enumerate(groups) for t in group.tables for n in _names(t.name)}
    linked: list[set[int]] = [set() for _ in groups]
    for index, group in enumerate(groups):
        for table in group.tables:
            for key in table.foreign_keys:
                other = next((where[n] for n in _names(key.referred_table) if n in where), None)
                if other is not None and other != index:
                    linked[index].add(other)
                    linked[other].add(index)
    return linked


def link_order(scores: Sequence[int], named: Iterable[int], adjacency: Sequence[set[int]]) -> list[int]:
    """Every group index once, best first: named groups, then scorers by score (ties in schema order),
    each named or high scorer followed by its FK neighbours, then the rest in schema order."""
    order: list[int] = []
    seen: set[int] = set()

    def add(index: int, with_neighbours: bool) -> None:
        if index not in seen:
            seen.add(index)
            order.append(index)
        if with_neighbours:
            for other in sorted(adjacency[index]):
                add(other, False)

    top = max(scores, default=0)
    for index in sorted(named):
        add(index, True)
    for index in sorted((i for i, s in enumerate(scores) if s > 0), key=lambda i: (-scores[i], i)):
        add(index, scores[index] >= HIGH_SCORE_FRACTION * top)
    for index in range(len(scores)):
        add(index, False)
    return order


def link_messages(table_text: str, question: str) -> tuple[Message, ...]:
    """The Y/N prompt for one table (or group of tables)."""
    return messages(LINK_SYSTEM, LINK_USER.format(table=table_text, question=question))


def model_votes(llm: ChatModel, report: VerificationReport, question: str,
                tables: Mapping[int, str]) -> dict[int, bool]:
    """The model's Y/N for each ``index -> table text``; stops at the first model error (noted)."""
    votes: dict[int, bool] = {}
    for index, text in tables.items():
        request = ChatRequest(messages=link_messages(text, question), temperature=0.0,
                              max_tokens=LINK_MAX_TOKENS, seed=0, purpose="link")
        try:
            reply = call_model(llm, request, report)
        except LLMError as error:
            report.notes.append(f"schema linking: the model gave no answer ({error}); stopped asking")
            break
        votes[index] = yes_no(reply.text) is True
    return votes
