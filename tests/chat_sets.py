"""A chat in REALTALK's layout (apps/memories/benchmarks/chats.py), shared by the loader's unit tests and the
bench_retrieval command's test."""

CHAT = {
    "name": {"speaker_1": "Emi", "speaker_2": "Elise"},
    "session_1_date_time": "29.12.2023, 14:00:00",
    "session_1": [
        {
            "dia_id": "D1:1",
            "speaker": "Emi",
            "clean_text": "omg i finally finished the scarf",
            "date_time": "29.12.2023, 14:05:09",
        },
        {"dia_id": "D1:2", "speaker": "Elise", "clean_text": "", "text": "", "blip_caption": "a photo of a red scarf"},
        {"dia_id": "D1:3", "speaker": "Elise", "clean_text": "", "date_time": "29.12.2023, 14:07:00"},
    ],
    "session_2_date_time": "02.01.2024, 09:30:00",
    "session_2": [
        {"dia_id": "D2:1", "speaker": "Emi", "clean_text": "knitting a hat next", "text": "knitting a hat next!!"},
        {"dia_id": "D2:2", "speaker": "Elise", "clean_text": "nice", "date_time": "02.01.2024, 11:00:00"},
    ],
    "events_session_1": {"agent_a": [], "agent_b": []},
    "qa": [
        {"question": "What does Emi knit?", "answer": "a scarf and a hat", "evidence": ["D1:1; D2:1"], "category": 1},
        {"question": "When did Emi finish the scarf?", "answer": "29 Dec 2023", "evidence": ["D1:1"], "category": 2},
        {"question": "Would Emi like a yarn shop?", "answer": "yes", "evidence": ["D2:1"], "category": "3"},
        {"question": "What colour was the scarf?", "answer": "red", "evidence": ["D1:2"], "category": "visual"},
    ],
}
