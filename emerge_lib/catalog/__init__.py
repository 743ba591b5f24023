"""The catalog: every Delta table's name, schema, partitioning, write mode, producers and
consumers (``specs``), the guarded reads and writes (``catalog``), and the SQL vocabulary
the relational stages share (``sql``).

Imports only ``emerge_lib.core``. The names below are the catalog's face; import them
from here.
"""

from __future__ import annotations

from emerge_lib.catalog.catalog import Catalog, WriteResult
from emerge_lib.catalog.specs import (
    TABLES,
    CatalogError,
    CommitConflictError,
    TableSpec,
    spark_type,
    spec,
)

__all__ = ["TABLES", "Catalog", "CatalogError", "CommitConflictError", "TableSpec",
           "WriteResult", "spark_type", "spec"]
