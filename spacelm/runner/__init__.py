"""The stage machinery: the `Stage` declaration and `execute` (base), what makes a stage stale
(code_reach, provenance), the run folder's files (data), the manifest, the run lock and the run
log. The stages in `spacelm/stages` are built on it; it imports none of them."""
