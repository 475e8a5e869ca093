"""`bench/litqa.py answer --readings FILE`: the readings behind each multiple-choice answer,
and the rules that could have been drawn from them.

nodes/option_pick.py asks the stem alone, answered in words: after the sentences of the
passages nearest it (`free_excerpt`), then, unless that names an option, after the
whole passages (`free`); unless one names an option, the letter over the passages with
the options as asked and, unless that reading is sure (`SURE_SHARE`), reversed. This
records each answer in words with the option it named (`named_excerpt`, `named`, as
option_free.read_on settled it), and each reading's letter shares, keyed by the
options' text, in a JSON-lines file, and scores every rule on the same readings, so the
shipped rule is compared with the others on the same model outputs (only questions
with both orders read are scored; the table counts the others):

- `as asked, floor F`: the best option of the reading as asked, if it holds F of it
  (the rule of the fourth session, F = 0.5);
- `mean of both orders, floor F`: the two readings averaged per option;
- `both orders agree, raw`: the option both readings rank first;
- `as asked if >= F, else both agree, raw`: the raw reading as asked alone when it is
  that sure, else the rule above;
- `free answer first, else ...`: the option the answers in words name
  (nodes/option_free.py; in files before the twelfth session's, the one answer after the
  whole passages), else the rule; shipped with the rule above it, at F = 0.5.

Files of sessions five to ten (bench/readings/) also hold each order's reading without
the passages (`prior`, `prior_reversed`), which those sessions divided out; the
eleventh session's hold the one as asked (`prior`). On them the rules that divide are
scored too:

- `as asked if >= F and calibrated first, else both agree calibrated by it` (shipped in
  the eleventh session at F = 0.5): the raw reading as asked when it is that sure and
  dividing by `prior` keeps its best first, else both orders divided letter by letter
  by `prior` agree;

- `both orders agree, first calibrated`: the reading as asked divided by its reading
  without passages, against the reversed reading as it is;
- `both orders agree, both calibrated`: each divided by its own reading without
  passages (the fifth session's rule);
- `as asked calibrated if >= F, else both agree` (shipped from the seventh to the tenth
  session at F = 0.5): the calibrated reading as asked alone when it is that sure, else
  the rule above.

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
    """Wrap option_pick.read_pick: record each question's answer in words and letter
    readings."""
    from scholarflow.nodes import answer as answer_node
    from scholarflow.nodes import option_pick

    by_asked = {q.asked(): q for q in questions}
    original = option_pick.read_pick
    original_letters = option_pick._letters
    original_free = option_pick.read_free

    async def read_pick(ctx: Any, head: Any, question: str, asked: Any, evidence: Any,
                        passages: Any, **kwargs: Any) -> Any:
        seen: dict[str, Shares | None] = {}  # by reading, whatever the order of calls
        said: dict[str, str | None] = {}
        flipped = option_pick.reversed_order(asked)
        flipped_text = option_pick.options_question(flipped)

        async def letters(ctx: Any, prompt: Any, *args: Any) -> Any:
            shares = await original_letters(ctx, prompt, *args)
            shown = flipped if flipped_text in prompt[-1][1] else asked
            name = ("as_asked" if shown is asked else "reversed") if len(prompt) > 1 else (
                "prior" if shown is asked else "prior_reversed")
            seen[name] = _by_text(shown, shares)
            return shares

        async def free(*args: Any, **kwargs: Any) -> Any:
            named, line = await original_free(*args, **kwargs)
            # After the sentences nearest the stem, or the whole passages (`passages`).
            which = "" if args[3] is passages else "_excerpt"
            said[f"free{which}"] = line
            # As named after the passages were read (option_free.read_on), not the words alone.
            said[f"named{which}"] = asked.options[asked.letters.index(named)] if named else None
            return named, line

        option_pick._letters = letters  # type: ignore[assignment]
        option_pick.read_free = free  # type: ignore[assignment]
        try:
            chosen, usage = await original(ctx, head, question, asked, evidence, passages,
                                           **kwargs)
        finally:
            option_pick._letters = original_letters
            option_pick.read_free = original_free
        q = by_asked.get(question)
        if q is not None:
            record: dict[str, Any] = {"n": q.n, **said, **seen}
            with Path(path).open("a", encoding="utf-8") as out:  # noqa: ASYNC230
                out.write(json.dumps(record, ensure_ascii=False) + "\n")
        return chosen, usage

    answer_node.read_pick = read_pick  # type: ignore[assignment]


def _by_text(shown: Any, shares: dict[str, float] | None) -> Shares | None:
    if shares is None:
        return None
    return {text: shares[k] for k, text in zip(shown.letters, shown.options, strict=True)}


# A letter the model all but never gave without passages was divided by this at least:
# dividing by ~0 would hand it the whole choice for a trace of probability.
PRIOR_FLOOR = 0.01


def _calibrated(shares: Shares, prior: Shares) -> Shares:
    """`shares` divided option by option by `prior` (the reading without the passages),
    summing to one again: option_pick's rule in sessions five to eleven."""
    moved = {k: p / max(prior.get(k, 0.0), PRIOR_FLOOR) for k, p in shares.items()}
    total = sum(moved.values()) or 1.0
    return {k: p / total for k, p in moved.items()}


