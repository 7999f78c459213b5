"""Synthetic questions: golden samples (`golden`) and question writing, filtering and export
(`questions`)."""
