"""Scoring predictions: recall and completeness per operation and snapshot (not built yet;
the [evaluate] issue builds it).

Will read released EMERGE JSONL (ours and the authors') and predictions, and must import
without Spark, Sail, Delta or Airflow (``pip install emerge[eval]``).
"""
