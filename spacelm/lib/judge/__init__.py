"""Judges and how far to trust them: reading judge answers (`scores`), relevance grading and
Table 1 (`relevance`), the calibrated grader (`calibrated`), checks against human labels and
known-answer controls (`validity`), labelling samples (`labelling`), prediction-powered
estimates (`ppi`)."""
