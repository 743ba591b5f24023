"""Human annotation of a release, and the paper's agreement table (docs/annotation.md).

- ``release``: a release folder read for annotation (its lines by ``hash_id``, the
  relations' definitions) and annotation files read and merged as the authors merge them;
- ``sample``: ``emerge annotate export``: a stratified sample, N per operation (the
  authors' s09a/s09b design, seeded), as Label Studio tasks and as EMERGE JSONL;
- ``labelstudio``: the labeling config, the tasks, and the reading of a Label Studio JSON
  export (no server here: Label Studio runs as its own service, scripts/labelstudio-local.sh);
- ``importer``: ``emerge annotate import``: verdicts into ``human_annotation/`` of a release,
  in the authors' ``human_assessment`` format, then validation, card and manifest;
- ``agreement``: Cohen's κ, Fleiss' κ, Krippendorff's α per operation and overall, paired as
  the authors' s09e pairs them (scikit-learn, statsmodels, krippendorff);
- ``disagreements``: the items where the raters differ (the authors' s09d), as tasks that
  import back as a third, resolving annotator.

Imports core, curation (the paper's prompts), the release's format, manifest, card and
writer (the card written again), and validation (the gate on the annotation file).
"""
