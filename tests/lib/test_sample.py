from spacelm.lib.sample import per_task_means, sample_size


def test_sample_size_counts_questions_chunks_documents_and_tasks():
    qs = [
        {"qid": "a", "task": "direct_qa", "source_chunk_id": "d1:0", "doc_id": "d1"},
        {"qid": "b", "task": "analysis", "source_chunk_id": "d1:0", "doc_id": "d1"},
        {"qid": "c", "task": "analysis", "source_chunk_id": "d2:4", "doc_id": "d2"},
    ]
    s = sample_size(qs)
    assert (s.questions, s.source_chunks, s.documents) == (3, 2, 2)
    assert s.per_task == {"direct_qa": 1, "analysis": 2}
    assert s.text() == "3 questions from 2 source chunks in 2 documents (analysis 2, direct_qa 1)"


def test_per_task_means_by_hand():
    rows = [
        {"system": "bm25", "task": "t1", "ndcg": 1.0},
        {"system": "bm25", "task": "t1", "ndcg": 0.0},
        {"system": "bm25", "task": "t2", "ndcg": 0.5},
    ]
    df = per_task_means(rows, ["system"], ["ndcg"])
    got = {r["task"]: (r["n"], r["ndcg"]) for r in df.to_dict("records")}
    assert got == {"t1": (2, 0.5), "t2": (1, 0.5)}
