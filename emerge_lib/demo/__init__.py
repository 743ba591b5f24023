"""The demo job: the whole pipeline on a generated world (``local``: in this process;
``dagtest``: the snapshot DAG through ``airflow dags test``), both from the world that
``world`` makes once."""
