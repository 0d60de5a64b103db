"""How the local embedder cuts a call into runs (`length_batches`) and shares them among its threads
(`cost_shares`): pure arithmetic on token counts. The vectors themselves do not depend on the runs
(tests/core/test_embeddings.py: a batch equals its texts one by one, one caller equals three)."""

from apps.core.embeddings import cost_shares, length_batches, run_cost


def _padded(lengths, runs):
    return sum(len(run) * max(lengths[index] for index in run) for run in runs)


def test_every_text_is_in_one_run_of_at_most_the_batch_size_sorted_by_length():
    lengths = [(index * 37) % 90 + 5 for index in range(70)]
    runs = length_batches(lengths, max_rows=8)
    assert sorted(index for run in runs for index in run) == list(range(70))
    assert all(1 <= len(run) <= 8 for run in runs)
    flat = [lengths[index] for run in runs for index in run]
    assert flat == sorted(lengths)


def test_a_long_text_gets_a_run_of_its_own_instead_of_padding_seven_short_ones():
    lengths = [12, 14, 11, 13, 12, 15, 14, 160]
    runs = length_batches(lengths, max_rows=8)
    assert [sorted(lengths[index] for index in run) for run in runs] == [[11, 12, 12, 13, 14, 14, 15], [160]]
    assert _padded(lengths, runs) == 7 * 15 + 160  # against 8 * 160 in one run


def test_texts_of_one_length_fill_whole_runs():
    assert [len(run) for run in length_batches([40] * 16, max_rows=8)] == [8, 8]
    assert length_batches([], max_rows=8) == []


def test_runs_pad_less_than_fixed_runs_of_the_batch_size_on_chat_like_lengths():
    """The case that made ingest do 8% more work per turn than the bound: ~70 texts of 5 to 200 tokens a call,
    fixed runs of 8 padded them by 12%. The cut costs less by the same measure it minimises."""
    lengths = [5 + (index * index * 7) % 60 + (120 if index % 17 == 0 else 0) for index in range(70)]
    order = sorted(range(70), key=lambda index: lengths[index])
    fixed = [order[first : first + 8] for first in range(0, 70, 8)]
    runs = length_batches(lengths, max_rows=8)

    def cost(cut):
        return sum(run_cost(len(run), max(lengths[index] for index in run)) for run in cut)

    assert cost(runs) < cost(fixed)
    assert _padded(lengths, runs) / sum(lengths) < 1.05 < _padded(lengths, fixed) / sum(lengths)


def test_threads_get_runs_of_about_equal_cost_and_none_is_left_empty():
    lengths = [100] * 8 + [10] * 16
    runs = [list(range(0, 8)), list(range(8, 16)), list(range(16, 24))]  # one costly run, two cheap ones
    shares = cost_shares(runs, lengths, 2)
    assert sorted(len(share) for share in shares) == [1, 2]  # the costly run alone, the two cheap together
    assert [runs[0]] in shares
    assert cost_shares(runs[:1], lengths, 3) == [[runs[0]]]
