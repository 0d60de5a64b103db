"""Retrieval: the read path. Hybrid search (`search`, the assembly of `query`, `candidates` and `rerank`; `types`
what it hands out), its pure relevance, ranker, signal and overlap rules, the per-scope lexicon, access
statistics, and the search and context APIs."""
