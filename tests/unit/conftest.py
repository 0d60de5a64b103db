"""The unit layer: tests of pure modules (rules, scoring, parsing, geometry) that need no PostgreSQL, Redis or
Django settings. `make test-unit` runs them alone in a few seconds, with the Django plugin off and the
suite's conftest (which starts the embedded servers) cut off, so a test here that touches the database or a
setting fails there; `make test` runs them first that way, then again with the whole suite."""
