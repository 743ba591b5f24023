"""Airflow-side glue for emerge, the one room of emerge_lib that imports Airflow: the
Assets the DAGs share (``assets``), hooks that turn connections into configuration
(``hooks``: engine, LLM workers, S3), the deferrable wait and its trigger (``waits``,
``triggers``), the DAG params generated from the run's declaration (``params``), the one
function every task calls (``runtime``), and the provider entry point that registers the
connection types (``provider``: emerge is installed as an Airflow provider package, so
every Airflow process finds this package on its own, with no plugins folder on sys.path).

Nothing heavy at import time: DAG files import it while parsing.
"""