def _best(shares: Shares) -> str:
    return max(shares, key=lambda k: shares[k])


Rule = Callable[[dict[str, Any]], str | None]
Reading = Callable[[dict[str, Any]], Shares]


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


def _agree(first: Reading, second: Reading) -> Rule:
    def rule(r: dict[str, Any]) -> str | None:
        best = _best(first(r))
        return best if best == _best(second(r)) else None
    return rule


def _sure_else(floor: float, first: Reading, otherwise: Rule) -> Rule:
    """The best option of `first` (the reading as asked) when it holds `floor` of it, else
    `otherwise` (the reversed order read too)."""
    def rule(r: dict[str, Any]) -> str | None:
        shares = first(r)
        best = _best(shares)
        return best if shares[best] >= floor else otherwise(r)
    return rule


def _free_first(otherwise: Rule) -> Rule:
    """The option the answer in words named (`named`, set by `report`), else `otherwise`."""
    def rule(r: dict[str, Any]) -> str | None:
        return r["named"] if r.get("named") else otherwise(r)
    return rule


def _raw(name: str) -> Reading:
    return lambda r: r[name]


def _as_calibrated(name: str, prior: str) -> Reading:
    return lambda r: _calibrated(r[name], r[prior])


_RAW_AGREE = _agree(_raw("as_asked"), _raw("reversed"))
_BOTH_AGREE = _agree(_as_calibrated("as_asked", "prior"),
                     _as_calibrated("reversed", "prior_reversed"))
_SESSIONS_7_10 = _sure_else(0.5, _as_calibrated("as_asked", "prior"), _BOTH_AGREE)
# Both orders divided by the one reading without passages, letter by letter.
_ONE_PRIOR_AGREE = _agree(_as_calibrated("as_asked", "prior"),
                          _as_calibrated("reversed", "prior_by_letter"))


def _session_11(floor: float) -> Rule:
    """option_pick.read_pick at SURE_SHARE = `floor`: the raw reading as asked when it is
    that sure and calibration keeps its best first, else both orders calibrated by the one
    reading without passages agree."""
    def rule(r: dict[str, Any]) -> str | None:
        first = r["as_asked"]
        best = _best(first)
        if first[best] >= floor and _best(_calibrated(first, r["prior"])) == best:
            return best
        return _ONE_PRIOR_AGREE(r) if r.get("reversed") else None
    return rule


