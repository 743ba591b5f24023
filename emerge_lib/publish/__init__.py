"""Publishing a release to S3 and fetching it back, verified (not built yet; the
[release] issue builds it).

Will upload a release folder data first and manifest last, and ``emerge download`` will
verify every file against the manifest's checksums.
"""
