"""The publish stage of the registry: a validated release folder to
``s3://BUCKET/PREFIX/v/<version>/``, the manifest last, then the ``latest`` pointer
(``emerge_lib.publish.upload``)."""

from __future__ import annotations

from emerge_lib.core.stage import Outcome, Stage, StageContext


def _publish(ctx: StageContext, _: None) -> Outcome:
    from emerge_lib.publish import client_for, publish_release

    settings = ctx.cfg.publish
    assert ctx.release_dir is not None and settings.to is not None  # _nowhere skips otherwise
    report = publish_release(ctx.release_dir, settings.to, client_for(ctx.cfg, ctx.s3_client),
                             workers=settings.workers, part_size_mb=settings.part_size_mb,
                             progress=ctx.on_transfer, on_total=ctx.on_transfer_total)
    note = (f"{report.version} → {report.target}"
            + (", already published" if report.already_published else "")
            + (", latest → this version" if report.latest_changed else ", latest unchanged"))
    return Outcome({}, {"files uploaded": report.uploaded_files,
                        "MB": report.uploaded_bytes / 1e6}, note, report)


def _nowhere(ctx: StageContext) -> str | None:
    if ctx.release_dir is None:
        return "no release folder given (--release)"
    if not ctx.cfg.publish.to:
        return "nowhere to publish: set publish.to (or --to s3://BUCKET/PREFIX)"
    return None


PUBLISH = Stage(
    name="publish", scope="release", reads=(), writes=(), settings=("publish", "s3"),
    run=_publish, summary="a validated release folder to s3://BUCKET/PREFIX/v/<version>/, "
    "manifest last, then the latest pointer", skip=_nowhere)
