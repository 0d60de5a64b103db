"""The store: the one write path of semantic memory (`writing`: dedup → reinforce, supersede, create, with
embeddings), edits by people (`editing`) and operators (`operations`), revisions, and re-embedding."""
