"""The library: functions of data, with no knowledge of the run folder or the config. One
package per concept, in pipeline order:

- `ingest/`: reading documents, cleaning them and cutting them into chunks;
- `synth/`: golden samples and synthetic questions;
- `retrieval/`: retrievers, rerankers, IR metrics, BEIR folders;
- `judge/`: the relevance grader and Table 1, judge answers, how far judges can be trusted
  (human labels, known-answer controls), labelling samples and prediction-powered estimates;
- `answer/`: answers, their judges, citations, claims, the refusal gate, Table 2;
- `report/`: findings and verdicts, power, plots, tables, the report template format;
- `llm/`: model backends, the call cache, the embedded models, prompt rendering and the dry-run
  stand-in that `spacelm plan` runs the stages with.

At the top: `io` (reading and writing files), `stats` (intervals and tests), `names` (every
run-folder file name), `records` (typed records at the boundaries), `sample` (the n a table rests
on), `redact`, `deps`, `progress`."""
