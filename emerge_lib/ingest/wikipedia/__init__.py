"""English Wikipedia: revisions → page and paragraph intervals for the snapshots' ranges
(``extract``, per file), the ranges the warehouse covers (``coverage``) and the commit
(``commit``)."""