RULES: list[tuple[str, Rule]] = [
    *[(f"as asked, floor {f}", _floor("as_asked", f)) for f in (0.0, 0.3, 0.5)],
    *[(f"mean of both orders, floor {f}", _floor("mean", f)) for f in (0.0, 0.3, 0.5)],
    ("both orders agree, raw", _RAW_AGREE),
    *[(f"as asked if >= {f}, else both agree, raw", _sure_else(f, _raw("as_asked"), _RAW_AGREE))
      for f in (0.4, 0.5, 0.6)],
    ("free answer first, else as asked if >= 0.5, else both agree, raw (shipped)",
     _free_first(_sure_else(0.5, _raw("as_asked"), _RAW_AGREE))),
]
# With the reading without passages as asked (every file) and reversed (sessions 5-10).
CALIBRATED_RULES: list[tuple[str, Rule, str]] = [
    ("both orders agree, calibrated by the one reading without passages",
     _ONE_PRIOR_AGREE, "prior"),
    *[(f"as asked if >= {f} and calibrated first, else both agree calibrated by it",
       _session_11(f), "prior") for f in (0.4, 0.5, 0.6)],
    ("free answer first, else the rule above at 0.5 (eleventh session)",
     _free_first(_session_11(0.5)),
     "prior"),
    ("both orders agree, each calibrated by its own reading without passages",
     _BOTH_AGREE, "prior_reversed"),
    ("as asked calibrated if >= 0.5, else that (sessions 7-10)", _SESSIONS_7_10,
     "prior_reversed"),
    ("free answer first, else that", _free_first(_SESSIONS_7_10), "prior_reversed"),
]


def _named(r: dict[str, Any], q: Question) -> str | None:
    """The option text the recorded answers in words name, if any: as recorded (files since
    the twelfth session: after the sentences nearest the stem first), else as the words
    of the one answer (`free`) name it."""
    from scholarflow.nodes.option_free import free_option
    from scholarflow.nodes.options import Options

    if "named" in r or "named_excerpt" in r:
        return r.get("named_excerpt") or r.get("named")
    if not r.get("free"):
        return None
    letter = free_option(r["free"], Options(q.question, tuple(q.options), tuple(q.letters)))
    return q.options[q.letters.index(letter)] if letter else None


def _by_letter(r: dict[str, Any], q: Question) -> dict[str, Any]:
    """The reading without passages as asked, keyed by the option each letter stands for
    in the reversed order (`prior_by_letter`): option_pick divides the reversed reading by
    it letter by letter."""
    if not r.get("prior"):
        return {}
    shown = q.options[::-1]
    return {"prior_by_letter": {shown[i]: r["prior"][text] for i, text in enumerate(q.options)}}


def report(path: str, questions: Sequence[Question]) -> None:
    """Every rule's correct / insufficient / wrong on the readings recorded in `path`."""
    by_n = {q.n: q for q in questions}
    records = [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines()]
    records = [{**r, "named": _named(r, by_n[r["n"]]), **_by_letter(r, by_n[r["n"]])}
               for r in records if r["n"] in by_n]
    named = sum(1 for r in records if r["named"] and not r.get("reversed"))
    stopped = [r for r in records if not r.get("reversed")]
    records = [r for r in records if r.get("reversed")]
    scored: list[tuple[str, Rule, list[dict[str, Any]]]] = [
        (name, rule, records) for name, rule in RULES]
    scored += [(name, rule, [r for r in records if r.get(needs)])
               for name, rule, needs in CALIBRATED_RULES]
    rows = []
    for name, rule, among in scored:
        if not among:
            continue
        right = unsure = wrong = 0
        for r in among:
            picked = rule(r)
            if picked is None or picked == INSUFFICIENT:
                unsure += 1
            elif picked == by_n[r["n"]].ideal:
                right += 1
            else:
                wrong += 1
        precision = f"{right / (right + wrong):.2f}" if right + wrong else "-"
        of = "" if len(among) == len(records) else f" (of {len(among)})"
        rows.append(Row(name + of, f"{right} / {unsure} / {wrong}; {precision}"))
    if stopped:
        rows.append(Row("not scored: named by the answer in words / sure after one reading",
                        f"{named} / {len(stopped) - named}"))
    print_table(f"LitQA2 part c: rules on the same readings, {len(records)} questions "
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
