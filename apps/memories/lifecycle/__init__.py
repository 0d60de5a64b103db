"""The lifecycle of stored memories, off the request path: the sweep of lost consolidations (`scheduling`), the deferred
consolidation of a conversation (`deferred`), the idle-session flush (`session_flush`), the memory processor
(`processor`), and the 6-hourly periodic run (`periodic`, the complete list: `periodic_steps` — decay,
pruning, purging — `compression`, `intelligence`, `insights`); every job logged as a run (`runs`)."""
