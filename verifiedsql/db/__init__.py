"""The user's database as the pipeline reads it: read-only execution through the guard
(``database``), bulk reflection from the engine's catalog (``catalog_reflect``) and the
engine-independent schema model (``schema``); batched sample reads (``samples``) where present."""
