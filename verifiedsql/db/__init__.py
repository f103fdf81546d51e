"""The user's database as the pipeline reads it: read-only execution through the guard and reflection with
sample values (``database``), bulk reflection from the engine's catalog (``catalog_reflect``), sample values
read in batches (``samples``), and the engine-independent schema model (``schema``)."""
