"""`bench_compare`: two `bench_retrieval --details` files compared question by question (no database)."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import CommandError, call_command

from apps.memories.benchmarks import compare


def line(conversation, question, evidence, ranked, category="single-hop"):
    return {
        "conversation": conversation,
        "question": question,
        "category": category,
        "evidence": evidence,
        "ranked": ranked,
    }


FILLER = [f"D9:{index}" for index in range(1, 20)]

BEFORE = [
    line("conv-26", "q1", ["D1:1"], ["D1:1", *FILLER]),  # first at 1
    line("conv-26", "q2", ["D1:2"], [*FILLER[:3], "D1:2", *FILLER[3:]]),  # first at 4
    line("conv-44", "q3", ["D1:3", "D1:4"], [*FILLER[:12], "D1:3", "D1:4"]),  # outside the top 10
    line("conv-44", "q4", ["D1:5"], ["D1:5", *FILLER], category="temporal"),
    line("conv-44", "q5", [], FILLER),  # no evidence: left out
]
AFTER = [
    line("conv-26", "q1", ["D1:1"], [*FILLER[:1], "D1:1", *FILLER[1:]]),  # down to 2: lower, still found
    line("conv-26", "q2", ["D1:2"], ["D1:2", *FILLER]),  # up to 1
    line("conv-44", "q3", ["D1:3", "D1:4"], ["D1:3", *FILLER]),  # half its evidence now in the top 10: won
    line("conv-44", "q4", ["D1:5"], [*FILLER[:11], "D1:5"], category="temporal"),  # lost
    line("conv-44", "q5", [], FILLER),
]


def test_each_question_is_won_lost_raised_or_lowered_per_half_and_category():
    groups = compare.table("LoCoMo session", BEFORE, AFTER, k=10)
    assert list(groups) == ["all", "tune half", "report half"]
    overall = groups["all"][-1]
    assert overall.label == "overall" and overall.n == 4
    assert (overall.before, overall.after) == (0.75, 0.625)  # R@10: (1 + 1 + 0 + 1) / 4 → (1 + 1 + 0.5 + 0) / 4
    assert (overall.won, overall.lost) == (1, 1)
    assert (overall.up, overall.down) == (2, 2)  # q2, q3 up; q1, q4 down
    assert overall.mrr_before == pytest.approx((1 + 1 / 4 + 0 + 1) / 4, abs=1e-4)
    assert overall.mrr_after == pytest.approx((1 / 2 + 1 + 1 + 0) / 4, abs=1e-4)
    tune = groups["tune half"][-1]
    assert (tune.n, tune.won, tune.lost, tune.up, tune.down) == (2, 0, 0, 1, 1)
    report = {row.label: row for row in groups["report half"]}
    assert (report["single-hop"].won, report["temporal"].lost) == (1, 1)


def test_beam_counts_a_question_found_when_any_of_its_evidence_is_in_the_top_k():
    before = [line("beam-1", "q", ["4", "9"], ["1", "2", "9"])]
    after = [line("beam-1", "q", ["4", "9"], ["1", "2", "3"])]
    (overall,) = compare.table("BEAM session", before, after, k=10)["all"][-1:]
    assert (overall.before, overall.after, overall.lost) == (1.0, 0.0, 1)
    assert compare.table("LoCoMo session", before, after, k=10)["all"][-1].before == 0.5  # R: half of it


def test_the_command_prints_every_phase_both_files_hold(tmp_path):
    old, new = tmp_path / "old.json", tmp_path / "new.json"
    old.write_text(json.dumps({"LoCoMo session": {"fresh": BEFORE, "settled": BEFORE}}))
    new.write_text(json.dumps({"LoCoMo session": {"fresh": AFTER}}))
    out = io.StringIO()
    call_command("bench_compare", str(old), str(new), stdout=out)
    text = out.getvalue()
    assert "LoCoMo session · fresh: R@10" in text and "settled" not in text
    assert "[report half]" in text


def test_the_command_says_what_is_wrong_with_its_input(tmp_path):
    good, other, broken = tmp_path / "good.json", tmp_path / "other.json", tmp_path / "broken.json"
    good.write_text(json.dumps({"LoCoMo session": {"fresh": BEFORE}}))
    other.write_text(json.dumps({"BEAM session": {"fresh": BEFORE}}))
    broken.write_text(json.dumps({"LoCoMo session": {"fresh": [{"question": "q"}]}}))
    with pytest.raises(CommandError, match="cannot read"):
        call_command("bench_compare", str(tmp_path / "missing.json"), str(good))
    with pytest.raises(CommandError, match="share no dataset and phase"):
        call_command("bench_compare", str(good), str(other))
    with pytest.raises(CommandError, match="not a details line"):
        call_command("bench_compare", str(broken), str(good))
    for k in (0, 26):  # a details line keeps a question's first 25 turns
        with pytest.raises(CommandError, match="--k must be between 1 and 25"):
            call_command("bench_compare", str(good), str(good), k=k)
