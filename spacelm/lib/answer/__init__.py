"""Answers: generation, the answer judges and Table 2 (`answers`), claims (`claims`), citations
(`citations`), deterministic fact checks (`facts`), the refusal gate (`gate`), answerability
(`answerability`)."""
