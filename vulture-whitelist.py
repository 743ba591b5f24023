"""What vulture (`make lint`: the dead-code finder) cannot see used, each with why it is.

vulture reads emerge_lib, dags, benchmarks and scripts (pyproject.toml [tool.vulture]);
tests are not read, so code only tests use counts as dead and goes, unless a reason here
keeps it. A name below is "used" for vulture; nothing here runs.
"""
# ruff: noqa: B018, F821

# Frameworks call these by name: the package's lazy load_release; Airflow's hook attributes,
# provider entry point (pyproject.toml), trigger serialization, operator colour and deferral
# callback; pydantic's model_config and field validators; multiprocessing's _Popen hook;
# expat's parser attributes; relik's document index
__getattr__  # emerge_lib/__init__.py
conn_name_attr, default_conn_name, conn_type, hook_name  # emerge_lib/airflow/hooks.py
get_provider_info  # emerge_lib/airflow/provider.py
_.serialize  # emerge_lib/airflow/triggers.py
ui_color  # emerge_lib/airflow/waits.py
_.execute_complete  # emerge_lib/airflow/waits.py
model_config  # emerge_lib/core/config.py
_._endpoint, _._url, _._dates, _._mirror, _._sorted_unique, _._range  # core/config.py
_._route_names, _._to, _._pre_draw, _._warehouse  # emerge_lib/core/config.py
_._wiki_names  # emerge_lib/core/config.py
_._Popen, _._launch  # emerge_lib/core/spawn.py
_.buffer_text, _.CharacterDataHandler  # emerge_lib/dumps/xml/escape.py
_.document_index  # emerge_lib/evaluation/adapters/relik.py
# llama.cpp's server parameters, read by xllamacpp's C++ server when it starts
_.model_alias, _.hostnames, _.n_parallel, _.n_threads, _.flash_attn_type  # curation/local_server.py

# The sample world's scenarios, run by name (emerge_lib/sample/plan.py: getattr(self, f"s_{name}"))
_.s_x_basic, _.s_e_basic, _.s_ee_new, _.s_ee_sitelink, _.s_ee_object, _.s_ee_kg
_.s_d_qualifier, _.s_d_removed, _.s_d_rank, _.s_d_month, _.s_e_underscore, _.s_e_redirect
_.s_x_move, _.s_end_outside, _.s_merge, _.s_vandalism, _.s_no_english, _.s_after_last
_.s_single_entity, _.s_rank_restored, _.s_window_addition_ended, _.s_removal_kept
_.s_rank_kept, _.s_removal_added_back, _.s_passage_before_removal, _.s_ee_kg_transient
_.s_merged_into_new, _.s_sparse_line, _.s_ee_kg_only, _.s_new_relation
_.s_removal_start_qualifier, _.s_title_colon, _.s_merged_before, _.s_repeat_mention
_.s_unparsed_two_operations

# Each table is declared once as a module constant; the declaration registers it in TABLES
STATEMENT_TIMELINE, ITEM_TIMELINE, PROPERTY_TIMELINE, PAGE_WATERMARKS, INGESTED_FILES
INGEST_REJECTS, PAGE_TIMELINE, PARAGRAPH_TIMELINE, PARAGRAPH_COVERAGE, STABLE_STATEMENTS
RECONCILED_PAGES, RECONCILED_LOGS, DUMP_PAGES
KG_TRIPLES, ENTITIES, DELTA_TRIPLES, INSTANCES, VERDICTS, SELECTION, VALIDATION_RESULTS

# Fields of reports and parsed records: written into JSON, logs or dataclasses.asdict, or
# read with getattr (the metrics' <metric>_hits), not by attribute name
_.failures  # emerge_lib/curation/client.py: a request's failed attempts
_.syncs  # emerge_lib/curation/journal.py: the journal's fsyncs
skipped_statements, _.fallbacks  # emerge_lib/dumps/wikidata.py: the parser's counts
header_at  # emerge_lib/dumps/sevenzip.py: where an archive's header starts
generator, case, schema_version  # emerge_lib/dumps/xml/page.py: the dump's siteinfo
role, contributor_deleted  # emerge_lib/dumps/xml/revision.py: a revision's fields
collisions, _.collisions  # emerge_lib/evaluation/adapters/relik.py: an index's report
recall_hits, completeness_hits  # emerge_lib/evaluation/metrics.py: getattr(f"{m}_hits")
unlisted, _.unlisted  # emerge_lib/formats/manifest.py: files a verification found extra
skipped_pages, replayed_pages, unchanged_pages, stale_pages  # ingest file summaries
moves, unexplained_moves  # emerge_lib/ingest/wikipedia/extract.py: title moves
raw_start, raw_end  # emerge_lib/text/wikitext.py: a paragraph's span in the wikitext

# The 7z format's property ids (7-Zip's 7zFormat.txt), kept as one table
K_EMPTY_FILE, K_DUMMY  # emerge_lib/dumps/sevenzip.py

# Public API that users call (documented) and the tests hold: the release's reading and
# writing helpers, the format's constants, the C scanner's Python specification, the
# sample worlds' variants
authors_timestamp_to_utc  # docs/data-model.md: the authors' timestamps as UTC
write_lines  # docs/using-a-release.md: the authors' files as typed Parquet
SOURCE_DELTA_TYPES  # emerge_lib/formats/format.py: the field's values
RAI_PROPERTIES  # emerge_lib/formats/croissant.py: the RAI vocabulary croissant.json keeps to
_.parse_scan  # emerge_lib/dumps/wikidata.py: what the C entity scanner must read exactly
VARIANT_SETTINGS  # emerge_lib/sample/compare.py: the worlds' semantics (tests/kits/worldchecks)

# Airflow's plugin manager reads these by name (plugins/emerge.py: the links of the
# ReleaseStep tasks and the api-server app behind them); a link's get_link gets the
# operator positionally and has no use for it
EmergePlugin, operator_extra_links, fastapi_apps  # plugins/emerge.py
_.operators, _.get_link, operator  # emerge_lib/airflow/links.py
release_file  # emerge_lib/airflow/links.py: a route of the app (FastAPI calls it)

# scripts/airflow-local.sh asks for it (the queues a worker serving every task listens to)
ALL_QUEUES  # emerge_lib/airflow/pools.py

# The stub's busy model: a fault the CeleryExecutor's pools test plays (tests/system/
# test_dags_celery.py: a held deprecations model keeps its pool's slot)
_.hold  # emerge_lib/curation/stub.py

# The subject the sample worlds give their garbage answer (unparsed-two-operations): the
# stub's garbage_for, as the curation rule tests pass it (tests/e2e/curation/test_rules.py)
GARBLED_SUBJECT  # emerge_lib/curation/stub.py
