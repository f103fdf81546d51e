"""``verifiedsql bench spider | analytics | tiers | calibrate | compare | stages | scope | scope-fit | verify``: the
command lines of the Spider accuracy harness, the project's analytics questions, the tier fit, the calibrated
confidence's fit, runs side by side, each optional stage's effect, the out-of-scope question set, the scope check's
fit, and the replay of every committed run against the docs' figures."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, Sequence

from .data import DEFAULT_DATA_DIR
from .engines import ENGINES
from .strategies import STRATEGIES, parse_strategies


def add_spider_arguments(parser: argparse.ArgumentParser) -> None:
    size = parser.add_mutually_exclusive_group()
    size.add_argument("-n", "--n", type=int, default=200, help="questions in the seeded sample (default 200)")
    size.add_argument("--all", action="store_true", help="every question of the dev set")
    parser.add_argument("--seed", type=int, default=0, help="sampling seed (default 0)")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA_DIR,
                        help=f"Spider dev folder with dev.json and database/ (default {DEFAULT_DATA_DIR})")
    parser.add_argument("--engine", choices=ENGINES, default="sqlite", help="engine to answer on (default sqlite)")
    parser.add_argument("--pg-url", help="PostgreSQL server for --engine postgresql (SQLAlchemy URL)")
    parser.add_argument("--strategies", default="greedy,self-consistency",
                        help=f"comma-separated, from {sorted(STRATEGIES)} (default greedy,self-consistency)")
    add_run_arguments(parser, "report")


def add_run_arguments(parser: argparse.ArgumentParser, written: str) -> None:
    """The options every model-answering bench command shares: cache, replay, model, output and progress;
    ``written`` names what ``--report-only`` writes."""
    from .spider import DEFAULT_CACHE, DEFAULT_OUT

    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE,
                        help=f"record/replay cache shared by the strategies (default {DEFAULT_CACHE})")
    parser.add_argument("--replay", action="store_true", help="replay the cache only: no model is needed")
    parser.add_argument("--model", choices=["1.5b", "0.5b"], default="1.5b", help="embedded model (default 1.5b)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"output folder (default {DEFAULT_OUT})")
    parser.add_argument("--quiet", action="store_true", help="no progress lines")
    parser.add_argument("--report-only", action="store_true",
                        help=f"write the {written} from the records stored so far; answer nothing")
    parser.add_argument("--calibration", type=Path,
                        help="a fit written by `bench calibrate --out`, for the strategies that use the model's "
                             "calibration (default+calibrated, default+sure) in place of the one shipped")


def run_settings(args: argparse.Namespace) -> dict[str, Any]:
    """The ``RunSettings`` values of the arguments ``add_run_arguments`` added."""
    options = {"calibration": str(args.calibration)} if args.calibration else {}
    return {"cache_path": args.cache, "replay": args.replay, "model": args.model, "out_dir": args.out,
            "report_only": args.report_only, "options": options}


def add_bench_commands(subparsers: Any) -> None:
    """Register ``bench spider``, ``tiers``, ``compare``, ``stages``, ``scope``, ``scope-fit`` and ``verify`` on the
    main parser's subparsers."""
    bench = subparsers.add_parser("bench", help="benchmarks (Spider accuracy)")
    commands = bench.add_subparsers(dest="bench_command", required=True)
    spider = commands.add_parser("spider", help="Spider dev execution accuracy per strategy")
    add_spider_arguments(spider)
    spider.set_defaults(handler=run_spider_command)
    analytics = commands.add_parser("analytics", help="the project's analytics questions (benchmarks/analytics): "
                                                      "EX per class and split, on SQLite, PostgreSQL or DuckDB")
    add_analytics_arguments(analytics)
    analytics.set_defaults(handler=run_analytics_command)
    tiers = commands.add_parser("tiers", help="fit the confidence tier rule on one seeded half of a run's "
                                              "records, report each tier's precision and coverage on the other")
    tiers.add_argument("records", type=Path, help="a run's JSONL records (written by `bench spider`)")
    tiers.add_argument("--strategy", default="self-consistency", help="the strategy whose answers are rated")
    tiers.add_argument("--seed", type=int, default=0, help="the seed of the split into halves (default 0)")
    tiers.add_argument("--json", action="store_true", help="print the figures as JSON")
    tiers.set_defaults(handler=run_tiers_command)
    calibrate = commands.add_parser("calibrate", help="fit the calibrated confidence (report.probability, its tiers "
                                                      "and the sure stop) on one seeded half of a run's records, "
                                                      "report it on the other")
    calibrate.add_argument("records", type=Path, help="a run's JSONL records (written by `bench spider` with a model "
                                                      "that gives token log-probabilities)")
    calibrate.add_argument("--strategy", default="default", help="the strategy whose answers are fitted")
    calibrate.add_argument("--seed", type=int, default=0, help="the seed of the split into halves (default 0)")
    calibrate.add_argument("--model", help="the model the fit is for (default: the records' model)")
    calibrate.add_argument("--out", type=Path, help="write the fit here (load it with the calibration option)")
    calibrate.add_argument("--plot", type=Path, help="draw the risk-coverage curves into this PNG")
    calibrate.add_argument("--json", action="store_true", help="print the figures as JSON")
    calibrate.add_argument("--features", action="store_true",
                           help="print how well each feature alone separates right answers from wrong (AUC) and exit")
    calibrate.add_argument("--ceiling", action="store_true",
                           help="fit on every answer and print the largest coverage at which those same answers are "
                                "95%% precise (an optimistic bound on the verified tier) and exit")
    calibrate.add_argument("--no-stop", action="store_true",
                           help="report as if every candidate were drawn (no sure stop): the tiers of the pool fit")
    calibrate.set_defaults(handler=run_calibrate_command)
    compare = commands.add_parser("compare", help="runs side by side on the questions all of them answered "
                                                  "(e.g. SQLite and PostgreSQL on the same seeded questions)")
    compare.add_argument("runs", nargs="+", help="RECORDS.jsonl:STRATEGY, two or more")
    compare.set_defaults(handler=run_compare_command)
    stages = commands.add_parser("stages", help="what each optional stage adds (EX, the verified tier, calls, "
                                                "tokens, model seconds), from a run with both strategies of a pair")
    stages.add_argument("records", type=Path, help="a run's JSONL records (written by `bench spider`)")
    stages.set_defaults(handler=run_stages_command)
    scope_fit = commands.add_parser("scope-fit", help="fit the share of unmatched words the scope check needs, on "
                                                      "one seeded half of a Spider run (default+scope-alone)")
    scope_fit.add_argument("records", type=Path, help="a Spider run's JSONL records with default and "
                                                      "default+scope-alone")
    scope_fit.add_argument("--out-of-scope", type=Path, help="`bench scope` records with default+scope-alone")
    scope_fit.add_argument("--seed", type=int, default=0, help="the seed of the split into halves (default 0)")
    scope_fit.set_defaults(handler=run_scope_fit_command)
    scope = commands.add_parser("scope", help="questions the data cannot answer (benchmarks/out_of_scope.json): "
                                              "how each strategy ends on them, on SQLite")
    add_scope_arguments(scope)
    scope.set_defaults(handler=run_scope_command)
    from .verify import add_verify_command

    add_verify_command(commands)


