from verifiedsql.report import Candidate
from verifiedsql.results import ResultSet
from verifiedsql.stages.cluster import cluster_runs, select_majority
from verifiedsql.stages.generate import CandidateRun


def run(index, rows, sql=None, ordered=False):
    candidate = Candidate(index=index, origin="greedy" if index == 0 else "sample", sql=sql or f"SELECT {index}")
    result = None if rows is None else ResultSet(("a",), tuple((r,) for r in rows))
    if result is None:
        candidate.status = "error"
    return CandidateRun(candidate, result, ordered)


def test_unanimous_when_all_agree():
    runs = [run(i, [1, 2]) for i in range(3)]
    selection = select_majority(runs, cluster_runs(runs))
    assert selection.vote == "unanimous" and len(selection.cluster.members) == 3


def test_majority_and_representative_is_shortest_sql():
    runs = [run(0, [1]), run(1, [2], sql="SELECT  2 -- long"), run(2, [2], sql="SELECT 2"),
            run(3, [2], sql="SELECT 2 ")]
    selection = select_majority(runs, cluster_runs(runs))
    assert selection.vote == "majority"
    assert selection.representative.candidate.sql == "SELECT 2"
    assert [r.candidate.cluster for r in runs] == [0, 1, 1, 1]


def test_tie_goes_to_the_greedy_cluster_and_is_unverified():
    runs = [run(0, [1]), run(1, [2]), run(2, [2]), run(3, [1])]
    selection = select_majority(runs, cluster_runs(runs))
    assert 0 in selection.cluster.members
    assert selection.vote == "unverified"


def test_failed_runs_count_as_votes_against():
    runs = [run(0, [1]), run(1, None), run(2, None)]
    selection = select_majority(runs, cluster_runs(runs))
    assert selection.vote == "unverified"


def test_nothing_ran():
    runs = [run(0, None)]
    assert select_majority(runs, cluster_runs(runs)) is None


def test_ordered_results_split_on_order():
    runs = [run(0, [1, 2], ordered=True), run(1, [2, 1], ordered=True)]
    assert len(cluster_runs(runs)) == 2


def test_a_doubted_cluster_needs_a_lead_of_two():
    doubted = {1, 2, 3}  # candidate indices whose result has evidence against it
    runs = [run(0, [1]), run(1, [2]), run(2, [2]), run(3, [2]), run(4, [1])]
    selection = select_majority(runs, cluster_runs(runs), lambda r: r.candidate.index in doubted)
    assert selection.cluster.members == [0, 4] and selection.vote == "unverified"
    assert "evidence against it" in selection.reason
    runs.append(run(5, [2]))
    doubted.add(5)
    selection = select_majority(runs, cluster_runs(runs), lambda r: r.candidate.index in doubted)
    assert selection.cluster.members == [1, 2, 3, 5] and selection.vote == "majority"


def test_without_a_doubt_the_largest_cluster_wins():
    runs = [run(0, [1]), run(1, [2]), run(2, [2])]
    assert select_majority(runs, cluster_runs(runs), lambda r: False).cluster.members == [1, 2]
    assert select_majority(runs, cluster_runs(runs), None).cluster.members == [1, 2]


def test_an_endorsed_candidate_breaks_a_tie_unless_its_result_is_doubted():
    from verifiedsql.stages.cluster import join_pool
    runs = [run(0, [1]), run(1, [2])]
    endorsed = run(2, [2])
    _, _, chosen = join_pool([*runs, run(3, [1])], endorsed, "the R3 review")
    assert 2 in chosen.cluster.members and "broken by the R3 review" in chosen.reason
    _, _, chosen = join_pool([*runs, run(3, [1])], run(2, [2]), "the R3 review", lambda r: r.candidate.index == 2)
    assert 0 in chosen.cluster.members  # a doubted endorsement does not take the tie
