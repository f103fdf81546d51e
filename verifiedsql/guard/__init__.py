"""The guard: everything that keeps the user's database and the host safe from generated SQL and
model-written code. The statement guard (``safety``) and the engine guard (``readonly``) are the two
layers every generated statement passes; the other modules are theirs: function calls and
allowlists, the schema boundary, bounds on time and size, session state, privileges, the caller's
hooks and transactions, redaction, error echoes, the sandbox for model-written pandas."""