def add_analytics_arguments(parser: argparse.ArgumentParser) -> None:
    from .analytics import DEFAULT_SET, DEFAULT_STRATEGIES

    parser.add_argument("--set", type=Path, default=DEFAULT_SET, dest="set_dir",
                        help=f"the question set's folder, with questions.json and generate.py (default {DEFAULT_SET})")
    parser.add_argument("-n", "--n", type=int, help="only the first N questions of the seeded order (default: all)")
    parser.add_argument("--seed", type=int, default=0, help="the seed of the order and of the fit/reported split")
    parser.add_argument("--engine", choices=ENGINES, default="sqlite", help="engine to answer on (default sqlite)")
    parser.add_argument("--pg-url", help="PostgreSQL server for --engine postgresql (SQLAlchemy URL)")
    parser.add_argument("--strategies", default=",".join(DEFAULT_STRATEGIES),
                        help=f"comma-separated, from {sorted(STRATEGIES)} (default {','.join(DEFAULT_STRATEGIES)})")
    add_run_arguments(parser, "summary")


def run_analytics_command(args: argparse.Namespace) -> int:
    from .analytics import AnalyticsConfig, run_analytics
    from .loop import print_progress

    config = AnalyticsConfig(
        set_dir=args.set_dir, engine=args.engine, pg_url=args.pg_url, seed=args.seed, n=args.n,
        strategies=parse_strategies(args.strategies), **run_settings(args),
    )
    run = run_analytics(config, progress=(lambda line: None) if args.quiet else print_progress)
    for strategy, figures in run.summary.items():
        cells = "  ".join(f"{half} {t['correct']}/{t['questions']}"
                          for half, t in (("all", figures["all"]), *figures["splits"].items()))
        precision = figures["all"]["verified_precision"]
        shown = "n/a" if precision is None else f"{100 * precision:.1f}%"
        print(f"{strategy:<22} {cells}  verified {figures['all']['verified']} ({shown} right)")
    for kind, path in run.outputs.items():
        print(f"{kind}: {path}")
    return 0


def add_scope_arguments(parser: argparse.ArgumentParser) -> None:
    from .scope import DEFAULT_QUESTIONS, DEFAULT_STRATEGIES

    parser.add_argument("--questions", type=Path, default=DEFAULT_QUESTIONS,
                        help=f"the question set (default {DEFAULT_QUESTIONS})")
    parser.add_argument("-n", "--n", type=int, help="only the first N questions of the set (default: all)")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA_DIR,
                        help=f"Spider dev folder with database/ (default {DEFAULT_DATA_DIR})")
    parser.add_argument("--strategies", default=",".join(DEFAULT_STRATEGIES),
                        help=f"comma-separated, from {sorted(STRATEGIES)} (default {','.join(DEFAULT_STRATEGIES)})")
    add_run_arguments(parser, "summary")


