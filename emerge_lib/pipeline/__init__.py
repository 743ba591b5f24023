"""Running stages: the registry of every stage (``registry``), the one door that runs
any of them (``runner.run_stage``) and a whole build (``runner.build_dataset``), the
ingest as separately mapped steps (``mapped``), a stage's small state files (``state``),
readiness checks for inputs still to come (``waits``), one orchestrated run's params
(``runs``), opening a stage context with its engine session (``context``), and the
daily adds/changes ingest (``incr``).

Above every domain room; knows nothing of Airflow (``emerge_lib.airflow`` calls it).
"""
