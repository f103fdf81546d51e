"""Pieces the method packages share, below them (no module here imports a method package): scratch
databases (``scratch.py``) for schema slices (``slicer.py``, ``slices.py``), typed DataFrames
(``frames.py``), table grouping (``grouping.py``), lexical linking (``linking.py``), bounded exploratory
queries (``probes.py``) and the question's literal terms (``terms.py``)."""
