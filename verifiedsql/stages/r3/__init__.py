"""R3: reviewer agents, review-rebuttal-revision (docs/papers.md: R3, section 3 and appendix A.6).

Options ``review``, ``review_rounds``; report ``review``; stage ``PeerReviewStage`` (a pool stage) in
``review.py``; prompts in ``prompts.py``.
"""

from .review import PeerReviewStage

__all__ = ["PeerReviewStage"]
