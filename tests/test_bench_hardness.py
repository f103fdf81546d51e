"""Spider hardness from the gold SQL, on dev-set queries whose level Spider's evaluator assigns."""

import pytest
import sqlglot

from verifiedsql.bench.hardness import count_components, hardness

KNOWN = [
    ("SELECT count(*) FROM singer", "easy"),
    ("SELECT name FROM stadium WHERE capacity > 5000", "easy"),
    ("SELECT name ,  country ,  age FROM singer ORDER BY age DESC", "medium"),
    ("SELECT avg(age) ,  min(age) ,  max(age) FROM singer WHERE country  =  'France'", "medium"),
    ("SELECT song_name ,  song_release_year FROM singer ORDER BY age LIMIT 1", "medium"),
    ("SELECT T2.name ,  count(*) FROM concert AS T1 JOIN stadium AS T2 ON T1.stadium_id  =  T2.stadium_id "
     "GROUP BY T1.stadium_id", "medium"),
    ("SELECT name FROM stadium WHERE stadium_id NOT IN (SELECT stadium_id FROM concert)", "hard"),
    ("SELECT country FROM singer WHERE age  >  40 INTERSECT SELECT country FROM singer WHERE age  <  30", "hard"),
    ("select T2.name ,  T2.capacity from concert as t1 join stadium as t2 on t1.stadium_id  =  t2.stadium_id "
     "where t1.year  >=  2014 group by t2.stadium_id order by count(*) desc limit 1", "extra"),
    ("SELECT T2.name FROM singer_in_concert AS T1 JOIN singer AS T2 ON T1.singer_id = T2.singer_id "
     "JOIN concert AS T3 ON T1.concert_id = T3.concert_id WHERE T3.year = 2014 "
     "INTERSECT SELECT name FROM singer WHERE country = 'France'", "extra"),
]


@pytest.mark.parametrize(("sql", "level"), KNOWN)
def test_known_levels(sql, level):
    assert hardness(sql) == level


def test_counts_follow_spiders_components():
    counts = count_components(sqlglot.parse_one(
        "SELECT a, b FROM t JOIN u ON t.x = u.x WHERE a LIKE 'x%' OR b = 1 ORDER BY a LIMIT 3", read="sqlite"))
    # WHERE, ORDER BY, LIMIT, one join, one OR, one LIKE
    assert counts.component1 == 6
    assert counts.component2 == 0
    assert counts.others == 2  # two SELECT columns, two WHERE conditions


def test_only_direct_subqueries_count_as_nested():
    counts = count_components(sqlglot.parse_one(
        "SELECT a FROM t WHERE a IN (SELECT b FROM u WHERE b IN (SELECT c FROM v))", read="sqlite"))
    assert counts.component2 == 1


def test_unparseable_sql_is_extra():
    assert hardness("SELECT FROM WHERE (((") == "extra"
