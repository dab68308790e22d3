# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Distribute a model's folder of a Hugging Face hub cache from the head to the workers, in parallel and in a
cut-through chain: :func:`distribute`, what the module ``snapshot_distribute`` runs.

Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.

The repo folder (``<cache>/models--<org>--<name>``) holds ``blobs/<etag>`` (the content), ``snapshots/<commit>/<path>``
(relative symlinks ``../../blobs/<etag>``) and ``refs/<revision>`` (the commit). It is copied to the same path on
every target, in two steps:

1. **Blobs.** The plan (:mod:`._snapshot_plan`) lists the head's blobs and what every target holds; the scheduler
   (:mod:`._snapshot_scheduler`) turns it into jobs, cut-through along the chain or by rsync link by link, and runs
   them, at most ``streams`` on each link at once. Blobs are plain files: rsync sends them with ``-rt``
   (:data:`._snapshot_transport.BLOB_OPTIONS`: contents and mtimes, no symlinks, devices, specials, owner, group or
   permissions; a new file gets the source's permission bits less the receiver's umask, never setuid, setgid or
   sticky), and the relay gives its copy the source's permission bits only (``mode & 0o777``).
2. **Metadata.** Once every blob is everywhere, ``snapshots/`` then ``refs/`` go from the head to each target with
   ``rsync -a --itemize-changes`` (:func:`sync_metadata`: symlinks as symlinks; refs last, so that a ref never names a
   snapshot a target lacks).

