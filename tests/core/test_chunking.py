import pytest

from apps.core.chunking import semantic_chunks
from apps.core.tokens import count_tokens


def words(text: str) -> int:
    """A token counter whose counts are obvious when reading the cases."""
    return len(text.split())


@pytest.mark.parametrize("text", ["", "   ", "\n\n \n\n\t"], ids=["empty", "spaces", "blank-lines"])
def test_blank_text_has_no_chunks(text):
    assert semantic_chunks(text, count=words) == []


@pytest.mark.parametrize(
    ("text", "max_tokens", "min_tokens", "expected"),
    [
        pytest.param(
            "One two three.\n\nFour five six.",
            10,
            2,
            ["One two three.", "Four five six."],
            id="paragraphs-within-bounds-stay-apart",
        ),
        pytest.param(
            "  One two three.  \n \t\n  Four five six.\n",
            10,
            2,
            ["One two three.", "Four five six."],
            id="whitespace-only-line-is-a-blank-line",
        ),
        pytest.param(
            "Hi.\n\nThis paragraph has enough words.\n\nAnother paragraph with enough words.",
            10,
            3,
            ["Hi.\n\nThis paragraph has enough words.", "Another paragraph with enough words."],
            id="small-merges-with-following",
        ),
        pytest.param(
            "First paragraph has enough words.\n\nBye.",
            10,
            3,
            ["First paragraph has enough words.\n\nBye."],
            id="last-small-merges-backwards",
        ),
        pytest.param(
            "Hi.\n\nOne two three four five.",
            5,
            3,
            ["Hi.", "One two three four five."],
            id="merge-never-exceeds-max",
        ),
        pytest.param(
            "Alpha beta gamma.\n\nHi.\n\nOne two three four five.",
            5,
            3,
            ["Alpha beta gamma.\n\nHi.", "One two three four five."],
            id="following-too-big-so-merges-backwards",
        ),
        pytest.param(
            "A.\n\nB.\n\nC.\n\nD e f g.",
            10,
            3,
            ["A.\n\nB.\n\nC.", "D e f g."],
            id="merges-repeat-until-min",
        ),
        pytest.param(
            "Only a few words.",
            300,
            50,
            ["Only a few words."],
            id="text-shorter-than-min-is-one-chunk",
        ),
        pytest.param(
            "One two three. Four five six. Seven eight nine ten.",
            6,
            1,
            ["One two three. Four five six.", "Seven eight nine ten."],
            id="long-paragraph-packs-sentences",
        ),
        pytest.param(
            "Really? Yes! Done.",
            2,
            1,
            ["Really? Yes!", "Done."],
            id="question-and-exclamation-end-sentences",
        ),
        pytest.param(
            "See e.g. this case. Then more.",
            4,
            1,
            ["See e.g. this case.", "Then more."],
            id="no-boundary-before-lowercase",
        ),
        pytest.param(
            "a b c d e f g h i j k",
            4,
            1,
            ["a b c d", "e f g h", "i j k"],
            id="long-sentence-split-between-words",
        ),
        pytest.param(
            "Short one. " + "Word " * 9 + "end",
            5,
            1,
            ["Short one.", "Word Word Word Word Word", "Word Word Word Word end"],
            id="only-the-long-sentence-is-cut",
        ),
        pytest.param(
            "Short one.\n\nTiny.",
            1,
            1,
            ["Short", "one.", "Tiny."],
            id="max-one-word",
        ),
    ],
)
def test_semantic_chunks_with_word_counts(text, max_tokens, min_tokens, expected):
    assert semantic_chunks(text, max_tokens=max_tokens, min_tokens=min_tokens, count=words) == expected


def test_single_word_over_max_is_cut_between_characters():
    assert semantic_chunks("abcdefghij", max_tokens=3, min_tokens=1, count=len) == ["abc", "def", "ghi", "j"]


def test_max_tokens_must_be_positive():
    with pytest.raises(ValueError, match="max_tokens"):
        semantic_chunks("text", max_tokens=0, count=words)


def test_default_counter_is_tiktoken():
    assert semantic_chunks("hello world") == ["hello world"]
    # "hello world" is 2 tokens: with max 1 it is cut between the words
    assert semantic_chunks("hello world", max_tokens=1, min_tokens=1) == ["hello", "world"]


def test_document_chunks_stay_within_token_bounds():
    paragraphs = [
        " ".join(f"Sentence {paragraph}.{number} talks about the dog Bruno and his walks." for number in range(40))
        for paragraph in range(3)
    ]
    text = "\n\n".join([*paragraphs, "Signed, the owner."])

    chunks = semantic_chunks(text)

    counts = [count_tokens(chunk) for chunk in chunks]
    assert all(50 <= count <= 300 for count in counts), counts
    assert len(chunks) == 6
    # nothing is lost or reordered: the chunks are the text's own pieces
    assert " ".join(" ".join(chunks).split()) == " ".join(text.split())
    assert chunks[-1].endswith("Signed, the owner.")
    assert all(chunk.startswith("Sentence ") for chunk in chunks)
