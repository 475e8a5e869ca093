"""`bench/litqa.py answer --readings FILE`: the letter readings behind each answer, and the
rules that could have been drawn from them.

nodes/option_pick.py reads two or four one-token calls: the options as asked, without
the passages and with them, then, unless that reading is sure (`SURE_SHARE`), reversed,
with and without. This records each reading's letter shares, keyed by the options' text,
in a JSON-lines file, and scores every rule on the same readings, so the shipped rule is
compared with the others on the same model outputs (only questions with all four
readings are scored; a sure one has two, and the table counts them):

- `as asked, floor F`: the best option of the reading as asked, if it holds F of it
  (the rule of the fourth session, F = 0.5);
- `mean of both orders, floor F`: the two readings averaged per option;
- `both orders agree, raw`: the option both readings rank first;
- `both orders agree, first calibrated`: the reading as asked divided by its reading
  without passages, against the reversed reading as it is (one call fewer);
- `both orders agree, both calibrated`: each divided by its own reading without
  passages (the fifth session's rule);
- `as asked calibrated if >= F, else both agree` (shipped at F = SURE_SHARE): the
  calibrated reading as asked alone when it is that sure, else the rule above;
- `as asked calibrated if >= F, else mean of both orders`: the same, else the mean.

An answer is "insufficient" when the rule abstains or picks the "insufficient" option.

`.venv/bin/python bench/litqa_readings.py FILE [--questions 1-41]` scores a recorded file again
(bench/readings/ keeps the ones the bench README quotes).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from litqa_data import INSUFFICIENT, Question, load_questions, select
from recall_common import Row, print_table

Shares = dict[str, float]  # option text -> share


def install(path: str, questions: list[Question]) -> None:
    """Wrap option_pick.read_pick: record its four readings for each question."""
    from scholarflow.nodes import answer as answer_node
    from scholarflow.nodes import option_pick

    by_asked = {q.asked(): q for q in questions}
    original = option_pick.read_pick
    original_letters = option_pick._letters

    async def read_pick(ctx: Any, head: Any, question: str, asked: Any, evidence: Any,
                        passages: Any, *, node: str) -> Any:
        seen: list[dict[str, float] | None] = []

        async def letters(*args: Any) -> Any:
            shares = await original_letters(*args)
            seen.append(shares)
            return shares

        option_pick._letters = letters  # type: ignore[assignment]
        try:
            chosen, usage = await original(ctx, head, question, asked, evidence, passages,
                                           node=node)
        finally:
            option_pick._letters = original_letters
        q = by_asked.get(question)
        if q is not None and len(seen) in (2, 4):  # 2: the reading as asked was sure
            flipped = option_pick.reversed_order(asked)
            names = ("prior", "as_asked", "reversed", "prior_reversed")  # in call order
            orders = (asked, asked, flipped, flipped)
            record: dict[str, Any] = {"n": q.n}
            for name, shown, shares in zip(names, orders, seen, strict=False):
                record[name] = _by_text(shown, shares)
            with Path(path).open("a", encoding="utf-8") as out:  # noqa: ASYNC230
                out.write(json.dumps(record, ensure_ascii=False) + "\n")
        return chosen, usage

    answer_node.read_pick = read_pick  # type: ignore[assignment]


def _by_text(shown: Any, shares: dict[str, float] | None) -> Shares | None:
    if shares is None:
        return None
    return {text: shares[k] for k, text in zip(shown.letters, shown.options, strict=True)}


def _calibrated(shares: Shares, prior: Shares | None) -> Shares:
    from scholarflow.nodes.option_pick import calibrated

    return calibrated(shares, prior)


def _best(shares: Shares) -> str:
    return max(shares, key=lambda k: shares[k])


Rule = Callable[[dict[str, Any]], str | None]


def _mean(first: Shares, second: Shares) -> Shares:
    return {k: (v + second[k]) / 2 for k, v in first.items()}


def _floor(name: str, floor: float) -> Rule:
    def rule(r: dict[str, Any]) -> str | None:
        shares = r["as_asked"]
        if name == "mean":
            shares = _mean(shares, r["reversed"])
        best = _best(shares)
        return best if shares[best] >= floor else None
    return rule


def _mean_calibrated(floor: float) -> Rule:
    def rule(r: dict[str, Any]) -> str | None:
        mean = _mean(_calibrated(r["as_asked"], r["prior"]),
                     _calibrated(r["reversed"], r["prior_reversed"]))
        best = _best(mean)
        return best if mean[best] >= floor else None
    return rule


def _agree(first: Callable[[dict[str, Any]], Shares], second: Callable[[dict[str, Any]], Shares]
           ) -> Rule:
    def rule(r: dict[str, Any]) -> str | None:
        best = _best(first(r))
        return best if best == _best(second(r)) else None
    return rule


def _sure_pick(r: dict[str, Any], floor: float, raw: bool = False) -> str | None:
    """The calibrated reading as asked's best option when it is sure (one reading of the
    passages): it holds `floor` of it; `raw`: of the reading before calibration, and
    calibration keeps it first. None when it is not."""
    first = _calibrated(r["as_asked"], r["prior"])
    best = _best(first)
    if raw:
        sure = _best(r["as_asked"]) == best and r["as_asked"][best] >= floor
    else:
        sure = first[best] >= floor
    return best if sure else None


def _sure_else(floor: float, otherwise: Rule, raw: bool = False) -> Rule:
    """`_sure_pick`, else `otherwise` (more readings)."""
    def rule(r: dict[str, Any]) -> str | None:
        picked = _sure_pick(r, floor, raw)
        return picked if picked is not None else otherwise(r)
    return rule


# Both calibrated orders must agree (two readings of the passages).
_BOTH_AGREE = _agree(lambda r: _calibrated(r["as_asked"], r["prior"]),
                     lambda r: _calibrated(r["reversed"], r["prior_reversed"]))


RULES: list[tuple[str, Rule]] = [
    *[(f"as asked calibrated, floor {f}", _sure_else(f, lambda r: None)) for f in (0.5, 0.7, 0.9)],
    *[(f"as asked calibrated if >= {f}, else both agree", _sure_else(f, _BOTH_AGREE))
      for f in (0.5, 0.6, 0.7, 0.8, 0.9)],
    *[(f"as asked calibrated if raw >= {f}, else both agree",
       _sure_else(f, _BOTH_AGREE, raw=True)) for f in (0.5, 0.6, 0.7, 0.8, 0.9)],
    *[(f"as asked calibrated if >= {f}, else mean of both orders",
       _sure_else(f, _floor("mean", 0.0))) for f in (0.5, 0.6)],
    *[(f"as asked, floor {f}", _floor("as_asked", f)) for f in (0.0, 0.3, 0.5)],
    *[(f"mean of both orders, floor {f}", _floor("mean", f)) for f in (0.0, 0.3, 0.5)],
    *[(f"mean of both orders calibrated, floor {f}", _mean_calibrated(f)) for f in (0.0, 0.3, 0.4)],
    ("both orders agree, raw", _agree(lambda r: r["as_asked"], lambda r: r["reversed"])),
    ("both orders agree, first calibrated",
     _agree(lambda r: _calibrated(r["as_asked"], r["prior"]), lambda r: r["reversed"])),
    ("both orders agree, both calibrated", _BOTH_AGREE),
]


def report(path: str, questions: Sequence[Question]) -> None:
    """Every rule's correct / insufficient / wrong on the readings recorded in `path`."""
    by_n = {q.n: q for q in questions}
    records = [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines()]
    records = [r for r in records if r["n"] in by_n]
    stopped = [r for r in records if "reversed" not in r]  # the shipped rule was sure
    records = [r for r in records if "reversed" in r]
    rows = []
    for name, rule in RULES:
        right = unsure = wrong = 0
        for r in records:
            picked = rule(r)
            if picked is None or picked == INSUFFICIENT:
                unsure += 1
            elif picked == by_n[r["n"]].ideal:
                right += 1
            else:
                wrong += 1
        precision = f"{right / (right + wrong):.2f}" if right + wrong else "-"
        rows.append(Row(name, f"{right} / {unsure} / {wrong}; {precision}"))
    for floor in (0.5, 0.6, 0.7, 0.8, 0.9):
        sure = sum(_sure_pick(r, floor) is not None for r in records)
        raw = sum(_sure_pick(r, floor, raw=True) is not None for r in records)
        rows.append(Row(f"one reading of the passages at {floor} (calibrated / raw)",
                        f"{sure} / {raw} of {len(records)}"))
    if stopped:
        rows.append(Row("not scored: sure after one reading", str(len(stopped))))
    print_table(f"LitQA2 part c: rules on the same letter readings, {len(records)} questions "
                "(correct / insufficient / wrong; precision)", rows)


def main() -> None:
    parser = argparse.ArgumentParser(description="Score every rule on recorded readings.")
    parser.add_argument("readings", help="a JSON-lines file of `litqa.py answer --readings`")
    parser.add_argument("--questions", default="1-41", help="question lines, e.g. 1,4,7-9")
    args = parser.parse_args()
    report(args.readings, select(load_questions(), args.questions, None))


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the checkout: scholarflow
    main()
