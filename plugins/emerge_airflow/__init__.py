"""Airflow-side glue for emerge: the Assets the DAGs share, hooks that turn connections
into configuration (engine, LLM workers, S3), the deferrable wait and its trigger, and the
one function every stage task calls. The plugins folder is on ``sys.path`` in every
Airflow process (scheduler, dag-processor, workers, triggerer), so this package imports as
``emerge_airflow``. The library (``emerge_lib``) never imports Airflow; this package is
where the two meet. Nothing heavy at import time: DAG files import it while parsing.
"""