How a node is reached is a :class:`._snapshot_transport.Transport` (:class:`._snapshot_transport.SshTransport`: ssh,
rsync and the relay over the fabric); what was done is a :class:`._snapshot_result.Result`; a failure is a
:class:`._snapshot_errors.DistributeError` that carries the result so far.
"""

from __future__ import annotations

import os
import time
import typing as t
from concurrent.futures import ThreadPoolExecutor

from ansible_collections.sparkops.inference.plugins.module_utils._run_command import Runner, run_command
from ansible_collections.sparkops.inference.plugins.module_utils._snapshot_errors import DistributeError, attempts_label, node_name, stderr_tail
from ansible_collections.sparkops.inference.plugins.module_utils._snapshot_plan import TOPOLOGIES, Plan, make_plan, parallel
from ansible_collections.sparkops.inference.plugins.module_utils._snapshot_result import Result
from ansible_collections.sparkops.inference.plugins.module_utils._snapshot_scheduler import Pipeline, with_retries
from ansible_collections.sparkops.inference.plugins.module_utils._snapshot_transport import METADATA_OPTIONS, Transport

# Sent in this order, each by its own rsync: a ref only appears once the snapshot it names is there.
METADATA_DIRS = ("snapshots", "refs")


def sync_metadata(
    plan: Plan,
    transport: Transport,
    targets: t.Sequence[str],
    *,
    dry_run: bool = False,
    retries: int = 3,
    runner: Runner = run_command,
    retry_delay: float = 2.0,
    sleep: t.Callable[[float], None] = time.sleep,
) -> dict[str, list[str]]:
    """rsync ``snapshots/`` then ``refs/`` (those the head has) from the head to each of ``targets`` (all at once);
    per target, the changes rsync itemized (with ``dry_run``, those it would make)."""
    dirs = [name for name in METADATA_DIRS if os.path.isdir(transport.path(None, f"{plan.repo_dir}/{name}"))]
    options = [*METADATA_OPTIONS, "--dry-run"] if dry_run else list(METADATA_OPTIONS)

    def sync(target: str) -> list[str]:
        changes: list[str] = []
        dest = transport.path(target, f"{plan.repo_dir}/")
        for name in dirs:
            path = transport.path(None, f"{plan.repo_dir}/{name}")
            # Over stream 0's connection to the target when the blobs left one open (else ssh connects directly).
            argv = transport.rsync_argv(None, target, options, [path], dest, 0)
            rc, out, err, attempts = with_retries(argv, runner, retries, retry_delay, sleep)
            if rc != 0:
                link = f"{node_name(None)} -> {target}"
                raise DistributeError(f"cannot send {name}/ on {link}: rsync failed ({attempts_label(attempts)}), rc {rc}: {stderr_tail(err)}")
            changes += [line for line in out.splitlines() if line.strip()]
        return changes

    return parallel(sync, targets)


def distribute(
    repo_dir: str,
    targets: t.Sequence[str],
    transport: Transport,
    *,
    topology: str = "chain",
    streams: int = 4,
    retries: int = 3,
    bwlimit_kbps: int = 0,
    cut_through: bool = True,
    check_mode: bool = False,
    runner: Runner = run_command,
    retry_delay: float = 2.0,
    clock: t.Callable[[], float] = time.monotonic,
    sleep: t.Callable[[float], None] = time.sleep,
) -> Result:
    """Bring ``repo_dir`` (blobs, then snapshots and refs) from the head to the same path on every target.

    In check mode only the plan is made, and the metadata of the targets that need no blob is compared with a
    ``--dry-run`` rsync. Raises :class:`DistributeError` (carrying the result so far) on bad arguments or a failure.
    """
    if not os.path.isabs(repo_dir):
        raise DistributeError(f"repo_dir must be an absolute path, not {repo_dir!r}")
    repo_dir = os.path.normpath(repo_dir)
    if not targets:
        raise DistributeError("targets is empty: there is nowhere to send the model")
    duplicates = sorted({target for target in targets if targets.count(target) > 1})
    if duplicates:
        raise DistributeError(f"targets are listed more than once: {', '.join(duplicates)}")
    if topology not in TOPOLOGIES:
        raise DistributeError(f"topology must be one of {', '.join(TOPOLOGIES)}, not {topology!r}")
    if streams < 1:
        raise DistributeError(f"streams must be at least 1, not {streams}")
    if retries < 0:
        raise DistributeError(f"retries must be at least 0, not {retries}")

    start = clock()
    result = Result(make_plan(repo_dir, targets, topology, transport, runner), streams, check_mode)
    plan = result.plan
    try:
        if check_mode:
            # A target that needs blobs changes anyway (and may lack the folder a dry run needs).
            ready = [target for target in targets if not plan.needed(target)]
            result.metadata = sync_metadata(plan, transport, ready, dry_run=True, retries=retries, runner=runner, retry_delay=retry_delay, sleep=sleep)
        else:
            _make_blob_dirs(plan, transport, runner)
            pipeline = Pipeline(
                plan,
                transport,
                streams=streams,
                retries=retries,
                bwlimit_kbps=bwlimit_kbps,
                cut_through=cut_through,
                runner=runner,
                retry_delay=retry_delay,
                clock=clock,
                sleep=sleep,
            )
            try:
                pipeline.run()
                result.transfers = sorted(pipeline.transfers, key=lambda x: (x.started, x.finished))
                result.relay_failures = list(pipeline.relay_failures)
                if pipeline.error is not None:
                    raise DistributeError(pipeline.error)
                result.metadata = sync_metadata(plan, transport, targets, retries=retries, runner=runner, retry_delay=retry_delay, sleep=sleep)
            finally:
                _teardown(transport, runner)
    except DistributeError as exc:
        result.seconds = clock() - start
        raise DistributeError(str(exc), result) from exc
    result.seconds = clock() - start
    return result


def _teardown(transport: Transport, runner: Runner) -> None:
    """Run the transport's teardown: its batches one after the other, each batch's commands at once (failures ignored)."""
    for batch in transport.teardown():
        with ThreadPoolExecutor(max_workers=len(batch)) as pool:
            list(pool.map(runner, batch))


def _make_blob_dirs(plan: Plan, transport: Transport, runner: Runner) -> None:
    """``mkdir -p <repo_dir>/blobs`` on every target that needs a blob (one that needs none has it already)."""

    def mkdir(target: str) -> None:
        rc, _out, err = runner(transport.run_argv(target, ["mkdir", "-p", transport.path(target, plan.blobs_dir)]))
        if rc != 0:
            raise DistributeError(f"cannot create {plan.blobs_dir} on {target}: rc {rc}: {stderr_tail(err)}")

    parallel(mkdir, [target for target in plan.targets if plan.needed(target)])