def run_scope_fit_command(args: argparse.Namespace) -> int:
    from .scope_fit import answered, fit_share, render
    from .stages import load_records

    spider = load_records(args.records)
    out_of_scope = load_records(args.out_of_scope) if args.out_of_scope else {}
    fitted, rows = fit_share(spider, out_of_scope, args.seed)
    print(render(fitted, rows, len(answered(spider)), args.seed))
    return 0


def run_scope_command(args: argparse.Namespace) -> int:
    from .loop import print_progress
    from .scope import ScopeConfig, run_scope

    config = ScopeConfig(
        questions_path=args.questions, data_dir=args.data, n=args.n, strategies=parse_strategies(args.strategies),
        **run_settings(args),
    )
    run = run_scope(config, progress=(lambda line: None) if args.quiet else print_progress)
    for strategy, figures in run.summary.items():
        counts = ", ".join(f"{name} {n}" for name, n in figures["outcomes"].items() if n)
        print(f"{strategy:<30} n={figures['questions']:<3} {counts or 'no records'}; verified: {figures['verified']}")
    for kind, path in run.outputs.items():
        print(f"{kind}: {path}")
    return 0


def run_tiers_command(args: argparse.Namespace) -> int:
    import json

    from .tiers import fit_and_report, render

    records = [json.loads(line) for line in args.records.read_text().splitlines() if line.strip()]
    figures = fit_and_report(records, args.strategy, args.seed)
    if any(r.get("features") for r in records if r.get("strategy") == args.strategy):
        from .calibrate import calibrate

        _, calibrated = calibrate(records, args.strategy, "model", args.seed)
        figures.update({key: calibrated[key] for key in ("aurc", "aurc_vote", "ex", "calls_per_question")})
    print(json.dumps(figures, indent=2) if args.json else render(figures))
    return 0


def run_calibrate_command(args: argparse.Namespace) -> int:
    import json

    from .calibrate import calibrate, ceiling, feature_aucs, render

    records = [json.loads(line) for line in args.records.read_text().splitlines() if line.strip()]
    if args.ceiling:
        bound = ceiling(records, args.strategy)
        separation = "-" if bound["auc"] is None else f"{bound['auc']:.3f}"
        print(f"{args.strategy}: fitted and scored on the same {bound['answered']} answers of {bound['questions']} "
              f"questions: AUC {separation}; at least 95% precise on at most {100 * bound['coverage']:.1f}% of the "
              "questions")
        return 0
    if args.features:
        for name, auc in feature_aucs(records, args.strategy).items():
            cells = "  ".join(f"{kind} {'-' if value is None else f'{value:.3f}'}" for kind, value in auc.items())
            print(f"{name:<18} {cells}")
        return 0
    model = args.model or next((str(r["model"]) for r in records if r.get("model")), "model")
    calibration, figures = calibrate(records, args.strategy, model, args.seed, use_stop=not args.no_stop)
    if args.out:
        args.out.write_text(json.dumps(calibration.to_json(), indent=1) + "\n")
    if args.plot:
        from .report import risk_coverage_plot

        risk_coverage_plot(figures, args.plot)
    shown = {k: v for k, v in figures.items() if not k.startswith("risk_coverage")}
    print(json.dumps(shown, indent=2) if args.json else render(figures))
    return 0


def run_compare_command(args: argparse.Namespace) -> int:
    from .compare import compare, load_side, render

    print(render(compare([load_side(spec) for spec in args.runs])))
    return 0


def run_stages_command(args: argparse.Namespace) -> int:
    from .stages import load_records, render, stage_rows

    print(render(stage_rows(load_records(args.records))))
    return 0


def run_spider_command(args: argparse.Namespace) -> int:
    from .loop import print_progress
    from .spider import SpiderConfig, run_spider

    config = SpiderConfig(
        data_dir=args.data, n=None if args.all else args.n, seed=args.seed, engine=args.engine,
        pg_url=args.pg_url, strategies=parse_strategies(args.strategies), **run_settings(args),
    )
    run = run_spider(config, progress=(lambda line: None) if args.quiet else print_progress)
    for strategy, m in run.summaries.items():
        gap = "n/a" if m.gap_closed is None else f"{100 * m.gap_closed:.1f}%"
        print(f"{strategy:<18} n={m.questions:<4} EX={100 * m.ex:5.1f}%  Pass@N={100 * m.pass_at_n:5.1f}%  "
              f"gap closed={gap}  tokens/q={m.tokens:.0f}  own p50={1000 * (m.own.p50 or 0):.0f} ms")
    for kind, path in run.outputs.items():
        print(f"{kind}: {path}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Stand-alone entry (``benchmarks/spider.py``): the same options as ``verifiedsql bench spider``."""
    from ..errors import VerifiedSQLError

    parser = argparse.ArgumentParser(prog="benchmarks/spider.py", description="Spider accuracy harness")
    add_spider_arguments(parser)
    args = parser.parse_args(argv)
    try:
        return run_spider_command(args)
    except VerifiedSQLError as error:
        import sys

        print(f"error: {error}", file=sys.stderr)
        return 2
