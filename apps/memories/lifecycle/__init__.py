"""The lifecycle of stored memories, off the request path: deferred consolidation (`consolidation`,
`scheduling`, `sessions`), the memory processor (`processor`), and the 6-hourly periodic run (`periodic`
driving `periodic_steps`: decay, compression, pruning, purging; `insights`, `intelligence`)."""
