"""Retrieval: the read path. Hybrid search (`search`), its pure relevance and overlap rules, the per-scope
lexicon, access statistics, and the search and context APIs."""
